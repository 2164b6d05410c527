package kernels

import (
	"fmt"
	"math"
	"testing"

	"pagoda/gguf"
)

// TestMoEBiases: gpt-oss's experts (MXFP4 weights, biases on gate, up and
// down, the clamped SwiGLU) through Pool.MoE equal every token alone
// through the separate kernels with the biases added where llama.cpp's
// ggml_add_id adds them, bit for bit, for every implementation, thread
// count and arithmetic; hidden 96 gives the MXFP4 dot an odd block count
// (its tail).
func TestMoEBiases(t *testing.T) {
	forEachImpl(t, func(t *testing.T, k *impl) {
		for _, fastW := range []bool{false, true} {
			t.Run(fmt.Sprintf("fast=%v", fastW), func(t *testing.T) { checkMoEBiases(t, k, fastW) })
		}
	})
}

func checkMoEBiases(t *testing.T, k *impl, fastW bool) {
	r := newRand(61)
	const dim, hidden, experts, kk = 128, 96, 6, 3
	m := newMoE(t, r, k, gguf.MXFP4, gguf.MXFP4, gguf.MXFP4, dim, hidden, experts, fastW)
	m.Act = GLUSwiGLUOAI
	for i := range m.Experts {
		e := &m.Experts[i]
		// wide enough that the clamps (gate ≤ 7, |up| ≤ 7) are reached
		e.GateBias, e.UpBias, e.DownBias = randVec(r, hidden, 8), randVec(r, hidden, 8), randVec(r, dim, 1)
	}
	for _, n := range fusedTokens() {
		x := randVec(r, n*dim, 1)
		ids, w := randomRoutes(r, n, kk, experts)
		b := &MoEBuffers{Dst: nanVec(n * dim), X: x, IDs: ids, Weights: w, K: kk}
		want := moeReference(k, m, b, n)
		for _, threads := range fusedThreads() {
			p := newPool(threads, k)
			p.MoE(m, b, n)
			p.Close()
			sameBits(t, fmt.Sprintf("n=%d/threads=%d", n, threads), b.Dst, want)
			b.Dst = nanVec(n * dim)
		}
	}
}

// TestSwiGLUOAI: x·σ(1.702x)·(y+1) with x = min(gate, 7), y = clamp(up,
// −7, 7), against float64 (within float32 rounding), the clamps exact.
func TestSwiGLUOAI(t *testing.T) {
	gate := []float32{-20, -7, -1, 0, 0.5, 3, 7, 7.5, 100, 2}
	up := []float32{0, 1, -8, 3, 100, -100, 6.5, -7, 1, -1}
	dst := make([]float32, len(gate))
	SwiGLUOAI(dst, gate, up)
	for i := range gate {
		x, y := math.Min(float64(gate[i]), 7), math.Max(-7, math.Min(float64(up[i]), 7))
		want := x / (1 + math.Exp(-1.702*x)) * (y + 1)
		if !closeTo(float64(dst[i]), want, 1e-6*math.Max(1, math.Abs(want))) {
			t.Errorf("swiglu_oai(%v, %v) = %v, want %v", gate[i], up[i], dst[i], want)
		}
	}
}
