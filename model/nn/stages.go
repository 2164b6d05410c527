package nn

import (
	"math"

	"pagoda/kernels"
	"pagoda/model"
)

// The forward pass as stages. Each layer is two stages per micro-batch,
// each ending in the all-reduce tensor parallelism needs (none with one
// rank) and starting by settling the previous one:
//
//	attnStage: settle; RMSNorm → Q/K/V → q/k norms → RoPE → cache write →
//	           attention → O (partial sum) → start its all-reduce
//	mlpStage:  settle (x += PostAttnNorm?(Σ O·att)); RMSNorm → gate/up →
//	           GLU → down (partial sum, one pool job) → start its all-reduce
//
// and settle waits for the micro-batch's all-reduce in flight and adds the
// sum (normalised by the block's post-norm, if it has one) into its
// residual stream. run takes every micro-batch through one
// stage before the next stage: with two micro-batches A and B,
//
//	A.attn(l)  B.attn(l)  A.mlp(l)  B.mlp(l)  A.attn(l+1) …
//	   └─ A's all-reduce ─┘  └─ B's ─┘
//
// so each micro-batch's all-reduce is in flight while the other computes a
// stage (dual-batch overlap); the computing stage calls Progress between
// its kernels, because MPI advances a nonblocking collective only inside
// MPI calls. With one micro-batch the all-reduce is waited for at once
// (the next stage settles it first), as a blocking all-reduce. Every rank
// runs the same stages in the same order, so the collectives match; the
// per-token arithmetic is the same whatever the split, so results are bit
// for bit those of one batch. A's layer l (its cache write) always runs
// before B's layer l attention reads the cache, which is why a sequence may
// read blocks written in the same step only from a later micro-batch.

// ubatch is one micro-batch's state through the stages.
type ubatch struct {
	b      *model.Batch
	s      *scratch
	logits []float32

	x    []float32     // the residual rows the current stages work on: s.x, or s.logitX in the last layer
	rows int           // rows of x
	pend model.Request // the all-reduce of sum in flight (nil with one rank)
	sum  []float32     // the partial sum being reduced, added to add when settled
	add  []float32     // nil: nothing to settle
	post []float32     // RMSNorm weight applied to sum before the add, or nil
	ln   *LayerNorm    // LayerNorm applied to the rows after the add (post-layer-norm), or nil
}

// run takes the micro-batches through every layer, stage by stage (see
// above), then computes their logits.
func (m *Model) run(us []ubatch, kv *model.KVCache) error {
	m.tp.times, m.tp.inflight = model.CommTimes{}, 0
	m.attnT.last = 0
	for i := range us {
		m.begin(&us[i], kv)
	}
	defer func() {
		for i := range us {
			us[i].s.attn = kernels.Attention{}
			us[i] = ubatch{}
		}
	}()
	for l := range m.layers {
		for i := range us {
			if err := m.attnStage(&us[i], l); err != nil {
				return err
			}
		}
		for i := range us {
			if err := m.mlpStage(&us[i], l); err != nil {
				return err
			}
		}
	}
	for i := range us {
		if err := m.finish(&us[i]); err != nil {
			return err
		}
	}
	return nil
}

// begin sizes u's scratch and embeds its tokens (scaled by the model's
// embedding scale), and computes every RoPE's angles at their positions.
func (m *Model) begin(u *ubatch, kv *model.KVCache) {
	c, s, b := &m.local, u.s, u.b
	n := len(b.Tokens)
	s.size(*c, len(m.ropes), n, len(b.LogitIndices))
	s.layerViews(kv)
	for i, tok := range b.Tokens {
		row := s.x[i*c.Dim : (i+1)*c.Dim]
		kernels.DequantizeRow(row, m.embd, int(tok))
		if m.scale != 0 {
			kernels.Scale(row, m.scale)
		}
		if m.enc != nil {
			m.enc.embed(row, s.xb[i*c.Dim:(i+1)*c.Dim], b.Positions[i], c.RMSEps)
		}
	}
	s.pos = b.Positions
	if m.bidir {
		s.last = grow(s.last, n)
		for q := range b.NumSeqs() {
			for i := b.QueryStart[q]; i < b.QueryStart[q+1]; i++ {
				s.last[i] = b.ContextLens[q] - 1
			}
		}
	}
	half := c.Rope.Dim / 2
	for r, rope := range m.ropes {
		for i, pos := range b.Positions {
			rope.Angles(s.cos[r][i*half:(i+1)*half], s.sin[r][i*half:(i+1)*half], pos)
		}
	}
	s.attn = kernels.Attention{
		Q: s.q, Out: s.att, Positions: b.Positions, QueryStart: b.QueryStart, BlockTables: b.BlockTables,
		Heads: c.Heads, Mode: m.opt.Attention, Tiles: b.AttnTiles,
	}
	u.x, u.rows = s.x, n
}

