package nn

import "pagoda/kernels"

// Block is one transformer layer:
//
//	h = x + PostAttnNorm?(Attn(AttnNorm(x)))
//	y = h + PostFFNNorm?(FFN(FFNNorm(h)))      (MoE in place of FFN when set)
//
// (the post-norms are Gemma 2/3's; nil elsewhere).
type Block struct {
	AttnNorm     []float32 // (Dim) RMSNorm weight before attention
	Attn         Attention
	PostAttnNorm []float32 // (Dim) or nil: RMSNorm of the attention output
	FFNNorm      []float32 // (Dim) RMSNorm weight before the feed-forward
	FFN          FFN
	// MoE, when set, is the feed-forward instead of FFN (left zero): a
	// mixture of experts after the same FFNNorm.
	MoE         *MoE
	PostFFNNorm []float32 // (Dim) or nil: RMSNorm of the feed-forward output
	// AttnOutLN and OutLN, when set, make the block post-layer-norm
	// (BERT): h = LN(x + Attn(x)), y = LN(h + FFN(h)), LayerNorms with
	// bias after the residual adds (AttnNorm and FFNNorm left nil).
	AttnOutLN, OutLN *LayerNorm
}

// LayerNorm is a LayerNorm's weight and bias (Dim each; the bias may be
// nil), with the model's norm epsilon (Config.RMSEps).
type LayerNorm struct{ W, B []float32 }

// Attention is a grouped-query attention layer: Q, K, V column-parallel
// (split by heads), O row-parallel.
//
// Per token: q, k, v = Q·h (+bias), K·h, V·h; q and k normalised per head
// when QNorm/KNorm are set (RMSNorm over each head's HeadDim values, then
// ·weight, before RoPE: Qwen3, Gemma 3); both rotated by rope Rope of the
// model; q multiplied by QScale when it is not 0 (llama.cpp scales Q and
// then attends with scale 1: Gemma 3, Phi-3); k and v written to the
// cache; softmax(Scale·q·Kᵀ)·V over the sequence's positions (the last
// Window of them when Window > 0); then O.
type Attention struct {
	Q, K, V, O   Linear
	QNorm, KNorm []float32 // (HeadDim) or nil
	Rope         int       // index into Model.ropes (Builder.Rope); < 0: no rotary embedding
	// Bidirectional attends to every position of the sequence, not only
	// the ones up to the token's (BERT; the sequence runs whole in one
	// step). O's bias, when set, is added to the output.
	Bidirectional bool
	Window        int     // sliding window in positions; 0: full causal
	QScale        float32 // 0: q is not scaled
	Scale         float32 // score scale
	// Sinks, when set, are learned attention sinks, one logit per query
	// head in each softmax's denominator (gpt-oss's attn_sinks;
	// kernels.Attention.Sinks); split by heads with Q.
	Sinks []float32 // (Heads) or nil
}

// FFN is a gated feed-forward: Down·(Act(Gate·h) ⊙ Up·h); Gate and Up
// column-parallel (split by hidden units), Down row-parallel. With Gate
// left zero it is BERT's plain one, Down·GELU(Up·h + b) + b (the biases
// optional).
type FFN struct {
	Gate, Up, Down Linear
	Act            kernels.GLU
}

// linears lists the block's matrices.
func (b *Block) linears() []*Linear {
	a, f := &b.Attn, &b.FFN
	if b.MoE != nil {
		return append([]*Linear{&a.Q, &a.K, &a.V, &a.O}, b.MoE.linears()...)
	}
	if f.Gate.W.Rows == 0 {
		return []*Linear{&a.Q, &a.K, &a.V, &a.O, &f.Up, &f.Down}
	}
	return []*Linear{&a.Q, &a.K, &a.V, &a.O, &f.Gate, &f.Up, &f.Down}
}
