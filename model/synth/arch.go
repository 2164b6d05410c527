package synth

import (
	"fmt"
	"math"
	"strings"

	"pagoda/gguf"
)

// The metadata and tensors of each family are those llama.cpp's converter
// (convert_hf_to_gguf.py, conversion/{llama,qwen,gemma,phi}.py) writes for
// it, with the key names of llama.cpp's src/llama-arch.cpp.

// keys writes one architecture's metadata keys.
type keys struct {
	w    *gguf.Writer
	arch string
}

func (k keys) u32(key string, v int)     { k.w.AddKV(k.arch+"."+key, uint32(v)) }
func (k keys) f32(key string, v float32) { k.w.AddKV(k.arch+"."+key, v) }

func addMetadata(w *gguf.Writer, s Shape, fileType uint32) {
	w.AddKV("general.architecture", s.Arch)
	name := s.Name
	if !strings.Contains(strings.ToLower(name), "synthetic") {
		name += " (synthetic)"
	}
	w.AddKV("general.name", name)
	w.AddKV("general.file_type", fileType)
	w.AddKV("general.quantization_version", uint32(2))
	k := keys{w, s.Arch}
	switch s.Arch {
	case "llama", "qwen2":
		llamaMetadata(k, s)
	case "phi3":
		phi3Metadata(k, s)
	case "bert":
		bertMetadata(k, s)
	case "gpt-oss":
		gptossMetadata(k, s)
	default:
		textMetadata(k, s)
	}
	if s.MoE() {
		// TextModel's expert keys, then Qwen2MoeModel's expert length.
		k.u32("expert_count", s.Experts)
		k.u32("expert_used_count", s.ExpertsUsed)
		k.u32("expert_feed_forward_length", s.ExpertHiddenDim)
	}
}

// llamaMetadata: LlamaModel's keys (the base keys, vocab_size and
// rope.dimension_count); qwen2 shapes have long been written alike.
func llamaMetadata(k keys, s Shape) {
	k.u32("vocab_size", s.VocabSize)
	k.u32("context_length", s.ContextLen)
	k.u32("embedding_length", s.Dim)
	k.u32("block_count", s.Layers)
	k.u32("feed_forward_length", s.HiddenDim)
	k.u32("attention.head_count", s.Heads)
	k.u32("attention.head_count_kv", s.KVHeads)
	k.f32("attention.layer_norm_rms_epsilon", s.RMSEps)
	k.f32("rope.freq_base", s.RopeTheta)
	k.u32("rope.dimension_count", s.RotaryDim())
	if s.HeadSize > 0 {
		k.u32("attention.key_length", s.HeadSize)
		k.u32("attention.value_length", s.HeadSize)
	}
}

// textMetadata: TextModel's base keys, which Qwen3 writes alone and
// Gemma 3 with its sliding window (no vocab_size, no
// rope.dimension_count: llama.cpp rotates whole heads of key_length).
func textMetadata(k keys, s Shape) {
	k.u32("block_count", s.Layers)
	k.u32("context_length", s.ContextLen)
	k.u32("embedding_length", s.Dim)
	k.u32("feed_forward_length", s.HiddenDim)
	k.u32("attention.head_count", s.Heads)
	k.u32("attention.head_count_kv", s.KVHeads)
	if s.RopeLinear > 0 {
		k.w.AddKV(s.Arch+".rope.scaling.type", "linear")
		k.f32("rope.scaling.factor", s.RopeLinear)
	}
	k.f32("rope.freq_base", s.RopeTheta)
	if s.RopeThetaSWA > 0 {
		k.f32("rope.freq_base_swa", s.RopeThetaSWA)
	}
	k.f32("attention.layer_norm_rms_epsilon", s.RMSEps)
	if s.HeadSize > 0 {
		k.u32("attention.key_length", s.HeadSize)
		k.u32("attention.value_length", s.HeadSize)
	}
	if s.SlidingWindow > 0 {
		k.u32("attention.sliding_window", s.SlidingWindow)
	}
}

