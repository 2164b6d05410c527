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

// fillMXFP4 draws MXFP4 blocks directly (DrawDirect), as fillDirect
// draws the other types: a block's largest |value| A (over sd) from the
// distribution of the largest |x| of 32 normals (Q8_0's table), its scale
// as gguf's quantizer sets it from sd·A (e = ⌊log2(sd·A)⌋ − 2 + 127), one
// random value at ±A and the others normal values within [−A, A] (16
// random bits each, drawn again outside), each coded as the quantizer codes it: the nearest
// doubled E2M1 value, the lower code of equals.
func fillMXFP4(sd float64, r *rng, dst []byte) error {
	amax, z := &formats[gguf.Q8_0].tables().amax, normals()
	var q [32]uint8
	for b := 0; b+17 <= len(dst); b += 17 {
		y := r.next()
		a := amax[uint8(y)]
		e := uint8(int(math.Floor(math.Log2(sd*float64(a)))) - 2 + 127)
		units := float32(sd) / gguf.E8M0Half(e) // doubled E2M1 units per std
		u, left := uint64(0), 0
		for j := 0; j < 32; {
			if left == 0 {
				u, left = r.next(), 4
			}
			v := z[uint16(u)]
			u, left = u>>16, left-1
			if v < -a || v > a { // drawn again: normal values within [−A, A]
				continue
			}
			q[j] = mxfp4Code(v * units)
			j++
		}
		ext := a
		if y>>63 == 1 {
			ext = -a
		}
		q[y>>8%32] = mxfp4Code(ext * units)
		blk := dst[b : b+17]
		blk[0] = e
		for j := range 16 {
			blk[1+j] = q[j] | q[j+16]<<4
		}
	}
	return nil
}

// mxfp4Code is the code of the doubled E2M1 value nearest x (gguf's
// bestMXFP4 with d = 1), the lower of equals: the magnitude m's code from
// ⌈2m⌉ (the midpoints of consecutive values are multiples of ½), 8 added
// for a negative x (a magnitude up to ½ is +0).
func mxfp4Code(x float32) uint8 {
	m := x
	if x < 0 {
		m = -x
	}
	k := min(int(math.Ceil(float64(2*m))), len(mxfp4Halves)-1)
	c := mxfp4Halves[k]
	if x < 0 && c > 0 {
		c += 8
	}
	return c
}

// mxfp4Halves[k] is the code of magnitudes in ((k−1)/2, k/2]: the
// midpoints are ½, 1½, 2½, 3½, 5, 7 and 10.
var mxfp4Halves = [22]uint8{0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 4, 5, 5, 5, 5, 6, 6, 6, 6, 6, 6, 7}
