//go:build amd64 && !noasm

package kernels

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"pagoda/gguf"
)

// The previous fast path of MXFP4, kept here to compare the native kernels
// with: Q8_0's fast kernels on a copy of the weights converted to Q8_0
// blocks (34 bytes per block), made only when every scale is a half.
var fastMXFP4Q8 = fastTraits{act: actQ8_0, block: 32, rows: repackRows, groupBlock: repackRows * 34,
	interleave: interleaveMXFP4Q8, dot: dotMXFP4FGeneric, rec: recordsBias128}

// interleaveMXFP4Q8 writes a group-block of Q8_0's interleaved layout from
// MXFP4 blocks, each converted to a Q8_0 block first.
func interleaveMXFP4Q8(dst []byte, src [][]byte) {
	var q8 [repackRows][34]byte
	rows := make([][]byte, len(src))
	for i, blk := range src {
		d := F32ToF16(gguf.E8M0Half(blk[0]))
		q8[i][0], q8[i][1] = byte(d), byte(d>>8)
		for j, q := range blk[1:17] {
			q8[i][2+j] = byte(gguf.KValuesMXFP4[q&15])
			q8[i][18+j] = byte(gguf.KValuesMXFP4[q>>4])
		}
		rows[i] = q8[i][:]
	}
	interleaveQ8_0(dst, rows)
}

// mxfp4HalfScales reports whether every block scale of w is a half
// exactly (e in [104, 143]): the Q8_0 copy can hold it.
func mxfp4HalfScales(w Weight) bool {
	for b := 0; b < len(w.Data); b += 17 {
		if e := w.Data[b]; e < 104 || e > 143 {
			return false
		}
	}
	return true
}

// mxfp4Q8Impl returns k with the previous MXFP4 kernels (Q8_0's), or nil
// for an implementation without them.
func mxfp4Q8Impl(k *impl) *impl {
	q := *k
	q.name = k.name + "-q8"
	switch strings.TrimSuffix(k.name, "-vpshufb") {
	case "avx512":
		q.fast[gguf.MXFP4] = &blockGEMM{fast: &fastMXFP4Q8, pairs: true, tiles: accelTypes[gguf.Q8_0].avx512.fast.tiles}
	case "avx2":
		q.fast[gguf.MXFP4] = &blockGEMM{fast: &fastMXFP4Q8, tiles: accelTypes[gguf.Q8_0].avx2.fast.tiles}
	default:
		return nil
	}
	return &q
}

// mxfp4Q8 returns the MXFP4 weight w marked for the previous fast path:
// with the Q8_0 copy when its scales allow one.
func mxfp4Q8(w Weight) Weight {
	w.fast, w.packed, w.repacked = &fastMXFP4Q8, nil, nil
	if mxfp4HalfScales(w) {
		w.repacked = interleaveRows(w)
	}
	return w
}

// mxfp4Variants returns k and, for avx512, k with its other set of MXFP4
// kernels when this machine runs them (the VPSHUFB ones besides the
// VPERMB ones in use on a machine with AVX512_VBMI).
func mxfp4Variants(k *impl) []*impl {
	if k.name != "avx512" || !hasVBMI() {
		return []*impl{k}
	}
	other := *k
	other.name = k.name + "-vpshufb"
	other.fast[gguf.MXFP4] = mxfp4GEMM512(false)
	return []*impl{k, &other}
}

// mxfp4Reference returns the reference dot (dotMXFP4FGeneric) of every
// (token, row) of w and x, as MatMul lays out dst.
func mxfp4Reference(k *impl, w Weight, x []float32, n int) []float32 {
	var act actRows
	act.prepare(k, actQ8_0, x, n, w.Cols)
	rb := w.RowBytes()
	want := make([]float32, n*w.Rows)
	for tok := range n {
		for row := range w.Rows {
			want[tok*w.Rows+row] = dotMXFP4FGeneric(w.Data[row*rb:(row+1)*rb], &act.rows[tok])
		}
	}
	return want
}

// TestMXFP4NativeSameAsQ8: on every implementation, MXFP4's native fast
// kernels (its 17-byte interleaved copy) compute exactly what the previous
// path (Q8_0's kernels on a Q8_0 copy) and the reference dot compute, bit
// for bit, on quantized weights of several shapes (one group, pairs and
// an odd last group; 1 to 180 blocks) and 1 to 9 and 33 tokens, on two
// threads; nothing is written past dst. Both AVX-512 kernel sets (VPERMB,
// VPSHUFB) are checked where the machine runs both.
func TestMXFP4NativeSameAsQ8(t *testing.T) {
	forEachImpl(t, func(t *testing.T, k *impl) {
		for _, k := range mxfp4Variants(k) {
			t.Run(k.name, func(t *testing.T) { checkMXFP4SameAsQ8(t, k) })
		}
	})
}