// phi3Metadata: Phi3MiniModel's own keys (it does not write the base
// ones): the partial rotary dimension, the original context, the sliding
// window (0 when the config has none) and LongRoPE's attention factor.
func phi3Metadata(k keys, s Shape) {
	orig := s.ContextLen
	if s.LongRope != nil {
		orig = s.LongRope.OrigCtx
	}
	k.u32("context_length", s.ContextLen)
	k.u32("rope.scaling.original_context_length", orig)
	k.u32("embedding_length", s.Dim)
	k.u32("feed_forward_length", s.HiddenDim)
	k.u32("block_count", s.Layers)
	k.u32("attention.head_count", s.Heads)
	k.u32("attention.head_count_kv", s.KVHeads)
	k.f32("attention.layer_norm_rms_epsilon", s.RMSEps)
	k.u32("rope.dimension_count", s.RotaryDim())
	k.f32("rope.freq_base", s.RopeTheta)
	k.u32("attention.sliding_window", s.SlidingWindow)
	if s.LongRope != nil {
		k.f32("rope.scaling.attn_factor", s.LongRope.AttnFactor(s.ContextLen))
	}
}

// bertMetadata: BertModel's keys: the base ones with LayerNorm's epsilon,
// attention.causal false and pooling_type 2 (CLS, as BGE's
// sentence-transformers config says; MiniLM's is 1, mean).
func bertMetadata(k keys, s Shape) {
	k.u32("context_length", s.ContextLen)
	k.u32("embedding_length", s.Dim)
	k.u32("feed_forward_length", s.HiddenDim)
	k.u32("block_count", s.Layers)
	k.u32("attention.head_count", s.Heads)
	k.f32("attention.layer_norm_epsilon", s.RMSEps)
	k.w.AddKV(s.Arch+".attention.causal", false)
	k.u32("pooling_type", 2)
}

// bertTensors lists a BERT's tensors (llama.cpp's src/models/bert.cpp
// names): the embeddings (token, 2 token types, positions) and their
// LayerNorm, then per layer Q, K, V and output with biases, the attention
// output's LayerNorm, the GELU feed-forward with biases and the layer
// output's LayerNorm; no output norm, no head. Position and token-type
// embeddings stay F32.
func bertTensors(s Shape) []tensor {
	ln := func(name string) []tensor {
		return []tensor{{name: name + ".weight", dims: []int{s.Dim}, fill: ones(s.Dim)}, {name: name + ".bias", dims: []int{s.Dim}, std: std}}
	}
	ts := []tensor{
		{name: "token_embd.weight", dims: []int{s.Dim, s.VocabSize}, std: std},
		{name: "token_types.weight", dims: []int{s.Dim, 2}, std: std, f32: true},
		{name: "position_embd.weight", dims: []int{s.Dim, s.ContextLen}, std: std, f32: true},
	}
	ts = append(ts, ln("token_embd_norm")...)
	out := std / math.Sqrt(2*float64(s.Layers))
	for l := range s.Layers {
		b := layerTensors{s: s, p: fmt.Sprintf("blk.%d.", l), out: out}
		for _, m := range []string{"attn_q", "attn_k", "attn_v"} {
			b.mat(m, s.Dim, s.Dim, std)
			b.bias(m, s.Dim)
		}
		b.mat("attn_output", s.Dim, s.Dim, out)
		b.bias("attn_output", s.Dim)
		b.ts = append(b.ts, ln(b.p+"attn_output_norm")...)
		b.mat("ffn_up", s.Dim, s.HiddenDim, std)
		b.bias("ffn_up", s.HiddenDim)
		b.mat("ffn_down", s.HiddenDim, s.Dim, out)
		b.bias("ffn_down", s.Dim)
		b.ts = append(b.ts, ln(b.p+"layer_output_norm")...)
		ts = append(ts, b.ts...)
	}
	return ts
}

// layerTensors builds one layer's tensors. Matrices are drawn with std
// 0.02, the projections back into the residual stream scaled down by
// √(2·layers); norms are ones (gemma3's too: its converter stores 1 + w).
type layerTensors struct {
	s   Shape
	p   string // "blk.N."
	out float64
	ts  []tensor
}

const std = 0.02

func (b *layerTensors) mat(name string, cols, rows int, sd float64) {
	b.ts = append(b.ts, tensor{name: b.p + name + ".weight", dims: []int{cols, rows}, std: sd})
}

func (b *layerTensors) bias(name string, n int) {
	b.ts = append(b.ts, tensor{name: b.p + name + ".bias", dims: []int{n}, std: std})
}

func (b *layerTensors) norm(name string, n int) {
	b.ts = append(b.ts, tensor{name: b.p + name + ".weight", dims: []int{n}, fill: ones(n)})
}

func ones(n int) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = 1
	}
	return v
}

