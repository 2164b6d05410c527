package kernels

import (
	"math"
	"testing"
)

// TestExpKernelsSweep checks the vectorised exp (SiLU, SwiGLU, softmax's
// exponentials) of every implementation against the generic one on a
// dense sweep of [−200, 200] — through subnormal results, both
// saturations and the scale's two-step range — and on random bit
// patterns (NaN, infinities, subnormal inputs).
func TestExpKernelsSweep(t *testing.T) {
	const n = 1 << 16
	x := make([]float32, n)
	for i := range x {
		x[i] = -200 + 400*float32(i)/n
	}
	r := newRand(80)
	rnd := make([]float32, n)
	for i := range rnd {
		rnd[i] = math.Float32frombits(r.Uint32())
	}
	forEachAccel(t, func(t *testing.T, k *impl) {
		for _, in := range [][]float32{x, rnd} {
			up := randVec(r, n, 1)
			want, got := make([]float32, n), make([]float32, n)
			generic.silu(want, in)
			k.silu(got, in)
			checkSameF32(t, "silu", got, want)
			generic.swiGLU(want, in, up)
			k.swiGLU(got, in, up)
			checkSameF32(t, "swiGLU", got, want)
			copy(want, in)
			copy(got, in)
			for _, mx := range []float32{0, 50, -30} {
				ws, gs := generic.softmaxExp(want, mx), k.softmaxExp(got, mx)
				checkSameF32(t, "softmaxExp", got, want)
				if math.Float64bits(ws) != math.Float64bits(gs) && !(ws != ws && gs != gs) {
					t.Fatalf("softmaxExp sum %v, generic %v", gs, ws)
				}
			}
		}
	})
}

// BenchmarkVecOthers covers the vector kernels BenchmarkVec does not:
// the BF16 dot, scaling, multiplication, lane reduction and SiLU.
func BenchmarkVecOthers(b *testing.B) {
	const n = 4096
	r := newRand(33)
	x, y := randVec(r, n, 1), randVec(r, n, 1)
	h := make([]uint16, n)
	for i, v := range randVec(r, n, 1) {
		h[i] = F32ToBF16(v)
	}
	ones := make([]float32, n)
	for i := range ones {
		ones[i] = 1
	}
	lanes := randVec(r, 64*64, 1)
	out := make([]float32, 64)
	benchEachImpl(b, []benchCase{
		{"dotBF16", 6 * n, func(k *impl) { k.dotBF16(y, h) }},
		{"axpyBF16", 10 * n, func(k *impl) { k.axpyB16(x, 0.5, h) }},
		{"scaleF32", 8 * n, func(k *impl) { k.scaleF32(x, 1) }},
		{"mul", 12 * n, func(k *impl) { k.mul(x, ones) }},
		{"silu", 8 * n, func(k *impl) { k.silu(x, y) }},
		{"reduceLanes", 4 * 64 * 64, func(k *impl) { k.reduceLanes(out, lanes) }},
	})
}
