// Package gemma3 is Gemma 3 (text) on the model layer, as llama.cpp's
// src/models/gemma3.cpp and Hugging Face's Gemma3ForCausalLM:
//
//   - embeddings scaled by √Dim;
//   - RMSNorm before and after attention and before and after the
//     feed-forward (the post-norms normalise the block output before the
//     residual add); llama.cpp's converter writes Gemma's (1 + w) norm
//     weights with the 1 added, so they are used as they are;
//   - RMSNorm of every query and key head before RoPE (NeoX pairs);
//   - queries scaled by query_pre_attn_scalar^−½ — 1/√HeadDim, or
//     1/√(Dim/Heads) for the 27B (62 layers), as llama.cpp — and attention
//     with scale 1;
//   - sliding-window attention (attention.sliding_window positions) on
//     five layers of every six (attention.sliding_window_pattern, default
//     6: layer l is local unless l mod 6 = 5), whose RoPE uses the local
//     base rope.freq_base_swa (default 10000) without scaling; the full
//     layers use rope.freq_base and the file's scaling;
//   - a GELU-tanh gated feed-forward (GeGLU);
//   - the logits soft-capped when final_logit_softcapping is set.
package gemma3

import (
	"fmt"
	"math"

	"pagoda/gguf"
	"pagoda/kernels"
	"pagoda/model"
	"pagoda/model/nn"
)

func init() { nn.Register("gemma3", New) }

// New builds a Gemma 3 model from an open GGUF file; f stays open on
// error.
func New(f *gguf.File, opt nn.Options) (*nn.Model, error) {
	meta := nn.NewMeta(f)
	cfg, err := meta.Config(true)
	if err != nil {
		return nil, err
	}
	window := meta.UintOr("attention.sliding_window", 0)
	pattern := meta.UintOr("attention.sliding_window_pattern", 6)
	local := model.Rope{Dim: cfg.Rope.Dim, FreqBase: meta.FloatOr("rope.freq_base_swa", 10000), NeoX: true,
		Scaling: model.RopeScalingNone, AttnFactor: cfg.Rope.AttnFactor, BetaFast: cfg.Rope.BetaFast,
		BetaSlow: cfg.Rope.BetaSlow, OrigCtx: cfg.Rope.OrigCtx}
	softcap := meta.FloatOr("final_logit_softcapping", 0)
	if meta.Err != nil {
		return nil, meta.Err
	}
	qscale := float32(1 / math.Sqrt(float64(cfg.HeadDim)))
	if cfg.Layers == 62 { // Gemma 3 27B: query_pre_attn_scalar = Dim/Heads
		qscale = float32(1 / math.Sqrt(float64(cfg.Dim/cfg.Heads)))
	}
	b := nn.NewBuilder(f, cfg)
	b.EmbedScale = float32(math.Sqrt(float64(cfg.Dim)))
	b.Softcap = softcap
	global, localRope := b.Rope(cfg.Rope, nil), b.Rope(local, nil)
	blocks := make([]nn.Block, cfg.Layers)
	for i := range blocks {
		p := fmt.Sprintf("blk.%d", i)
		attn := b.Attention(p, global)
		if window > 0 && i%pattern < pattern-1 { // llama.cpp's set_swa_pattern
			attn.Window, attn.Rope = window, localRope
		}
		attn.QNorm = b.Vector(p+".attn_q_norm.weight", cfg.HeadDim)
		attn.KNorm = b.Vector(p+".attn_k_norm.weight", cfg.HeadDim)
		attn.QScale, attn.Scale = qscale, 1
		blocks[i] = nn.Block{
			AttnNorm:     b.Vector(p+".attn_norm.weight", cfg.Dim),
			Attn:         attn,
			PostAttnNorm: b.Vector(p+".post_attention_norm.weight", cfg.Dim),
			FFNNorm:      b.Vector(p+".ffn_norm.weight", cfg.Dim),
			FFN:          b.FFN(p, kernels.GLUGELUTanh),
			PostFFNNorm:  b.Vector(p+".post_ffw_norm.weight", cfg.Dim),
		}
	}
	if err := b.Err(); err != nil {
		return nil, err
	}
	return b.Build(blocks, opt)
}
