package kernels

import (
	"bytes"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"pagoda/gguf"
)

// forEachAccel runs f for every accelerated implementation (none with the
// noasm tag or on CPUs without the features).
//
// Implementations this machine or build cannot run get a subtest that
// skips with the reason (as Go's cryptotest does), so that `go test -v`
// shows what was not exercised instead of running nothing silently.
func forEachAccel(t *testing.T, f func(t *testing.T, k *impl)) {
	t.Helper()
	for _, k := range implementations() {
		if k != generic {
			t.Run(k.name, func(t *testing.T) { f(t, k) })
		}
	}
	skipUnavailable(t)
}

// skipUnavailable adds a skipped subtest per accelerated implementation
// that cannot run here.
func skipUnavailable(t *testing.T) {
	t.Helper()
	un := unavailable()
	for _, name := range slices.Sorted(maps.Keys(un)) {
		t.Run(name, func(t *testing.T) { t.Skipf("%s: %s", name, un[name]) })
	}
}

// TestImplementations reports which kernel implementations the tests of
// this package exercise on this machine and which they cannot (`make test`
// prints it).
func TestImplementations(t *testing.T) {
	var ran []string
	for _, k := range implementations() {
		ran = append(ran, k.name)
	}
	un := unavailable()
	var skipped []string
	for _, name := range slices.Sorted(maps.Keys(un)) {
		skipped = append(skipped, name+" ("+un[name]+")")
	}
	if len(skipped) == 0 {
		skipped = []string{"none"}
	}
	t.Logf("kernel implementations tested: %s; not tested here: %s", strings.Join(ran, ", "), strings.Join(skipped, ", "))
	if len(ran) == 0 || ran[len(ran)-1] != "generic" {
		t.Fatalf("the generic reference is not among the implementations: %v", ran)
	}
}

// blockTypes32 are the weight types with tiled accelerated kernels.
var blockTypes32 = []gguf.Type{gguf.Q4_0, gguf.Q4_1, gguf.Q8_0}

// scaleDists are the distributions of block scales the equality tests draw
// from: ordinary ones, and ones spanning the whole f16 range with signs and
// zeros, where float rounding is most delicate.
var scaleDists = map[string]func(r *rand.Rand) func() float32{
	"normal": func(r *rand.Rand) func() float32 {
		return func() float32 { return float32(r.NormFloat64() * 0.01) }
	},
	"wide": func(r *rand.Rand) func() float32 {
		return func() float32 {
			if r.IntN(8) == 0 {
				return 0
			}
			v := float32(math.Ldexp(1+r.Float64(), r.IntN(40)-24))
			if r.IntN(2) == 0 {
				v = -v
			}
			return v
		}
	},
}

// checkSameMatMul compares k's pooled MatMul with the generic serial one
// bit for bit, with NaN guards around dst.
func checkSameMatMul(t *testing.T, k *impl, p *Pool, w Weight, x []float32, n int) {
	t.Helper()
	want := make([]float32, n*w.Rows)
	matMulSerial(generic, want, w, x, n)
	const guard = 5
	buf := make([]float32, n*w.Rows+2*guard)
	for _, w := range []Weight{w, pack(k, w)} {
		checkMatMulInto(t, k, p, w, x, n, buf, guard, want)
	}
}

// checkMatMulInto runs k's MatMul into buf between guards and compares.
func checkMatMulInto(t *testing.T, k *impl, p *Pool, w Weight, x []float32, n int, buf []float32, guard int, want []float32) {
	t.Helper()
	for i := range buf {
		buf[i] = float32(math.NaN())
	}
	got := buf[guard : guard+n*w.Rows]
	p.MatMul(got, w, x, n)
	for i := range guard {
		if !math.IsNaN(float64(buf[i])) || !math.IsNaN(float64(buf[len(buf)-1-i])) {
			t.Fatalf("%s wrote outside dst", k.name)
		}
	}
	for i := range want {
		if !sameFloat(got[i], want[i]) {
			t.Fatalf("%s (packed %v): token %d row %d: %v (%#x), generic %v (%#x)", k.name, w.packed != nil, i/w.Rows, i%w.Rows,
				got[i], math.Float32bits(got[i]), want[i], math.Float32bits(want[i]))
		}
	}
}

