// Package qwen3moe is Qwen3-MoE (Qwen3-30B-A3B, Qwen3-235B-A22B) on the
// model layer: Qwen3's attention (no Q/K/V biases, RMSNorm of every query
// and key head before NeoX RoPE, head size from key_length) and, in place
// of the dense feed-forward, a mixture of SwiGLU experts: a softmax router
// (ffn_gate_inp), the expert_used_count most probable experts of
// expert_count, their probabilities renormalised to sum 1
// (norm_topk_prob), no shared expert. As llama.cpp's src/models/qwen3moe.cpp
// (build_moe_ffn with LLM_FFN_SILU, norm_w true, gating softmax) and
// Hugging Face's Qwen3MoeForCausalLM.
package qwen3moe

import (
	"fmt"

	"pagoda/gguf"
	"pagoda/kernels"
	"pagoda/model/nn"
	"pagoda/model/qwen3"
)

func init() { nn.Register("qwen3moe", New) }

// New builds a Qwen3-MoE model from an open GGUF file; f stays open on
// error.
func New(f *gguf.File, opt nn.Options) (*nn.Model, error) {
	meta := nn.NewMeta(f)
	cfg, err := meta.MoEConfig(true)
	if err != nil {
		return nil, err
	}
	b := nn.NewBuilder(f, cfg)
	rope := b.Rope(cfg.Rope, nil)
	blocks := make([]nn.Block, cfg.Layers)
	for i := range blocks {
		p := fmt.Sprintf("blk.%d", i)
		blocks[i] = qwen3.Block(b, p, rope)
		blocks[i].MoE = b.MoE(p, kernels.GLUSiLU) // ffn_gate_inp, ffn_{gate,up,down}_exps
	}
	if err := b.Err(); err != nil {
		return nil, err
	}
	return b.Build(blocks, opt)
}
