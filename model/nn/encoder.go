package nn

import (
	"pagoda/kernels"
)

// Encoder is what an encoder-only model (BERT) adds around the blocks:
// absolute position embeddings, the token-type row added to every token
// (type 0, "sentence A", as llama.cpp hard-codes it) and the embeddings'
// LayerNorm. Such a model has no output norm and no LM head: its hidden
// state is the last block's output (model.Config.Embedding), and its
// blocks are post-layer-norm with bidirectional attention.
type Encoder struct {
	Pos  kernels.Weight // (ContextLen, Dim) position_embd.weight
	Type []float32      // (Dim) row 0 of token_types.weight, or nil
	Norm LayerNorm      // token_embd_norm
}

// embed turns a token's embedding row into the first block's input, as
// llama.cpp's build_bert: (tok + type) + pos[pos], then the LayerNorm
// (tmp: Dim of scratch).
func (e *Encoder) embed(row, tmp []float32, pos int32, eps float32) {
	if e.Type != nil {
		kernels.Add(row, e.Type)
	}
	kernels.DequantizeRow(tmp, e.Pos, int(pos))
	kernels.Add(row, tmp)
	kernels.LayerNorm(row, row, e.Norm.W, e.Norm.B, eps)
}

// LayerNorm loads a LayerNorm's name+".weight" and optional name+".bias".
func (b *Builder) LayerNorm(name string) *LayerNorm {
	return &LayerNorm{W: b.Vector(name+".weight", b.Cfg.Dim), B: b.OptVector(name+".bias", b.Cfg.Dim)}
}

// logitWidth is the logits of a row: VocabSize, 0 without a head.
func (m *Model) logitWidth() int {
	if m.enc != nil {
		return 0
	}
	return m.cfg.VocabSize
}
