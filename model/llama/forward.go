package llama

import (
	"fmt"
	"math"

	"pagoda/kernels"
	"pagoda/model"
)

// Forward runs the batch through the model, writes every token's keys and
// values into its cache slot, and stores the logits of the rows listed in
// b.LogitIndices into logits (len(LogitIndices) × VocabSize), in that
// order. The batch is validated first; an invalid batch returns an error
// wrapping ErrBadBatch and leaves the cache untouched.
//
// Every token's result depends only on its own sequence: all kernels are
// row-wise or per (token, head), so logits are bit-identical whatever else
// shares the batch. In the last layer only the logit rows go on past
// attention.
//
// Each token's arithmetic is llama.cpp's single-token decode graph for the
// llama architecture, op for op: RMSNorm·weight, Q/K/V matmuls (+bias),
// RoPE, cache write, attention (Options.Attention), output matmul,
// residual add, RMSNorm·weight, gate and up matmuls, SwiGLU per row, down
// matmul, residual add; then the output norm and the logits matmul. With
// the kernels' bit-exact contract the logits equal llama.cpp's bit for bit
// (TestSmolLM2). Each layer runs three pool jobs, whose results do not
// depend on how the work is grouped: RMSNorm and the Q/K/V matmuls
// (Pool.NormMatMulN); attention and the output matmul
// (Pool.AttentionMatMul; in the last layer, when it keeps only some rows
// for the logits, Attention and MatMul on the gathered rows); RMSNorm,
// gate/up, SwiGLU and down (Pool.MLP). Biases, RoPE, the cache write and
// the residual adds run on the caller between them.
//
// With tensor parallelism (Options.TensorParallel) every rank must call
// Forward with the same batch, in the same order: each layer all-reduces
// twice. kv holds this rank's KV heads only; only rank 0 writes logits.
func (m *Model) Forward(b *model.Batch, kv *model.KVCache, logits []float32) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.pool == nil {
		return fmt.Errorf("llama: Forward after Close")
	}
	if err := m.checkCache(kv); err != nil {
		return err
	}
	if err := m.checkBatch(b, kv, logits); err != nil {
		return err
	}
	c, s := &m.lc, &m.s
	n, rows := len(b.Tokens), len(b.LogitIndices)
	s.size(*c, n, rows)
	s.layerViews(kv)
	for i, tok := range b.Tokens {
		kernels.DequantizeRow(s.x[i*c.Dim:(i+1)*c.Dim], m.embd, int(tok))
	}
	half := c.Rope.Dim / 2
	for i, pos := range b.Positions {
		m.rope.Angles(s.cos[i*half:(i+1)*half], s.sin[i*half:(i+1)*half], pos)
	}
	s.attn = kernels.Attention{
		Q: s.q, Out: s.att, Positions: b.Positions, QueryStart: b.QueryStart, BlockTables: b.BlockTables,
		Heads: c.Heads, Scale: float32(1 / math.Sqrt(float64(c.HeadDim))), Mode: m.opt.Attention,
		Tiles: b.AttnTiles,
	}
	every := everyRow(b.LogitIndices, n) // decodes: no rows to gather
	for l := range m.layers {
		gather := l == len(m.layers)-1 && !every
		m.attention(&m.layers[l], &s.kv[l], b.SlotMapping, n, !gather)
		x, att, nr := s.x, s.att, n
		if gather {
			x, att, nr = m.gatherLogitRows(b.LogitIndices), s.ga, rows
		}
		if nr > 0 {
			if err := m.residual(&m.layers[l], x, att, nr, !gather); err != nil {
				s.attn = kernels.Attention{}
				return err
			}
		}
	}
	if rows > 0 && m.sh.logits() {
		x := s.gx
		if every {
			x = s.x[:rows*c.Dim]
		}
		s.mm[0] = kernels.MatMulOut{Dst: logits, W: m.output}
		m.pool.NormMatMulN(s.mm[:1], s.gx, x, m.outNorm, c.RMSEps, rows)
	}
	s.attn = kernels.Attention{}
	return nil
}

