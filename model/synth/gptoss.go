package synth

import (
	"math"

	"pagoda/gguf"
)

// gpt-oss as llama.cpp's converter writes it (conversion/gpt_oss.py,
// GptOssModel, on TextModel's keys): the base keys with key_length (the
// config's head_dim), YaRN RoPE scaling (rope_scaling: factor 32,
// original_max_position_embeddings 4096, beta_fast 32, beta_slow 1),
// attention.sliding_window and expert_feed_forward_length; per layer the
// attention with biases and sinks, post_attention_norm before the
// mixture, a router with a bias and the experts in MXFP4 (repacked from
// the checkpoint's own MXFP4 blocks, whatever the output type) with F32
// biases (gate_up_proj_bias split into gate and up).

// gpt-oss's RoPE scaling (its config.json's rope_scaling).
const (
	gptossYaRNFactor  = 32
	gptossYaRNOrigCtx = 4096
	gptossBetaFast    = 32
	gptossBetaSlow    = 1
)

// gptossMetadata writes the keys the base ones lack (expert keys follow
// in addMetadata).
func gptossMetadata(k keys, s Shape) {
	textMetadata(k, s)
	k.w.AddKV(s.Arch+".rope.scaling.type", "yarn")
	k.f32("rope.scaling.factor", gptossYaRNFactor)
	k.u32("rope.scaling.original_context_length", gptossYaRNOrigCtx)
	k.f32("rope.scaling.yarn_beta_fast", gptossBetaFast)
	k.f32("rope.scaling.yarn_beta_slow", gptossBetaSlow)
}

// gptossAttention appends the attention's biases and sinks (after the
// matrices attention wrote). The sinks are drawn with std 1: logits of
// the scores' order, so that they take a visible share of each softmax.
func (b *layerTensors) gptossAttention() {
	s := b.s
	q, kv := s.Heads*s.HeadDim(), s.KVHeads*s.HeadDim()
	b.bias("attn_q", q)
	b.bias("attn_k", kv)
	b.bias("attn_v", kv)
	b.bias("attn_output", s.Dim)
	b.ts = append(b.ts, tensor{name: b.p + "attn_sinks.weight", dims: []int{s.Heads}, std: 1})
}

// gptossFeedForward appends the mixture: post_attention_norm, the router
// (F32) and its bias, the MXFP4 experts and their F32 biases. The gate
// and up biases are drawn wide (std 3) so that the clamps of the
// activation (gate ≤ 7, |up| ≤ 7) are reached at the tiny shapes.
func (b *layerTensors) gptossFeedForward() {
	s := b.s
	e, ff := s.Experts, s.ExpertHiddenDim
	b.norm("post_attention_norm", s.Dim)
	b.ts = append(b.ts,
		tensor{name: b.p + "ffn_gate_inp.weight", dims: []int{s.Dim, e}, std: routerStd(s.Dim), f32: true},
		tensor{name: b.p + "ffn_gate_inp.bias", dims: []int{e}, std: std},
		tensor{name: b.p + "ffn_gate_exps.weight", dims: []int{s.Dim, ff, e}, std: std, mxfp4: true},
		tensor{name: b.p + "ffn_gate_exps.bias", dims: []int{ff, e}, std: 3, f32: true},
		tensor{name: b.p + "ffn_up_exps.weight", dims: []int{s.Dim, ff, e}, std: std, mxfp4: true},
		tensor{name: b.p + "ffn_up_exps.bias", dims: []int{ff, e}, std: 3, f32: true},
		tensor{name: b.p + "ffn_down_exps.weight", dims: []int{ff, s.Dim, e}, std: gptossDownStd(s.Layers), mxfp4: true},
		tensor{name: b.p + "ffn_down_exps.bias", dims: []int{s.Dim, e}, std: std, f32: true})
}

// gptossDownStd keeps the experts' outputs near the residual's scale: the
// activations reach |x·σ(1.702x)·(y+1)| ≈ 56 where the biases clamp.
func gptossDownStd(layers int) float64 { return std / math.Sqrt(2*float64(layers)) / 8 }

// fillMXFP4 draws MXFP4 blocks directly (DrawDirect): normal values from
// r (Box–Muller) quantized by gguf's MXFP4 quantizer, a chunk at a time.
func fillMXFP4(sd float64, r *rng, dst []byte) error {
	n := len(dst) / gguf.MXFP4.TypeSize() * gguf.MXFP4.BlockSize()
	x := make([]float32, n)
	for i := 0; i < n; i += 2 {
		u1 := (float64(r.next()>>11) + 0.5) / (1 << 53)
		u2 := float64(r.next()>>11) / (1 << 53)
		rad := math.Sqrt(-2*math.Log(u1)) * sd
		x[i], x[i+1] = float32(rad*math.Cos(2*math.Pi*u2)), float32(rad*math.Sin(2*math.Pi*u2))
	}
	q, err := gguf.Quantize(gguf.MXFP4, x)
	copy(dst, q)
	return err
}