// attention appends the norm and the projections of the attention block.
func (b *layerTensors) attention() {
	s := b.s
	hd := s.HeadDim()
	q, kv := s.Heads*hd, s.KVHeads*hd
	b.norm("attn_norm", s.Dim)
	if s.Arch == "phi3" {
		b.mat("attn_qkv", s.Dim, q+2*kv, std) // rows q, then k, then v
		b.mat("attn_output", q, s.Dim, b.out)
		return
	}
	b.mat("attn_q", s.Dim, q, std)
	b.mat("attn_k", s.Dim, kv, std)
	b.mat("attn_v", s.Dim, kv, std)
	switch s.Arch {
	case "qwen2":
		b.bias("attn_q", q)
		b.bias("attn_k", kv)
		b.bias("attn_v", kv)
	case "qwen3", "qwen3moe", "gemma3":
		b.norm("attn_q_norm", hd)
		b.norm("attn_k_norm", hd)
	}
	b.mat("attn_output", q, s.Dim, b.out)
	switch s.Arch {
	case "gemma3":
		b.norm("post_attention_norm", s.Dim)
	case "gpt-oss":
		b.gptossAttention()
	}
}

// feedForward appends the norm and the gated feed-forward.
func (b *layerTensors) feedForward() {
	s := b.s
	if s.Arch == "gpt-oss" {
		b.gptossFeedForward()
		return
	}
	b.norm("ffn_norm", s.Dim)
	if s.MoE() {
		// The router, kept in F32 by the converter, drawn wider than the
		// matrices so that the routing is decided (logits of std ~1 on
		// unit-RMS inputs at the tiny shapes); the experts one 3-D tensor
		// per matrix, expert i the i-th slice.
		b.ts = append(b.ts, tensor{name: b.p + "ffn_gate_inp.weight", dims: []int{s.Dim, s.Experts}, std: routerStd(s.Dim), f32: true})
		e, ff := s.Experts, s.ExpertHiddenDim
		b.ts = append(b.ts,
			tensor{name: b.p + "ffn_gate_exps.weight", dims: []int{s.Dim, ff, e}, std: std},
			tensor{name: b.p + "ffn_up_exps.weight", dims: []int{s.Dim, ff, e}, std: std},
			tensor{name: b.p + "ffn_down_exps.weight", dims: []int{ff, s.Dim, e}, std: b.out})
		return
	}
	if s.Arch == "phi3" {
		b.mat("ffn_up", s.Dim, 2*s.HiddenDim, std) // rows: gate, then up (llama.cpp's swiglu split)
	} else {
		b.mat("ffn_gate", s.Dim, s.HiddenDim, std)
		b.mat("ffn_up", s.Dim, s.HiddenDim, std)
	}
	b.mat("ffn_down", s.HiddenDim, s.Dim, b.out)
	if s.Arch == "gemma3" {
		b.norm("post_ffw_norm", s.Dim)
	}
}

// routerStd is the router's weight std: logits of std ~1.1 over inputs
// of unit RMS (0.1 at 128 dims).
func routerStd(dim int) float64 { return 1.13 / math.Sqrt(float64(dim)) }

// tensors lists the model's tensors with llama.cpp's names and shapes.
func tensors(s Shape) []tensor {
	if s.Arch == "bert" {
		return bertTensors(s)
	}
	ts := []tensor{{name: "token_embd.weight", dims: []int{s.Dim, s.VocabSize}, std: std}}
	if s.Llama3Rope != nil {
		ts = append(ts, tensor{name: "rope_freqs.weight", dims: []int{s.HeadDim() / 2}, fill: s.Llama3Rope.ropeFreqs(s.HeadDim(), s.RopeTheta)})
	}
	if r := s.LongRope; r != nil {
		ts = append(ts,
			tensor{name: "rope_factors_long.weight", dims: []int{len(r.Long)}, fill: r.Long},
			tensor{name: "rope_factors_short.weight", dims: []int{len(r.Short)}, fill: r.Short})
	}
	out := std / math.Sqrt(2*float64(s.Layers))
	for l := range s.Layers {
		b := layerTensors{s: s, p: fmt.Sprintf("blk.%d.", l), out: out}
		b.attention()
		b.feedForward()
		ts = append(ts, b.ts...)
	}
	ts = append(ts, tensor{name: "output_norm.weight", dims: []int{s.Dim}, fill: ones(s.Dim)})
	if !s.Tied {
		ts = append(ts, tensor{name: "output.weight", dims: []int{s.Dim, s.VocabSize}, std: std})
	}
	return ts
}