// attnStage runs layer l's attention over every token of u (all of them
// write their K/V), then, on the rows that go on (every row; the logit
// rows in the last layer, gathered unless they are every row), the output
// projection, whose all-reduce it starts. Unless rows are gathered, the
// projection runs in the attention's pool job (Pool.AttentionMatMul).
func (m *Model) attnStage(u *ubatch, l int) error {
	if err := m.settle(u); err != nil {
		return err
	}
	s, ly := u.s, &m.layers[l]
	c := &m.local
	n := len(u.b.Tokens)
	gather := l == len(m.layers)-1 && !everyRow(u.b.LogitIndices, n)
	g, ns := m.kvLayout.Group[l], u.b.NumSeqs()
	s.attn.BlockTables = u.b.BlockTables[g*ns : (g+1)*ns]
	m.attention(s, ly, &s.kv[l], u.b.SlotMapping[g*n:(g+1)*n], n, !gather)
	if gather {
		u.x, u.rows = m.gatherLogitRows(s, u.b.LogitIndices), len(u.b.LogitIndices)
	}
	if u.rows == 0 {
		return nil
	}
	xb := s.xb[:u.rows*c.Dim]
	if gather {
		m.pool.MatMul(xb, ly.Attn.O.W, s.logitAtt[:u.rows*c.Heads*c.HeadDim], u.rows)
	}
	addBias(xb, ly.Attn.O.Bias)
	err := m.send(u, xb, ly.PostAttnNorm)
	u.ln = ly.AttnOutLN
	return err
}

// mlpStage adds the attention output to u's residual rows and runs the
// feed-forward on them up to the down projection, whose all-reduce it
// starts: x += Wdown·(silu(Wgate·norm(x)) ⊙ Wup·norm(x)) once settled. The
// whole block is one pool job (Pool.MLP).
func (m *Model) mlpStage(u *ubatch, l int) error {
	if err := m.settle(u); err != nil {
		return err
	}
	if u.rows == 0 {
		return nil
	}
	c, s, ly := &m.local, u.s, &m.layers[l]
	nr := u.rows
	d, h := nr*c.Dim, nr*c.HiddenDim
	xb := s.xb[:d]
	if ly.MoE != nil {
		m.moe(s, ly, u.x[:d], xb, nr)
		return m.send(u, xb, ly.PostFFNNorm)
	}
	f := &ly.FFN
	if f.Gate.W.Rows == 0 { // BERT's plain feed-forward: Down·GELU(Up·x + b) + b
		up := s.up[:h]
		m.pool.MatMul(up, f.Up.W, u.x[:d], nr)
		addBias(up, f.Up.Bias)
		kernels.GELU(up, up)
		m.pool.MatMul(xb, f.Down.W, up, nr)
		addBias(xb, f.Down.Bias)
		err := m.send(u, xb, ly.PostFFNNorm)
		u.ln = ly.OutLN
		return err
	}
	s.mlp = kernels.MLP{Norm: ly.FFNNorm, Eps: c.RMSEps, Gate: f.Gate.W, Up: f.Up.W, Down: f.Down.W, Act: f.Act}
	s.mlpb = kernels.MLPBuffers{Dst: xb, X: u.x[:d], Normed: xb, Gate: s.gate[:h], Up: s.up[:h]}
	m.pool.MLP(&s.mlp, &s.mlpb, nr)
	return m.send(u, xb, ly.PostFFNNorm)
}

// send starts the all-reduce of u's partial sum xb (this rank's share of
// the block output), to be added to u's residual rows when settled, after
// an RMSNorm by post when it is not nil.
func (m *Model) send(u *ubatch, xb, post []float32) error {
	req, err := m.tp.start(xb)
	if err != nil {
		return err
	}
	u.pend, u.sum, u.add, u.post = req, xb, u.x[:len(xb)], post
	return nil
}

// settle waits for u's all-reduce in flight, if any, and adds the sum to
// its residual rows.
func (m *Model) settle(u *ubatch) error {
	if u.add == nil {
		return nil
	}
	if err := m.tp.wait(u.pend); err != nil {
		return err
	}
	if u.post != nil {
		kernels.RMSNorm(u.sum, u.sum, u.post, m.local.RMSEps)
	}
	kernels.Add(u.add, u.sum)
	if ln := u.ln; ln != nil {
		d := m.local.Dim
		for r := 0; r < len(u.add); r += d {
			kernels.LayerNorm(u.add[r:r+d], u.add[r:r+d], ln.W, ln.B, m.local.RMSEps)
		}
	}
	u.pend, u.sum, u.add, u.post, u.ln = nil, nil, nil, nil, nil
	return nil
}

// addBias adds bias (nil: nothing) to every row of x.
func addBias(x, bias []float32) {
	if bias == nil {
		return
	}
	for r := 0; r < len(x); r += len(bias) {
		kernels.Add(x[r:r+len(bias)], bias)
	}
}

// finish settles u's last all-reduce and computes its logits (rank 0).
func (m *Model) finish(u *ubatch) error {
	if err := m.settle(u); err != nil {
		return err
	}
	rows := len(u.b.LogitIndices)
	if m.enc != nil { // no head: the last block's output is the hidden state
		copy(u.b.Hidden, u.x[:rows*m.local.Dim])
		return nil
	}
	if rows > 0 && m.tp.logits() {
		s, c := u.s, &m.local
		s.mm[0] = kernels.MatMulOut{Dst: u.logits, W: m.output}
		m.pool.NormMatMulN(s.mm[:1], s.logitX, u.x[:rows*c.Dim], m.outNorm, c.RMSEps, rows)
		copy(u.b.Hidden, s.logitX[:rows*c.Dim]) // embeddings: the normed rows (nothing when Hidden is nil)
		if m.softcap > 0 {
			softcap(u.logits, m.softcap)
		}
	}
	return nil
}

// softcap caps logits: x = cap·tanh(x/cap), as ggml_scale, ggml_tanh,
// ggml_scale.
func softcap(x []float32, c float32) {
	inv := 1 / c
	for i, v := range x {
		x[i] = float32(math.Tanh(float64(v*inv))) * c
	}
}