func checkMXFP4SameAsQ8(t *testing.T, k *impl) {
	shapes := []struct{ rows, cols int }{{8, 32}, {16, 96}, {24, 1056}, {40, 2880}, {64, 5760}}
	tokens := []int{1, 2, 3, 4, 5, 6, 7, 8, 9, 33}
	if testing.Short() {
		shapes, tokens = shapes[:4], []int{1, 2, 5, 8, 9}
	}
	r := newRand(77)
	p := newPool(2, k)
	defer p.Close()
	old := mxfp4Q8Impl(k)
	var po *Pool
	if old != nil {
		po = newPool(2, old)
		defer po.Close()
	}
	for _, s := range shapes {
		data, err := gguf.Quantize(gguf.MXFP4, randVec(r, s.rows*s.cols, 0.5))
		if err != nil {
			t.Fatal(err)
		}
		w := Weight{Type: gguf.MXFP4, Data: data, Rows: s.rows, Cols: s.cols}
		nw, ow := fast(k, w), mxfp4Q8(w)
		if k.fast[gguf.MXFP4] != nil && len(nw.repacked) != len(w.Data) {
			t.Fatalf("%d×%d: interleaved copy of %d bytes, want %d", s.rows, s.cols, len(nw.repacked), len(w.Data))
		}
		if old != nil && ow.repacked == nil {
			t.Fatalf("%d×%d: quantized scales out of the Q8_0 copy's range", s.rows, s.cols)
		}
		for _, n := range tokens {
			t.Run(fmt.Sprintf("%dx%d/n%d", s.rows, s.cols, n), func(t *testing.T) {
				x := randVec(r, n*s.cols, 1)
				want := mxfp4Reference(k, w, x, n)
				if po != nil {
					prev := make([]float32, n*s.rows)
					po.MatMul(prev, ow, x, n)
					for i := range want {
						if math.Float32bits(prev[i]) != math.Float32bits(want[i]) {
							t.Fatalf("Q8_0 path: token %d row %d: %v, reference %v", i/s.rows, i%s.rows, prev[i], want[i])
						}
					}
				}
				buf := make([]float32, n*s.rows+8)
				for i := range buf {
					buf[i] = float32(math.NaN())
				}
				p.MatMul(buf[:n*s.rows], nw, x, n)
				for i, v := range buf[n*s.rows:] {
					if !math.IsNaN(float64(v)) {
						t.Fatalf("MatMul wrote past dst at %d", i)
					}
				}
				for i, v := range want {
					if got := buf[i]; math.Float32bits(got) != math.Float32bits(v) {
						t.Fatalf("token %d row %d: %v (%#x), want %v (%#x)", i/s.rows, i%s.rows,
							got, math.Float32bits(got), v, math.Float32bits(v))
					}
				}
			})
		}
	}
}

// TestMXFP4NativeEveryScale: the native kernels build every scale
// exactly, E8M0Half's subnormal 2^−128 and 2^−127 (e = 0, 1) and 2^127
// (e = 255) included, which the previous path left to the generic dot:
// a weight whose blocks take every e twice, times activations of
// ordinary, tiny and huge magnitudes (products that underflow into the
// subnormals or overflow to infinity), equals the reference dot (NaNs as
// NaNs) on one token and on four.
func TestMXFP4NativeEveryScale(t *testing.T) {
	forEachImpl(t, func(t *testing.T, k *impl) {
		for _, k := range mxfp4Variants(k) {
			t.Run(k.name, func(t *testing.T) { checkMXFP4EveryScale(t, k) })
		}
	})
}

func checkMXFP4EveryScale(t *testing.T, k *impl) {
	const rows, cols = 16, 1024
	r := newRand(78)
	w := rawBlocks(r, gguf.MXFP4, rows, cols, 0, nil)
	for b := range rows * cols / 32 {
		w.Data[17*b] = byte(b * 37) // every e twice (37 odd: a permutation of each 256)
	}
	w = fast(k, w)
	if k.fast[gguf.MXFP4] != nil && w.repacked == nil {
		t.Fatal("no interleaved copy")
	}
	p := newPool(2, k)
	defer p.Close()
	for _, scale := range []float64{1, 1e-36, 1e-30, 1e30, 1e34} {
		for _, n := range []int{1, 4} {
			x := randVec(r, n*cols, scale)
			want := mxfp4Reference(k, w, x, n)
			got := make([]float32, n*rows)
			p.MatMul(got, w, x, n)
			for i := range want {
				if !sameFloat(got[i], want[i]) {
					t.Fatalf("x scale %g, n %d: token %d row %d: %v (%#x), want %v (%#x)", scale, n, i/rows, i%rows,
						got[i], math.Float32bits(got[i]), want[i], math.Float32bits(want[i]))
				}
			}
		}
	}
}
