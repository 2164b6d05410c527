package nn

import (
	"fmt"

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
	if err := m.check(kv, b, logits); err != nil {
		return err
	}
	m.micro[0] = ubatch{b: b, s: &m.s[0], logits: logits}
	return m.run(m.micro[:1], kv)
}

// ForwardMicroBatches runs two micro-batches of one step with dual-batch
// overlap (model.MicroBatcher): each has its own scratch, and their
// per-layer stages alternate (see run) so that while one micro-batch's
// all-reduce is in flight the other computes. Each token's arithmetic is
// Forward's, so the cache and logits equal two Forward calls bit for bit.
func (m *Model) ForwardMicroBatches(a, b *model.Batch, kv *model.KVCache, la, lb []float32) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.check(kv, a, la); err != nil {
		return err
	}
	if err := m.checkBatch(b, kv, lb); err != nil {
		return err
	}
	m.micro[0] = ubatch{b: a, s: &m.s[0], logits: la}
	m.micro[1] = ubatch{b: b, s: &m.s[1], logits: lb}
	return m.run(m.micro[:2], kv)
}

// CommTimes is the communication time of the last forward pass
// (model.CommTimer); zero with one rank.
func (m *Model) CommTimes() model.CommTimes {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.tp.times
}

// check validates the model state, cache and batch before a pass.
func (m *Model) check(kv *model.KVCache, b *model.Batch, logits []float32) error {
	if m.pool == nil {
		return fmt.Errorf("%s: Forward after Close", m.cfg.Arch)
	}
	if err := m.checkCache(kv); err != nil {
		return err
	}
	return m.checkBatch(b, kv, logits)
}

// attention runs the attention half of a block up to the attention output
// s.att: x → RMSNorm → Q, K, V (+bias) → q/k norms → RoPE → q scale →
// cache → paged attention; with project, also the output projection s.xb
// = O·att (in the same pool job as the attention).
func (m *Model) attention(s *scratch, ly *Block, kv *kernels.KVLayer, slots []int32, n int, project bool) {
	c, at := &m.local, &ly.Attn
	qd, kd, half := c.Heads*c.HeadDim, c.KVHeads*c.HeadDim, c.Rope.Dim/2
	s.mm[0] = kernels.MatMulOut{Dst: s.q, W: at.Q.W}
	s.mm[1] = kernels.MatMulOut{Dst: s.k, W: at.K.W}
	s.mm[2] = kernels.MatMulOut{Dst: s.v, W: at.V.W}
	if ly.AttnNorm == nil { // post-layer-norm (BERT): the input is already normalised
		m.pool.MatMulN(s.mm[:3], s.x[:n*c.Dim], n)
	} else {
		m.pool.NormMatMulN(s.mm[:3], s.xb, s.x, ly.AttnNorm, c.RMSEps, n)
	}
	m.tp.progress()
	var rope *kernels.Rope
	var cosr, sinr []float32
	if at.Rope >= 0 {
		rope, cosr, sinr = m.ropes[at.Rope], s.cos[at.Rope], s.sin[at.Rope]
	}
	for i := range n {
		q, k, v := s.q[i*qd:(i+1)*qd], s.k[i*kd:(i+1)*kd], s.v[i*kd:(i+1)*kd]
		if at.Q.Bias != nil {
			kernels.Add(q, at.Q.Bias)
		}
		if at.K.Bias != nil {
			kernels.Add(k, at.K.Bias)
		}
		if at.V.Bias != nil {
			kernels.Add(v, at.V.Bias)
		}
		if at.QNorm != nil {
			kernels.RMSNorm(q, q, at.QNorm, c.RMSEps)
		}
		if at.KNorm != nil {
			kernels.RMSNorm(k, k, at.KNorm, c.RMSEps)
		}
		if rope != nil {
			cos, sin := cosr[i*half:(i+1)*half], sinr[i*half:(i+1)*half]
			rope.Apply(q, c.HeadDim, cos, sin)
			rope.Apply(k, c.HeadDim, cos, sin)
		}
		if at.QScale != 0 {
			kernels.Scale(q, at.QScale)
		}
	}
	kernels.WriteKV(kv, slots, s.k, s.v)
	m.tp.progress()
	s.attn.Window, s.attn.Scale, s.attn.Positions, s.attn.Sinks = at.Window, at.Scale, s.pos, at.Sinks
	if at.Bidirectional {
		s.attn.Positions = s.last
	}
	if m.attnT.on {
		m.timedAttention(s, kv, at.O.W, n, project)
	} else if project {
		m.pool.AttentionMatMul(&s.attn, kv, s.xb, at.O.W)
	} else {
		m.pool.Attention(&s.attn, kv)
	}
	m.tp.progress()
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
// into s.logitX and s.logitAtt and returns s.logitX.
func (m *Model) gatherLogitRows(s *scratch, idx []int32) []float32 {
	c := &m.local
	qd := c.Heads * c.HeadDim
	for j, i := range idx {
		copy(s.logitX[j*c.Dim:(j+1)*c.Dim], s.x[int(i)*c.Dim:])
		copy(s.logitAtt[j*qd:(j+1)*qd], s.att[int(i)*qd:])
	}
	return s.logitX
}
