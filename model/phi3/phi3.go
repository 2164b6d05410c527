// Package phi3 is Phi-3 / Phi-3.5 / Phi-4-mini on the model layer, as
// llama.cpp's src/models/phi3.cpp and Hugging Face's Phi3ForCausalLM:
// Llama-style pre-norm blocks whose Q, K and V come from one fused
// attn_qkv matrix (or three separate ones) and whose gate and up
// projections are the two halves of one ffn_up matrix (gate first); RoPE
// on NeoX pairs over a partial rotary dimension (Phi-4-mini: 96 of 128),
// with LongRoPE's per-frequency factors — rope_factors_long when the
// served context exceeds rope.scaling.original_context_length, else
// rope_factors_short, as llama.cpp chooses by its context size — and
// cos/sin scaled by rope.scaling.attn_factor; queries scaled by
// 1/√HeadDim and attention with scale 1. llama.cpp ignores Phi-3's
// sliding window (its SWA is disabled for the family), and so does this
// package.
package phi3

import (
	"fmt"
	"math"

	"pagoda/gguf"
	"pagoda/kernels"
	"pagoda/model/nn"
)

func init() { nn.Register("phi3", New) }

// New builds a Phi-3 model from an open GGUF file; f stays open on error.
func New(f *gguf.File, opt nn.Options) (*nn.Model, error) {
	cfg, err := nn.NewMeta(f).Config(true)
	if err != nil {
		return nil, err
	}
	b := nn.NewBuilder(f, cfg)
	if b.Has("output.bias") {
		return nil, fmt.Errorf("phi3: tensor output.bias: an output bias is not supported")
	}
	ctx := opt.ContextLen
	if ctx <= 0 {
		ctx = cfg.ContextLen
	}
	factors := "rope_factors_short.weight"
	if ctx > cfg.Rope.OrigCtx {
		factors = "rope_factors_long.weight"
	}
	rope := b.Rope(cfg.Rope, b.OptVector(factors, cfg.Rope.Dim/2))
	q, kv := cfg.Heads*cfg.HeadDim, cfg.KVHeads*cfg.HeadDim
	blocks := make([]nn.Block, cfg.Layers)
	for i := range blocks {
		p := fmt.Sprintf("blk.%d", i)
		var attn nn.Attention
		if b.Has(p + ".attn_qkv.weight") {
			qkv := b.Fused(p+".attn_qkv", cfg.Dim, nn.Column, q, kv, kv)
			attn = nn.Attention{Q: qkv[0], K: qkv[1], V: qkv[2], O: b.Linear(p+".attn_output", cfg.Dim, q, nn.Row), Rope: rope}
		} else {
			attn = b.Attention(p, rope)
		}
		attn.QScale, attn.Scale = float32(1/math.Sqrt(float64(cfg.HeadDim))), 1
		gateUp := b.Fused(p+".ffn_up", cfg.Dim, nn.Column, cfg.HiddenDim, cfg.HiddenDim)
		blocks[i] = nn.Block{
			AttnNorm: b.Vector(p+".attn_norm.weight", cfg.Dim),
			Attn:     attn,
			FFNNorm:  b.Vector(p+".ffn_norm.weight", cfg.Dim),
			FFN: nn.FFN{Gate: gateUp[0], Up: gateUp[1], Act: kernels.GLUSiLU,
				Down: b.Linear(p+".ffn_down", cfg.Dim, cfg.HiddenDim, nn.Row)},
		}
	}
	if err := b.Err(); err != nil {
		return nil, err
	}
	return b.Build(blocks, opt)
}
