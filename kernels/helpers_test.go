package kernels

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"pagoda/gguf"
)

// forEachImpl runs f once per available implementation (generic included),
// as a subtest named after it; under the race detector, once, on the
// implementation in use (raceEnabled).
func forEachImpl(t *testing.T, f func(t *testing.T, k *impl)) {
	t.Helper()
	ks := implementations()
	if raceEnabled {
		ks = []*impl{def}
	}
	for _, k := range ks {
		t.Run(k.name, func(t *testing.T) { f(t, k) })
	}
}

func newRand(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15)) }

// randVec returns n values, normally distributed with the given scale,
// with a few outliers so that block maxima vary.
func randVec(r *rand.Rand, n int, scale float64) []float32 {
	v := make([]float32, n)
	for i := range v {
		x := r.NormFloat64() * scale
		if r.IntN(50) == 0 {
			x *= 6
		}
		v[i] = float32(x)
	}
	return v
}

// quantWeight builds a random rows×cols weight of type t with gguf's
// reference quantizer and returns it with its dequantized values (rows,
// cols).
func quantWeight(t *testing.T, r *rand.Rand, typ gguf.Type, rows, cols int) (Weight, []float32) {
	t.Helper()
	src := randVec(r, rows*cols, 0.5)
	data, err := gguf.Quantize(typ, src)
	if err != nil {
		t.Fatalf("quantize %v: %v", typ, err)
	}
	deq := make([]float32, rows*cols)
	if err := gguf.Dequantize(typ, data, deq); err != nil {
		t.Fatalf("dequantize %v: %v", typ, err)
	}
	w := Weight{Type: typ, Data: data, Rows: rows, Cols: cols}
	if err := w.Validate(); err != nil {
		t.Fatal(err)
	}
	return w, deq
}

// forEachWideWeight runs f as a subtest per weight type of allWeightTypes
// on a random weight of rows rows at the type's widest tested width, with
// its dequantized values. The weights and f's draws come from r, in turn.
func forEachWideWeight(t *testing.T, r *rand.Rand, rows int, f func(t *testing.T, r *rand.Rand, w Weight, deq []float32)) {
	t.Helper()
	for _, tc := range allWeightTypes {
		cols := tc.cols[len(tc.cols)-1]
		t.Run(tc.typ.String(), func(t *testing.T) {
			w, deq := quantWeight(t, r, tc.typ, rows, cols)
			f(t, r, w, deq)
		})
	}
}

// dequantAct returns the float values a converted activation row stands
// for (the exact multiplicand of the integer dot products).
func dequantAct(kind actKind, a *actRow, cols int) []float32 {
	out := make([]float32, cols)
	switch kind {
	case actF32, actF16, actBF16:
		copy(out, a.f)
	default:
		bl := kind.block()
		for i := range cols {
			out[i] = a.d[i/bl] * float32(a.qs[i])
		}
	}
	return out
}

// closeTo reports |got−want| ≤ tol.
func closeTo(got, want, tol float64) bool { return math.Abs(got-want) <= tol }

// allWeightTypes are the weight types MatMul supports, with column counts
// to sweep.
var allWeightTypes = []struct {
	typ  gguf.Type
	cols []int
}{
	{gguf.F32, []int{1, 7, 8, 9, 33, 172}},
	{gguf.F16, []int{1, 8, 15, 64, 100}},
	{gguf.BF16, []int{1, 8, 15, 64, 100}},
	{gguf.Q4_0, []int{32, 64, 96, 576}},
	{gguf.Q4_1, []int{32, 64, 96, 576}},
	{gguf.Q5_0, []int{32, 64, 96, 576}},
	{gguf.Q5_1, []int{32, 64, 96, 576}},
	{gguf.Q8_0, []int{32, 64, 96, 576}},
	{gguf.Q2_K, []int{256, 512, 768}},
	{gguf.Q3_K, []int{256, 512, 768}},
	{gguf.Q4_K, []int{256, 512, 768}},
	{gguf.Q5_K, []int{256, 512, 768}},
	{gguf.Q6_K, []int{256, 512, 768}},
}

// scaleOffsets returns the byte offsets of a block's f16 scales.
func scaleOffsets(typ gguf.Type) []int {
	switch typ {
	case gguf.Q4_0, gguf.Q5_0, gguf.Q8_0:
		return []int{0}
	case gguf.Q4_1, gguf.Q5_1, gguf.Q4_K, gguf.Q5_K:
		return []int{0, 2}
	case gguf.Q2_K:
		return []int{80, 82}
	case gguf.Q3_K:
		return []int{108}
	case gguf.Q6_K:
		return []int{208}
	case gguf.MXFP4:
		return nil // an E8M0 byte: random like the quants
	}
	panic(typ)
}

