package kernels

import (
	"math/rand/v2"
	"testing"

	"pagoda/gguf"
)

// The fused-call benchmarks run one SmolLM2-135M layer's kernels (dim 576,
// hidden 1536, 9 query heads over 3 KV heads of 64, Q4_1 weights) on two
// threads, fused and as the separate kernels they replace, for one token
// (decode) and for 32 (a batch of decodes or a prefill chunk).

const (
	benchDim, benchHidden    = 576, 1536
	benchHeads, benchKVHeads = 9, 3
	benchHeadDim             = 64
)

var fusedBenchTokens = []int{1, 32}

func benchWeight(b *testing.B, r *rand.Rand, rows, cols int) Weight {
	data, err := gguf.Quantize(gguf.Q4_1, randVec(r, rows*cols, 0.5))
	if err != nil {
		b.Fatal(err)
	}
	return Weight{Type: gguf.Q4_1, Data: data, Rows: rows, Cols: cols}
}

func benchTokens(b *testing.B, f func(b *testing.B, n int)) {
	for _, n := range fusedBenchTokens {
		b.Run(map[int]string{1: "n=1", 32: "n=32"}[n], func(b *testing.B) { f(b, n) })
	}
}

// BenchmarkMLP: Pool.MLP against RMSNorm, MatMulN (gate, up), SwiGLU and
// MatMul (down).
func BenchmarkMLP(b *testing.B) {
	r := newRand(50)
	m := &MLP{Norm: randVec(r, benchDim, 1), Eps: 1e-5,
		Gate: benchWeight(b, r, benchHidden, benchDim), Up: benchWeight(b, r, benchHidden, benchDim),
		Down: benchWeight(b, r, benchDim, benchHidden)}
	p := NewPool(2)
	defer p.Close()
	benchTokens(b, func(b *testing.B, n int) {
		x := randVec(r, n*benchDim, 1)
		buf := &MLPBuffers{Dst: make([]float32, n*benchDim), X: x, Normed: make([]float32, n*benchDim),
			Gate: make([]float32, n*benchHidden), Up: make([]float32, n*benchHidden)}
		b.Run("fused", func(b *testing.B) {
			for b.Loop() {
				p.MLP(m, buf, n)
			}
		})
		b.Run("separate", func(b *testing.B) {
			outs := []MatMulOut{{buf.Gate, m.Gate}, {buf.Up, m.Up}}
			for b.Loop() {
				RMSNorm(buf.Normed, x, m.Norm, m.Eps)
				p.MatMulN(outs, buf.Normed, n)
				SwiGLU(buf.Gate, buf.Gate, buf.Up, benchHidden)
				p.MatMul(buf.Dst, m.Down, buf.Gate, n)
			}
		})
	})
}

// BenchmarkNormMatMulN: Pool.NormMatMulN (RMSNorm, then Q, K and V)
// against RMSNorm and MatMulN.
func BenchmarkNormMatMulN(b *testing.B) {
	r := newRand(51)
	kd := benchKVHeads * benchHeadDim
	wq, wk, wv := benchWeight(b, r, benchDim, benchDim), benchWeight(b, r, kd, benchDim), benchWeight(b, r, kd, benchDim)
	norm := randVec(r, benchDim, 1)
	p := NewPool(2)
	defer p.Close()
	benchTokens(b, func(b *testing.B, n int) {
		x, normed := randVec(r, n*benchDim, 1), make([]float32, n*benchDim)
		outs := []MatMulOut{{make([]float32, n*benchDim), wq}, {make([]float32, n*kd), wk}, {make([]float32, n*kd), wv}}
		b.Run("fused", func(b *testing.B) {
			for b.Loop() {
				p.NormMatMulN(outs, normed, x, norm, 1e-5, n)
			}
		})
		b.Run("separate", func(b *testing.B) {
			for b.Loop() {
				RMSNorm(normed, x, norm, 1e-5)
				p.MatMulN(outs, normed, n)
			}
		})
	})
}

// BenchmarkAttentionMatMul: Pool.AttentionMatMul against Attention and
// MatMul, n sequences decoding one token each at context 128.
func BenchmarkAttentionMatMul(b *testing.B) {
	r := newRand(52)
	wo := benchWeight(b, r, benchDim, benchDim)
	p := NewPool(2)
	defer p.Close()
	benchTokens(b, func(b *testing.B, n int) {
		ctx, newTok := make([]int, n), make([]int, n)
		for i := range n {
			ctx[i], newTok[i] = 128, 1
		}
		c := newAttnCaseHeads(r, KVF16, 16, benchHeads, benchKVHeads, benchHeadDim, ctx, newTok)
		dst := make([]float32, n*benchDim)
		b.Run("fused", func(b *testing.B) {
			for b.Loop() {
				p.AttentionMatMul(&c.att, c.kv, dst, wo)
			}
		})
		b.Run("separate", func(b *testing.B) {
			for b.Loop() {
				p.Attention(&c.att, c.kv)
				p.MatMul(dst, wo, c.att.Out, n)
			}
		})
	})
}