// TestGEMM32SameAsGeneric sweeps rows (tails of the 4-row groups), columns,
// activation rows (tails of the tiles), misaligned weights and scale
// distributions.
func TestGEMM32SameAsGeneric(t *testing.T) {
	sweepGEMM(t, blockTypes32, 7, 4, []int{1, 2, 3, 4, 5, 7, 9, 67},
		func(int) []int { return []int{32, 64, 96, 320} }, []int{0, 1, 2, 3, 4, 5, 6, 8, 9, 17})
}

// TestGEMM32Large checks a model-sized shape: many row groups and tasks.
func TestGEMM32Large(t *testing.T) {
	forEachAccelType(t, blockTypes32, 11, func(t *testing.T, k *impl, p *Pool, r *rand.Rand, typ gguf.Type) {
		w := rawBlocks(r, typ, 1000, 576, 1, scaleDists["normal"](r))
		checkSameMatMul(t, k, p, w, randVec(r, 7*576, 1), 7)
	})
}

// forEachAccelType runs body for every accelerated implementation (with a
// 2-thread pool and a random source seeded with seed, shared by its
// subtests in order) and every type of types, one subtest each.
func forEachAccelType(t *testing.T, types []gguf.Type, seed uint64, body func(t *testing.T, k *impl, p *Pool, r *rand.Rand, typ gguf.Type)) {
	forEachAccel(t, func(t *testing.T, k *impl) {
		p := newPool(2, k)
		defer p.Close()
		r := newRand(seed)
		for _, typ := range types {
			t.Run(typ.String(), func(t *testing.T) { body(t, k, p, r, typ) })
		}
	})
}

// TestGEMM32ExtremeActivations: zero rows, single spikes and huge values
// make blocks with d = 0, saturated quants and wide scale ratios.
func TestGEMM32ExtremeActivations(t *testing.T) {
	forEachAccel(t, func(t *testing.T, k *impl) {
		checkExtremeActivations(t, k, 12, 128, blockTypes32, func(r *rand.Rand, row []float32) {
			copy(row, randVec(r, len(row), 1))
		})
	})
}

// FuzzGEMM32 compares the accelerated kernels with the generic ones on
// arbitrary weight bytes and activations.
func FuzzGEMM32(f *testing.F) {
	f.Add(uint8(0), uint8(3), uint8(2), uint64(1), []byte{1, 2, 3})
	f.Add(uint8(2), uint8(9), uint8(5), uint64(99), []byte{0xff, 0x7b, 0x00, 0x80})
	f.Fuzz(func(t *testing.T, ti, rows8, n8 uint8, seed uint64, raw []byte) {
		fuzzRawGEMM(t, blockTypes32, 7, false, ti, rows8, n8, seed, raw)
	})
}

// fuzzRawGEMM is the body of FuzzGEMM32 and FuzzGEMM5KQ23: a weight of
// one of types (by ti), 1 to 11 rows and 1 to 4 blocks wide, whose scales
// and quants start with the fuzzer's bytes, times n < maxN activation
// rows of a random magnitude, against the generic kernels (needGEMM: only
// implementations with a GEMM for the type).
func fuzzRawGEMM(t *testing.T, types []gguf.Type, maxN int, needGEMM bool, ti, rows8, n8 uint8, seed uint64, raw []byte) {
	t.Helper()
	typ := types[int(ti)%len(types)]
	rows, n := 1+int(rows8)%11, int(n8)%maxN
	r := newRand(seed)
	cols := typ.BlockSize() * (1 + r.IntN(4))
	w := rawBlocks(r, typ, rows, cols, int(seed%5), scaleDists["wide"](r))
	copy(w.Data, raw) // fuzzer-chosen scales and quants
	x := randVec(r, n*cols, math.Ldexp(1, r.IntN(30)-15))
	fuzzSameMatMul(t, w, x, n, needGEMM)
}

// sameFloat reports bit equality, treating all NaNs as equal: NaN payloads
// depend on operand order, which the contract does not fix.
func sameFloat(a, b float32) bool {
	return math.Float32bits(a) == math.Float32bits(b) || a != a && b != b
}

