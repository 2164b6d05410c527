// Package bert is BERT (BGE, MiniLM and the other sentence-embedding
// models llama.cpp converts as "bert") on the model layer: an encoder with
// absolute position embeddings and token-type embeddings (type 0) summed
// with the token embeddings and normalised (LayerNorm with bias);
// post-layer-norm blocks whose attention is bidirectional (no RoPE, Q/K/V
// and output biases) and whose feed-forward is plain GELU with biases; no
// output norm and no LM head: the model computes embeddings only. As
// llama.cpp's src/models/bert.cpp and Hugging Face's BertModel.
//
// Metadata: bert.{block_count, embedding_length, feed_forward_length,
// context_length, attention.head_count, attention.layer_norm_epsilon,
// pooling_type (1 mean, 2 cls, 3 last)}. Tensors: token_embd,
// token_types, position_embd, token_embd_norm.{weight,bias},
// blk.N.attn_{q,k,v,output}.{weight,bias},
// blk.N.attn_output_norm.{weight,bias}, blk.N.ffn_{up,down}.{weight,bias},
// blk.N.layer_output_norm.{weight,bias}.
package bert

import (
	"fmt"

	"pagoda/gguf"
	"pagoda/model/nn"
)

func init() { nn.Register("bert", New) }

// poolings maps bert.pooling_type (llama_pooling_type) to the engine's
// pooling names.
var poolings = map[int]string{1: "mean", 2: "cls", 3: "last"}

// New builds a BERT model from an open GGUF file; f stays open on error.
func New(f *gguf.File, opt nn.Options) (*nn.Model, error) {
	meta := nn.NewMeta(f)
	cfg, err := meta.Config(false)
	if err != nil {
		return nil, err
	}
	cfg.RMSEps = meta.FloatOr("attention.layer_norm_epsilon", 1e-12)
	if meta.Has("pooling_type") {
		p := meta.UintOr("pooling_type", 1)
		if cfg.Pooling = poolings[p]; cfg.Pooling == "" {
			meta.Fail("%s %d is not supported (1 mean, 2 cls, 3 last)", meta.Key("pooling_type"), p)
		}
	}
	if meta.Err != nil {
		return nil, meta.Err
	}
	if !(cfg.RMSEps > 0) || cfg.KVHeads != cfg.Heads {
		return nil, fmt.Errorf("bert: layer norm epsilon %v must be positive and KV heads %d equal heads %d", cfg.RMSEps, cfg.KVHeads, cfg.Heads)
	}
	cfg.Embedding = true
	b := nn.NewBuilder(f, cfg)
	enc := &nn.Encoder{Pos: b.Matrix("position_embd.weight", cfg.ContextLen, cfg.Dim)}
	if b.Has("token_types.weight") {
		if info, _ := f.TensorInfo("token_types.weight"); len(info.Dims) == 2 && info.Dims[0] == cfg.Dim {
			types := b.Matrix("token_types.weight", info.Dims[1], cfg.Dim)
			if b.Err() == nil {
				enc.Type = make([]float32, cfg.Dim)
				if err := gguf.Dequantize(types.Type, types.Data[:len(types.Data)/types.Rows], enc.Type); err != nil {
					return nil, fmt.Errorf("bert: token_types.weight: %w", err)
				}
			}
		} else {
			b.Fail("token_types.weight", "shape %v, want [%d n]", info.Dims, cfg.Dim)
		}
	}
	if n := b.LayerNorm("token_embd_norm"); n != nil {
		enc.Norm = *n
	}
	b.Encoder = enc
	blocks := make([]nn.Block, cfg.Layers)
	for i := range blocks {
		p := fmt.Sprintf("blk.%d", i)
		attn := b.Attention(p, -1) // no rotary embedding
		attn.Bidirectional = true
		c := b.Cfg
		blocks[i] = nn.Block{
			Attn:      attn,
			AttnOutLN: b.LayerNorm(p + ".attn_output_norm"),
			FFN: nn.FFN{
				Up:   b.Linear(p+".ffn_up", c.HiddenDim, c.Dim, nn.Column),
				Down: b.Linear(p+".ffn_down", c.Dim, c.HiddenDim, nn.Row),
			},
			OutLN: b.LayerNorm(p + ".layer_output_norm"),
		}
	}
	if err := b.Err(); err != nil {
		return nil, err
	}
	return b.Build(blocks, opt)
}
