// Package llama is the Llama family of decoder-only transformers (Llama
// 1–3.x, SmolLM, Mistral, Qwen2) on the model layer (model/nn): pre-norm
// blocks of grouped-query attention with rotary embeddings and a SwiGLU
// feed-forward. Llama 3.x's RoPE scaling is the "llama3" scaling (its
// rope_freqs.weight when the file has one); Qwen2 adds Q/K/V biases and
// rotates NeoX pairs.
package llama

import (
	"fmt"

	"pagoda/gguf"
	"pagoda/kernels"
	"pagoda/model"
	"pagoda/model/nn"
)

// archs maps the architectures this package loads to whether their RoPE
// rotates NeoX pairs (i, i+d/2), as llama.cpp's llama_model_rope_type:
// llama (and Mistral files using its layout) use adjacent pairs, qwen2 NeoX.
var archs = map[string]bool{
	"llama":   false,
	"mistral": false,
	"qwen2":   true,
}

func init() {
	for arch := range archs {
		nn.Register(arch, New)
	}
}

// Model and Options are the model layer's.
type (
	Model   = nn.Model
	Options = nn.Options
)

// New builds a model from an open GGUF file of architecture llama, mistral
// or qwen2. The model keeps slices of f's mapping and closes f in Close; on
// error f is left open for the caller.
func New(f *gguf.File, opt Options) (*Model, error) {
	cfg, err := readConfig(f)
	if err != nil {
		return nil, err
	}
	b := nn.NewBuilder(f, cfg)
	rope := b.Rope(cfg.Rope, b.OptVector("rope_freqs.weight", cfg.Rope.Dim/2))
	blocks := make([]nn.Block, cfg.Layers)
	for i := range blocks {
		p := fmt.Sprintf("blk.%d", i)
		blocks[i] = nn.Block{
			AttnNorm: b.Vector(p+".attn_norm.weight", cfg.Dim),
			Attn:     b.Attention(p, rope),
			FFNNorm:  b.Vector(p+".ffn_norm.weight", cfg.Dim),
			FFN:      b.FFN(p, kernels.GLUSiLU),
		}
	}
	if err := b.Err(); err != nil {
		return nil, err
	}
	return b.Build(blocks, opt)
}

// readConfig reads the shape of a llama, mistral or qwen2 file.
func readConfig(f *gguf.File) (model.Config, error) {
	meta := nn.NewMeta(f)
	neox, ok := archs[meta.Arch]
	if !ok {
		return model.Config{}, fmt.Errorf("llama: architecture %q is not one of llama, mistral, qwen2", meta.Arch)
	}
	return meta.Config(neox)
}
