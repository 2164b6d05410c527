package nn

import (
	"pagoda/kernels"
	"pagoda/model"
)

// scratch holds the activations of one Forward call. Buffers grow to the
// largest batch seen and are reused, so a steady-state step allocates
// nothing. n is the batch's token count, m its number of logit rows.
type scratch struct {
	x        []float32   // (n, Dim) residual stream
	xb       []float32   // (n, Dim) normalised input, then block output
	q        []float32   // (n, Heads·HeadDim) queries
	k, v     []float32   // (n, KVHeads·HeadDim) keys and values of the new tokens
	att      []float32   // (n, Heads·HeadDim) attention output
	gate     []float32   // (n, HiddenDim) gate projection, then SwiGLU output
	up       []float32   // (n, HiddenDim) up projection
	cos      [][]float32 // (ropes)(n, RopeDim/2) rotation of every token's position
	sin      [][]float32 // (ropes)(n, RopeDim/2)
	logitX   []float32   // (m, Dim) residual rows that produce logits
	logitAtt []float32   // (m, Heads·HeadDim) their attention output
	pos      []int32     // (n) the batch's positions
	last     []int32     // (n) each token's sequence's last position (bidirectional attention)
	kv       []kernels.KVLayer
	attn     kernels.Attention
	mm       [3]kernels.MatMulOut // products of one MatMulN call
	mlp      kernels.MLP          // weights of the current Pool.MLP call
	mlpb     kernels.MLPBuffers   // its activations
	route    []float32            // (n, Experts) router logits, then probabilities
	ids      []int32              // (n, ExpertsUsed) each token's experts by rank
	weights  []float32            // (n, ExpertsUsed) their weights
	moeb     kernels.MoEBuffers   // the activations of the current Pool.MoE call
}

// size grows every buffer for n tokens and m logit rows, with the angles
// of ropes rotary embeddings.
func (s *scratch) size(c model.Config, ropes, n, m int) {
	q, kv, half := c.Heads*c.HeadDim, c.KVHeads*c.HeadDim, c.Rope.Dim/2
	s.x = grow(s.x, n*c.Dim)
	s.xb = grow(s.xb, n*c.Dim)
	s.q = grow(s.q, n*q)
	s.k = grow(s.k, n*kv)
	s.v = grow(s.v, n*kv)
	s.att = grow(s.att, n*q)
	s.gate = grow(s.gate, n*c.HiddenDim)
	s.up = grow(s.up, n*c.HiddenDim)
	s.cos = grow(s.cos, ropes)
	s.sin = grow(s.sin, ropes)
	for r := range ropes {
		s.cos[r] = grow(s.cos[r], n*half)
		s.sin[r] = grow(s.sin[r], n*half)
	}
	s.route = grow(s.route, n*c.Experts)
	s.ids = grow(s.ids, n*c.ExpertsUsed)
	s.weights = grow(s.weights, n*c.ExpertsUsed)
	s.logitX = grow(s.logitX, m*c.Dim)
	s.logitAtt = grow(s.logitAtt, m*q)
}

// layerViews points s.kv at every layer of the paged cache.
func (s *scratch) layerViews(kv *model.KVCache) { s.kv = kv.Layers }

func grow[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	return s[:n]
}
