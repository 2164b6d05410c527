// Package gptoss is OpenAI's gpt-oss (gpt-oss-20b, gpt-oss-120b) on the
// model layer, as llama.cpp's LLM_ARCH_OPENAI_MOE (src/models/openai-moe.cpp,
// GGUF architecture "gpt-oss"), OpenAI's reference implementation
// (github.com/openai/gpt-oss, gpt_oss/torch/model.py) and Hugging Face's
// GptOssForCausalLM:
//
//   - attention with biases on Q, K, V and O (attn_{q,k,v,output}.bias),
//     NeoX RoPE with YaRN scaling (rope.scaling.*), scale 1/√head_dim;
//   - a learned sink per query head (attn_sinks.weight), a logit in each
//     softmax's denominator only;
//   - sliding-window attention (attention.sliding_window, 128) on every
//     other layer, from the first (llama.cpp's set_swa_pattern with
//     pattern 2: layer l is local when l mod 2 = 0), the local layers'
//     RoPE base rope.freq_base_swa (default rope.freq_base);
//   - the feed-forward a mixture of experts after the RMSNorm named
//     post_attention_norm: a router with a bias (ffn_gate_inp), the
//     expert_used_count largest logits and the softmax of those alone
//     (llama.cpp's LLAMA_EXPERT_GATING_FUNC_TYPE_SOFTMAX_WEIGHT), experts
//     with biases on gate, up and down and the clamped SwiGLU
//     (kernels.GLUSwiGLUOAI), in MXFP4 in converted files;
//   - an untied output head (output.weight).
package gptoss

import (
	"fmt"
	"math"

	"pagoda/gguf"
	"pagoda/kernels"
	"pagoda/model"
	"pagoda/model/nn"
)

func init() { nn.Register("gpt-oss", New) }

// New builds a gpt-oss model from an open GGUF file; f stays open on
// error.
func New(f *gguf.File, opt nn.Options) (*nn.Model, error) {
	meta := nn.NewMeta(f)
	cfg, err := meta.MoEConfig(true)
	if err != nil {
		return nil, err
	}
	window := meta.Uint("attention.sliding_window")
	pattern := meta.UintOr("attention.sliding_window_pattern", 2)
	local := cfg.Rope
	local.FreqBase = meta.FloatOr("rope.freq_base_swa", cfg.Rope.FreqBase)
	if meta.Err != nil {
		return nil, meta.Err
	}
	b := nn.NewBuilder(f, cfg)
	global, localRope := b.Rope(cfg.Rope, nil), b.Rope(local, nil)
	blocks := make([]nn.Block, cfg.Layers)
	for i := range blocks {
		blocks[i] = block(b, cfg, fmt.Sprintf("blk.%d", i), global)
		if pattern == 0 || i%pattern < pattern-1 { // llama.cpp's set_swa_pattern
			blocks[i].Attn.Window, blocks[i].Attn.Rope = window, localRope
		}
	}
	if err := b.Err(); err != nil {
		return nil, err
	}
	return b.Build(blocks, opt)
}

// block loads layer p ("blk.N").
func block(b *nn.Builder, cfg model.Config, p string, rope int) nn.Block {
	attn := b.Attention(p, rope) // attn_q/k/v/output with their biases
	attn.Scale = float32(1 / math.Sqrt(float64(cfg.Rope.Dim)))
	attn.Sinks = b.Vector(p+".attn_sinks.weight", cfg.Heads)
	moe := b.MoE(p, kernels.GLUSwiGLUOAI) // ffn_gate_inp, ffn_{gate,up,down}_exps, with biases
	if moe != nil {
		moe.Gating, moe.NormTopK = nn.GatingTopKSoftmax, false
	}
	return nn.Block{
		AttnNorm: b.Vector(p+".attn_norm.weight", cfg.Dim),
		Attn:     attn,
		FFNNorm:  b.Vector(p+".post_attention_norm.weight", cfg.Dim),
		MoE:      moe,
	}
}
