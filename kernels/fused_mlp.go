package kernels

import "fmt"

// MLP is a gated feed-forward block's weights: Down·(act(Gate·h) ⊙ Up·h),
// h = RMSNorm(x)·Norm (vLLM's LlamaMLP with its post-attention norm:
// gate_up_proj, SiluAndMul or GeluAndMul, down_proj).
type MLP struct {
	Norm           []float32 // (Gate.Cols) RMSNorm weight
	Eps            float32
	Gate, Up, Down Weight // Gate, Up (hidden, dim); Down (dim, hidden)
	Act            GLU    // the gate's activation; the zero value is SwiGLU
}

// MLPBuffers are the activations of one MLP call, n tokens. Dst may be
// Normed: the normalised rows are last read before the down product
// starts.
type MLPBuffers struct {
	Dst    []float32 // (n, Down.Rows) the block's output
	X      []float32 // (n, Gate.Cols) its input (the residual stream)
	Normed []float32 // (n, Gate.Cols) scratch: RMSNorm(X)·Norm
	Gate   []float32 // (n, Gate.Rows) scratch: the gate product, then silu(gate)·up
	Up     []float32 // (n, Up.Rows) scratch: the up product
}

// MLP runs the feed-forward block m on n tokens as one pool job: RMSNorm
// and the conversion of its rows for the gate and up weights (on the
// caller for a few tokens, else a phase); the gate and up products by
// blocks of hidden units, each task applying SwiGLU to the units it
// computed (or m.Act's GeGLU) and converting them for Down (a phase of its own for the
// K-quants' records and unknown formats); the down product. Results are
// bit-identical to RMSNorm,
// MatMulN of Gate and Up, SwiGLU on rows of Gate.Rows, and MatMul of Down,
// called one after another (the kernels' per-row contracts make every
// element independent of the grouping; SwiGLU's 16-element vector blocks
// start at every row's start, and the hidden blocks are multiples of them).
//
// It panics on bad shapes or unsupported weight types, as MatMul does.
func (p *Pool) MLP(m *MLP, b *MLPBuffers, n int) {
	checkMLP(p.impl, m, b, n)
	if n == 0 {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	f, k := &p.fused, p.impl
	gate, up, down := &f.mm[0], &f.mm[1], &f.mm[2]
	*gate = planMatmul(k, &f.acts[0], k.dotFor(m.Gate), b.Gate, m.Gate, b.Normed, n, p.threads)
	upAct := &f.acts[1]
	if samePrep(k, m.Gate, m.Up) {
		upAct = &f.acts[0] // converted once, by gate's conversion
	}
	*up = planMatmul(k, upAct, k.dotFor(m.Up), b.Up, m.Up, b.Normed, n, p.threads)
	*down = planMatmul(k, &f.acts[2], k.dotFor(m.Down), b.Dst, m.Down, b.Gate, n, p.threads)
	owners := [2]*matmulJob{gate, up}
	nown := 2
	if upAct == &f.acts[0] {
		nown = 1
	}
	p.addConvert(0, true, owners[:nown], n, b.X, b.Normed, m.Norm, m.Eps)
	f.glu = newGLUJob(k, gate, up, down, n)
	f.glu.act = m.Act
	f.subs = grow(f.subs, p.threads)
	f.glu.subs = f.subs
	f.phased.add(&f.glu, f.glu.tasks())
	if !f.glu.epilogue {
		p.addConvert(1, false, []*matmulJob{down}, n, nil, nil, nil, 0)
	}
	f.phased.add(down, down.tasks())
	p.runPhased(&f.phased)
	f.release()
}

func checkMLP(k *impl, m *MLP, b *MLPBuffers, n int) {
	checkNorm(b.X, b.Normed, m.Norm, n)
	if m.Gate.Rows != m.Up.Rows || m.Gate.Cols != m.Up.Cols || m.Down.Cols != m.Gate.Rows {
		panic(fmt.Sprintf("kernels: MLP shapes: gate %d×%d, up %d×%d, down %d×%d",
			m.Gate.Rows, m.Gate.Cols, m.Up.Rows, m.Up.Cols, m.Down.Rows, m.Down.Cols))
	}
	checkMatMul(k, b.Gate, m.Gate, b.Normed, n)
	checkMatMul(k, b.Up, m.Up, b.Normed, n)
	checkMatMul(k, b.Dst, m.Down, b.Gate, n)
}

// gluAlign is the hidden-unit alignment of a gluJob's blocks: a multiple
// of every kernel's row grouping (4, repackRows) and of SwiGLU's
// 16-element vector blocks.
const gluAlign = 64

// gluJob computes the gate and up products and SwiGLU: task = (block of
// rows hidden units, block of acts tokens), hidden blocks varying fastest;
// gate ends as silu(gate)·up. With epilogue, each task also converts its
// SwiGLU values for the down product (and, when it has every token, the
// records' look-ahead; else finishPhase completes them).
type gluJob struct {
	k              *impl
	gate, up, down *matmulJob
	n              int
	rows           int // hidden units per task, a multiple of gluAlign
	acts           int // tokens per task, 0 for all n
	epilogue       bool
	act            GLU
	gateBias       []float32 // (hidden) added to the gate products before act, or nil
	upBias         []float32 // (hidden) added to the up products, or nil
	subs           []actRow  // (workers) scratch row views
}

// newGLUJob lays out the tasks of gate and up (planned by planMatmul):
// gate's row blocks rounded up to gluAlign and to down's activation
// blocks, its token blocks.
func newGLUJob(k *impl, gate, up, down *matmulJob, n int) gluJob {
	align := max(gluAlign, down.act.kind.block()) // both powers of two
	rows := (gate.rowsPerTask + align - 1) / align * align
	acts := gate.actsPerTask
	if acts >= n {
		acts = 0
	}
	return gluJob{k: k, gate: gate, up: up, down: down, n: n, rows: rows, acts: acts,
		epilogue: down.colsEpilogue(align)}
}

// finishPhase completes the records of the down product's input when the
// tasks, holding a part of the tokens, could not.
func (g *gluJob) finishPhase() {
	if g.epilogue && g.acts > 0 {
		g.down.converted()
	}
}

func (g *gluJob) tasks() int {
	nr := (g.gate.w.Rows + g.rows - 1) / g.rows
	if g.acts == 0 {
		return nr
	}
	return nr * ((g.n + g.acts - 1) / g.acts)
}

// prefetch hints that task's gate and up rows are read soon (prefetcher).
func (g *gluJob) prefetch(task int) int {
	r0, r1, t0, _ := taskGrid(task, g.gate.w.Rows, g.rows, g.n, g.acts)
	if t0 > 0 {
		return 0 // the rows of a later token block's task were read before
	}
	a, b := g.gate.weightRows(r0, r1), g.up.weightRows(r0, r1)
	prefetchBytes(a)
	prefetchBytes(b)
	return len(a) + len(b)
}

func (g *gluJob) run(worker, task int) {
	hidden := g.gate.w.Rows
	r0, r1, t0, t1 := taskGrid(task, hidden, g.rows, g.n, g.acts)
	g.gate.compute(r0, r1, t0, t1)
	g.up.compute(r0, r1, t0, t1)
	for t := t0; t < t1; t++ {
		row := g.gate.dst[t*hidden:]
		up := g.up.dst[t*hidden+r0 : t*hidden+r1]
		if g.gateBias != nil {
			g.k.add(row[r0:r1], g.gateBias[r0:r1])
		}
		if g.upBias != nil {
			g.k.add(up, g.upBias[r0:r1])
		}
		g.k.glu(g.act, row[r0:r1], row[r0:r1], up)
	}
	if g.epilogue {
		g.down.convertCols(&g.subs[worker], t0, t1, r0, r1)
		if g.acts == 0 {
			g.down.sAheadCols(r0, r1)
		}
	}
}