// TestFMARoundsOnce pins the property the accelerated kernels rely on.
func TestFMARoundsOnce(t *testing.T) {
	if !fmaRoundsOnce() {
		t.Fatal("fma32 does not round once: the accelerated kernels' FMA would differ from it")
	}
}

// TestPackUsed checks that Pack makes the packed copy for the types with
// packed kernels (so that checkSameMatMul exercises them) and that the
// layout puts row 5's second block where the kernels read it.
func TestPackUsed(t *testing.T) {
	forEachAccel(t, func(t *testing.T, k *impl) {
		for _, typ := range blockTypes32 {
			g := k.gemm[typ]
			if g == nil || g.packed == nil {
				continue
			}
			r := newRand(uint64(typ))
			w := rawBlocks(r, typ, 6, 64, 0, scaleDists["normal"](r))
			pw := pack(k, w)
			size := typ.TypeSize()
			if len(pw.packed) != 2*2*4*size {
				t.Fatalf("%v: packed %d bytes, want %d", typ, len(pw.packed), 2*2*4*size)
			}
			hdr := 2
			if typ == gguf.Q4_1 {
				hdr = 4
			}
			src := w.Data[5*w.RowBytes()+size:][:size]
			rec := pw.packed[(1*2+1)*4*size:][:4*size] // group 1, block 1; row 5 is its row 1
			if !bytes.Equal(rec[hdr:2*hdr], src[:hdr]) || !bytes.Equal(rec[4*hdr+16:4*hdr+32], src[hdr:hdr+16]) {
				t.Fatalf("%v: row 5 block 1 misplaced", typ)
			}
			if !bytes.Equal(rec[3*hdr:4*hdr], make([]byte, hdr)) {
				t.Fatalf("%v: padding row not zero", typ)
			}
		}
	})
}

// TestGEMM32ActBlocks covers the two-dimensional task split of long
// prefills (more activation rows than one task's block, see actBlock) and
// the conversion of the activations on every worker, packed or not.
func TestGEMM32ActBlocks(t *testing.T) {
	forEachAccel(t, func(t *testing.T, k *impl) {
		for _, threads := range []int{1, 2, 3} {
			p := newPool(threads, k)
			defer p.Close()
			for _, typ := range blockTypes32 {
				t.Run(fmt.Sprintf("%v/%dthreads", typ, threads), func(t *testing.T) {
					r := newRand(uint64(typ)*3 + uint64(threads))
					const cols = 8192
					w := rawBlocks(r, typ, 37, cols, 1, scaleDists["normal"](r))
					n := 2*k.gemm[typ].actBlock(cols) + 5
					checkSameMatMul(t, k, p, w, randVec(r, n*cols, 1), n)
				})
			}
		}
	})
}

// TestGEMMKActBlocks is TestGEMM32ActBlocks for the K-quants.
func TestGEMMKActBlocks(t *testing.T) {
	forEachAccel(t, func(t *testing.T, k *impl) {
		p := newPool(2, k)
		defer p.Close()
		for _, typ := range kTypes {
			if k.gemm[typ] == nil {
				continue
			}
			t.Run(typ.String(), func(t *testing.T) {
				r := newRand(uint64(typ))
				const cols = 8192
				w := rawBlocks(r, typ, 13, cols, 0, scaleDists["normal"](r))
				n := 2*k.gemm[typ].actBlock(cols) + 3
				checkSameMatMul(t, k, p, w, randVec(r, n*cols, 1), n)
			})
		}
	})
}

// checkGEMMGrid checks MatMul on k against the generic one for every
// weight shape of rows × cols (made by weight) and every token count of ns.
func checkGEMMGrid(t *testing.T, k *impl, p *Pool, r *rand.Rand, weight func(rows, cols int) Weight, rows, cols, ns []int) {
	t.Helper()
	for _, nr := range rows {
		for _, nc := range cols {
			w := weight(nr, nc)
			for _, n := range ns {
				checkSameMatMul(t, k, p, w, randVec(r, n*nc, 1), n)
			}
		}
	}
}
