package kernels

import (
	"bytes"
	"fmt"
	"math"
	"testing"
)

// TestQuantizeSameAsGeneric compares the accelerated activation quantizers
// with the generic ones field by field, on ordinary rows, rows with zero,
// tiny, huge and infinite blocks, and ties of the rounding.
func TestQuantizeSameAsGeneric(t *testing.T) {
	forEachAccel(t, func(t *testing.T, k *impl) {
		r := newRand(40)
		for _, kind := range []actKind{actQ8_0, actQ8_1, actQ8K} {
			for _, nb := range []int{1, 2, 3, 18, 48} {
				for _, sp := range []bool{false, true} {
					t.Run(fmt.Sprintf("kind%d/%dblocks/special=%v", kind, nb, sp), func(t *testing.T) {
						x := quantInput(r, nb*kind.block(), sp)
						if kind == actQ8K && sp {
							x[3], x[5] = 1e3, -1e3 // a tie of the largest magnitude: the first wins
							if len(x) > 300 {
								x[299], x[300] = -1e3, 1e3
							}
						}
						checkSameQuant(t, k, kind, x)
					})
				}
			}
		}
	})
}

// quantInput returns n activations; with special, blocks are zero, tiny,
// huge, infinite, or hold exact rounding ties.
func quantInput(r interface{ IntN(int) int }, n int, special bool) []float32 {
	rr := newRand(uint64(n))
	x := randVec(rr, n, 1)
	if !special {
		return x
	}
	for b := 0; b < n/32; b++ {
		blk := x[b*32 : (b+1)*32]
		switch r.IntN(6) {
		case 0:
			clear(blk)
		case 1:
			for i := range blk {
				blk[i] *= 1e-30
			}
		case 2:
			blk[r.IntN(32)] = float32(math.Inf(1 - 2*r.IntN(2)))
		case 3:
			for i := range blk { // q = x exactly when amax = 127: ties at .5
				blk[i] = float32(r.IntN(255)-127) + 0.5
			}
			blk[0] = 127
		case 4:
			blk[3] = 3e38
		}
	}
	return x
}

func checkSameQuant(t *testing.T, k *impl, kind actKind, x []float32) {
	t.Helper()
	var a, g actRows
	a.prepare(k, kind, x, 1, len(x))
	g.prepare(generic, kind, x, 1, len(x))
	for i := range g.qs {
		if a.qs[i] != g.qs[i] {
			t.Fatalf("q[%d] = %d, generic %d (x = %v)", i, a.qs[i], g.qs[i], x[i])
		}
	}
	for i := range g.bsums {
		if a.bsums[i] != g.bsums[i] {
			t.Fatalf("bsums[%d] = %d, generic %d", i, a.bsums[i], g.bsums[i])
		}
	}
	for b := range g.d {
		if !sameFloat(a.d[b], g.d[b]) {
			t.Fatalf("d[%d] = %v, generic %v", b, a.d[b], g.d[b])
		}
		if kind == actQ8_1 && !sameFloat(a.s[b], g.s[b]) {
			t.Fatalf("s[%d] = %v, generic %v", b, a.s[b], g.s[b])
		}
	}
}

// FuzzQuantize compares the quantizers on fuzzer-chosen float bits.
func FuzzQuantize(f *testing.F) {
	f.Add([]byte{0, 0, 0x80, 0x3f}, true)
	f.Fuzz(func(t *testing.T, raw []byte, q81 bool) {
		x := make([]float32, 256)
		for i := range x {
			if 4*i+4 <= len(raw) {
				x[i] = math.Float32frombits(uint32(raw[4*i]) | uint32(raw[4*i+1])<<8 | uint32(raw[4*i+2])<<16 | uint32(raw[4*i+3])<<24)
			} else {
				x[i] = float32(i) - 31.5
			}
			if x[i] != x[i] {
				x[i] = 0 // NaN activations quantize to garbage in both (see doc)
			}
		}
		kinds := []actKind{actQ8_0, actQ8K}
		if q81 {
			kinds[0] = actQ8_1
		}
		for _, k := range implementations() {
			if k != generic {
				for _, kind := range kinds {
					checkSameQuant(t, k, kind, x)
				}
			}
		}
	})
}

// TestRecordsSameAsGeneric: the accelerated record writers produce the
// generic records byte for byte, for both kinds and every bias.
func TestRecordsSameAsGeneric(t *testing.T) {
	forEachAccel(t, func(t *testing.T, k *impl) {
		r := newRand(41)
		for _, kind := range []actKind{actQ8_0, actQ8_1} {
			for _, bias := range []int32{0, 8, 16, 128} {
				x := quantInput(r, 7*32, true)
				var a, g actRows
				a.prepare(k, kind, x, 3, 7*32/3/32*32)
				g.prepare(k, kind, x, 3, 7*32/3/32*32)
				a.records32(k, bias)
				g.records32(generic, bias)
				for i := range g.rec {
					if a.rec[i] != g.rec[i] {
						t.Fatalf("kind %d bias %d: byte %d = %#x, generic %#x", kind, bias, i, a.rec[i], g.rec[i])
					}
				}
			}
		}
	})
}

// TestFastRecordsSameAsGeneric: each implementation's record kernel
// writes the bytes of the formats' Go writers, every bias and the
// minimum's float x, extreme quants included.
func TestFastRecordsSameAsGeneric(t *testing.T) {
	forEachAccel(t, func(t *testing.T, k *impl) {
		if k.fastRecords == nil {
			t.Skip("no record kernel")
		}
		r := newRand(95)
		for _, nb := range []int{1, 3, 18} {
			row := actRow{qs: make([]int8, 32*nb), d: randVec(r, nb, 1)}
			for i := range row.qs {
				row.qs[i] = int8(r.IntN(256) - 128)
			}
			row.qs[0], row.qs[1] = -128, 127
			for _, f := range []*fastRecords{recordsBias8, recordsBias16, recordsBias128, recordsMin} {
				want, got := make([]byte, nb*fastRec), make([]byte, nb*fastRec)
				f.write(want, &row)
				k.writeFast(f, got, &row)
				if !bytes.Equal(got, want) {
					t.Fatalf("%d blocks, bias %d min %v: records differ\n got %x\nwant %x", nb, f.bias, f.min, got, want)
				}
			}
		}
	})
}