// rawBlocks returns rows×cols of typ with random bytes (raw, not a
// quantizer's output, so that every bit pattern of the quants occurs) and
// f16 scales drawn by scale, starting off bytes into a larger buffer so
// that rows are misaligned.
func rawBlocks(r *rand.Rand, typ gguf.Type, rows, cols, off int, scale func() float32) Weight {
	bs, bl := typ.TypeSize(), typ.BlockSize()
	n := rows * cols / bl
	buf := make([]byte, off+n*bs+7)
	for i := range buf {
		buf[i] = byte(r.Uint32())
	}
	data := buf[off : off+n*bs]
	for b := range n {
		for _, o := range scaleOffsets(typ) {
			binary.LittleEndian.PutUint16(data[b*bs+o:], F32ToF16(scale()))
		}
	}
	return Weight{Type: typ, Data: data, Rows: rows, Cols: cols}
}

// fuzzSameMatMul runs checkSameMatMul for w and x on every accelerated
// implementation, each on its own 2-thread pool; with needGEMM only on
// those with a tiled kernel for w.Type. It is the body of the GEMM fuzzers.
func fuzzSameMatMul(t *testing.T, w Weight, x []float32, n int, needGEMM bool) {
	t.Helper()
	for _, k := range implementations() {
		if k == generic || needGEMM && k.gemm[w.Type] == nil {
			continue
		}
		p := newPool(2, k)
		checkSameMatMul(t, k, p, w, x, n)
		p.Close()
	}
}

// checkExtremeActivations compares k's matmul of types with the generic
// one on six activation rows of cols values that make blocks with d = 0,
// saturated quants and wide scale ratios: zero, one spike, alternating
// extremes, tiny, huge, and a last row that fill writes.
func checkExtremeActivations(t *testing.T, k *impl, seed uint64, cols int, types []gguf.Type, fill func(r *rand.Rand, row []float32)) {
	t.Helper()
	p := newPool(2, k)
	defer p.Close()
	r := newRand(seed)
	x := make([]float32, 6*cols)
	x[cols+5] = 3e4       // row 1: one spike
	for i := range cols { // row 2: alternating extremes
		x[2*cols+i] = float32(math.Ldexp(1, i%60-30))
	}
	copy(x[3*cols:], randVec(r, cols, 1e-6))
	copy(x[4*cols:], randVec(r, cols, 6e4))
	fill(r, x[5*cols:])
	for _, typ := range types {
		t.Run(typ.String(), func(t *testing.T) {
			w := rawBlocks(r, typ, 13, cols, 0, scaleDists["wide"](r))
			checkSameMatMul(t, k, p, w, x, 6)
		})
	}
}

// benchCase is one kernel call of a benchmark table; bytes is what it
// reads and writes (b.SetBytes).
type benchCase struct {
	name  string
	bytes int
	run   func(k *impl)
}

// benchEachImpl runs every case on every implementation, as
// sub-benchmarks named implementation/case.
func benchEachImpl(b *testing.B, cases []benchCase) {
	for _, k := range implementations() {
		for _, c := range cases {
			b.Run(k.name+"/"+c.name, func(b *testing.B) {
				b.SetBytes(int64(c.bytes))
				for b.Loop() {
					c.run(k)
				}
			})
		}
	}
}

// sweepGEMM compares every accelerated implementation's tiled matmul of
// types with the generic one, on 1 and 3 threads and every scale
// distribution (subtests type/dist/Nthreads, seeded by typ·seedMul +
// threads): checkGEMMGrid over rows, cols(block size) and ns, with raw
// weights misaligned by rows%misalign bytes. Types without a tiled kernel
// on an implementation are left out there.
func sweepGEMM(t *testing.T, types []gguf.Type, seedMul uint64, misalign int, rows []int, cols func(bl int) []int, ns []int) {
	forEachAccel(t, func(t *testing.T, k *impl) {
		for _, threads := range []int{1, 3} {
			p := newPool(threads, k)
			defer p.Close()
			for _, typ := range types {
				if k.gemm[typ] == nil {
					continue
				}
				for dist, mk := range scaleDists {
					t.Run(fmt.Sprintf("%v/%s/%dthreads", typ, dist, threads), func(t *testing.T) {
						r := newRand(uint64(typ)*seedMul + uint64(threads))
						checkGEMMGrid(t, k, p, r, func(rows, cols int) Weight {
							return rawBlocks(r, typ, rows, cols, rows%misalign, mk(r))
						}, rows, cols(typ.BlockSize()), ns)
					})
				}
			}
		}
	})
}