// attention runs the attention half of a block up to the attention output
// s.att: x → RMSNorm → Q, K, V (+bias) → RoPE → cache → paged attention;
// with project, also the output projection s.xb = Wo·att (in the same pool
// job as the attention).
func (m *Model) attention(ly *layer, kv *kernels.KVLayer, slots []int32, n int, project bool) {
	c, s := &m.lc, &m.s
	qd, kd, half := c.Heads*c.HeadDim, c.KVHeads*c.HeadDim, c.Rope.Dim/2
	s.mm[0] = kernels.MatMulOut{Dst: s.q, W: ly.wq}
	s.mm[1] = kernels.MatMulOut{Dst: s.k, W: ly.wk}
	s.mm[2] = kernels.MatMulOut{Dst: s.v, W: ly.wv}
	m.pool.NormMatMulN(s.mm[:3], s.xb, s.x, ly.attnNorm, c.RMSEps, n)
	for i := range n {
		q, k, v := s.q[i*qd:(i+1)*qd], s.k[i*kd:(i+1)*kd], s.v[i*kd:(i+1)*kd]
		if ly.bq != nil {
			kernels.Add(q, ly.bq)
		}
		if ly.bk != nil {
			kernels.Add(k, ly.bk)
		}
		if ly.bv != nil {
			kernels.Add(v, ly.bv)
		}
		cos, sin := s.cos[i*half:(i+1)*half], s.sin[i*half:(i+1)*half]
		m.rope.Apply(q, c.HeadDim, cos, sin)
		m.rope.Apply(k, c.HeadDim, cos, sin)
	}
	kernels.WriteKV(kv, slots, s.k, s.v)
	if project {
		m.pool.AttentionMatMul(&s.attn, kv, s.xb, ly.wo)
	} else {
		m.pool.Attention(&s.attn, kv)
	}
}

// everyRow reports whether idx lists every row of n in order (every
// token wants logits: the last layer need not gather them).
func everyRow(idx []int32, n int) bool {
	if len(idx) != n {
		return false
	}
	for j, i := range idx {
		if int(i) != j {
			return false
		}
	}
	return true
}

// gatherLogitRows copies the residual and attention rows listed in idx
// into s.gx and s.ga and returns s.gx.
func (m *Model) gatherLogitRows(idx []int32) []float32 {
	c, s := &m.lc, &m.s
	qd := c.Heads * c.HeadDim
	for j, i := range idx {
		copy(s.gx[j*c.Dim:(j+1)*c.Dim], s.x[int(i)*c.Dim:])
		copy(s.ga[j*qd:(j+1)*qd], s.att[int(i)*qd:])
	}
	return s.gx
}

// residual finishes a block on nr rows: x += Wo·att (already in s.xb if
// projected), then x += Wdown·(silu(Wgate·norm(x)) ⊙ Wup·norm(x)) (one
// pool job, Pool.MLP). With tensor parallelism each product with Wo and
// Wdown is this rank's partial sum, completed by an all-reduce before the
// add.
func (m *Model) residual(ly *layer, x, att []float32, nr int, projected bool) error {
	c, s := &m.lc, &m.s
	d, h := nr*c.Dim, nr*c.HiddenDim
	xb := s.xb[:d]
	if !projected {
		m.pool.MatMul(xb, ly.wo, att[:nr*c.Heads*c.HeadDim], nr)
	}
	if err := m.sh.reduce(xb); err != nil {
		return err
	}
	kernels.Add(x[:d], xb)
	s.mlp = kernels.MLP{Norm: ly.ffnNorm, Eps: c.RMSEps, Gate: ly.gate, Up: ly.up, Down: ly.down}
	s.mlpb = kernels.MLPBuffers{Dst: xb, X: x[:d], Normed: xb, Gate: s.gate[:h], Up: s.up[:h]}
	m.pool.MLP(&s.mlp, &s.mlpb, nr)
	if err := m.sh.reduce(xb); err != nil {
		return err
	}
	kernels.Add(x[:d], xb)
	return nil
}
