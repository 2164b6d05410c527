// Package qwen3 is Qwen3 (dense) on the model layer: Llama-style pre-norm
// blocks, no Q/K/V biases, RMSNorm of every query and key head before
// RoPE (NeoX pairs), a SwiGLU feed-forward; the head size comes from
// key_length (128 where Dim/Heads is not). As llama.cpp's
// src/models/qwen3.cpp and Hugging Face's Qwen3ForCausalLM.
package qwen3

import (
	"fmt"

	"pagoda/gguf"
	"pagoda/kernels"
	"pagoda/model/nn"
)

func init() { nn.Register("qwen3", New) }

// New builds a Qwen3 model from an open GGUF file; f stays open on error.
func New(f *gguf.File, opt nn.Options) (*nn.Model, error) {
	cfg, err := nn.NewMeta(f).Config(true)
	if err != nil {
		return nil, err
	}
	b := nn.NewBuilder(f, cfg)
	rope := b.Rope(cfg.Rope, nil)
	blocks := make([]nn.Block, cfg.Layers)
	for i := range blocks {
		p := fmt.Sprintf("blk.%d", i)
		blocks[i] = Block(b, p, rope)
		blocks[i].FFN = b.FFN(p, kernels.GLUSiLU)
	}
	if err := b.Err(); err != nil {
		return nil, err
	}
	return b.Build(blocks, opt)
}

// Block is a Qwen3 block's attention half (tensor prefix p, RoPE index
// rope): the attention with its per-head q/k RMSNorms, and the norms before
// attention and feed-forward; the caller sets the feed-forward (dense, or
// Qwen3-MoE's experts).
func Block(b *nn.Builder, p string, rope int) nn.Block {
	c := b.Cfg
	attn := b.Attention(p, rope)
	attn.QNorm = b.Vector(p+".attn_q_norm.weight", c.HeadDim)
	attn.KNorm = b.Vector(p+".attn_k_norm.weight", c.HeadDim)
	return nn.Block{
		AttnNorm: b.Vector(p+".attn_norm.weight", c.Dim),
		Attn:     attn,
		FFNNorm:  b.Vector(p+".ffn_norm.weight", c.Dim),
	}
}
