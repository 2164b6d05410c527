package kernels

import "fmt"

// Expert is one expert of a mixture-of-experts feed-forward: a gated
// feed-forward Down·(act(Gate·h) ⊙ Up·h) without a norm of its own.
type Expert struct {
	Gate, Up, Down Weight // Gate, Up (hidden, dim); Down (dim, hidden)
	// Optional biases, nil for none (gpt-oss's ffn_{gate,up,down}_exps.bias):
	// each added to its product before the activation (gate, up) or the
	// weighting (down), one float32 rounding each, as llama.cpp's
	// ggml_add_id in build_moe_ffn.
	GateBias, UpBias []float32 // (hidden)
	DownBias         []float32 // (dim)
}

// MoE is a mixture-of-experts feed-forward's experts, all of one shape
// (each may have its own weight types and preparation: Fast, Repack,
// Pack). The router, the choice of experts and their weights are the
// caller's (MoEBuffers.IDs, Weights).
type MoE struct {
	Experts []Expert
	Act     GLU // the gates' activation; the zero value is SwiGLU
}

// MoEBuffers are the activations of one MoE call: n tokens choosing K
// experts each.
type MoEBuffers struct {
	Dst []float32 // (n, dim) the output; may be X
	X   []float32 // (n, dim) the input (already normalised)
	// IDs are each token's experts by rank of the choice, (n, K); a
	// negative id is an expert this MoE does not hold (expert parallelism:
	// another rank's), skipped.
	IDs     []int32
	Weights []float32 // (n, K) their weights
	K       int
}

// MoE runs the mixture of experts m on n tokens as one pool job, grouping
// the tokens by expert as llama.cpp's MUL_MAT_ID does, so that each
// expert's weights are read once for all the tokens routed to it:
//
//  1. every (token, choice) row is gathered into its expert's rows
//     (experts in id order, each one's tokens in batch order) and
//     converted for the expert's gate and up weights;
//  2. each used expert's gate and up products, its activation, and the
//     conversion of the result for Down (MLP's tasks, over every used
//     expert in one phase);
//  3. each used expert's down product (one phase for all);
//  4. per token, Dst = Σ_r Weights[r]·y_r in the rank order of the
//     choices: (w_0·y_0 + w_1·y_1) + w_2·y_2 …, each product and sum
//     rounded to float32, as llama.cpp's ggml_mul of the expert outputs by
//     their weights followed by its ggml_add chain. Choices of experts
//     not held here (negative ids) are left out of the sum, which starts
//     at the first held one; a token with none gets zeros.
//
// Each row of an expert's products depends only on that row and the
// expert's weights (the kernels' per-row contract) and the sum is in the
// choices' order, so a token's output is bit-identical whatever other
// tokens share the call or its experts, for any thread count.
//
// It panics on bad shapes, bad expert ids or unsupported weight types.
func (p *Pool) MoE(m *MoE, b *MoEBuffers, n int) {
	checkMoE(p.impl, m, b, n)
	if n == 0 {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	j := &p.moe
	j.plan(p, m, b, n)
	f := &p.fused
	f.phased.add(&j.conv, len(j.convTasks))
	f.phased.add(&j.glu, j.glu.total())
	f.phased.add(&j.downConv, len(j.downConv.experts))
	f.phased.add(&j.down, j.down.total())
	f.phased.add(&j.comb, j.comb.tasks())
	p.runPhased(&f.phased)
	j.release()
}

func checkMoE(k *impl, m *MoE, b *MoEBuffers, n int) {
	if len(m.Experts) == 0 || b.K <= 0 {
		panic(fmt.Sprintf("kernels: MoE of %d experts choosing %d", len(m.Experts), b.K))
	}
	e0 := &m.Experts[0]
	dim, hidden := e0.Gate.Cols, e0.Gate.Rows
	for i := range m.Experts {
		e := &m.Experts[i]
		if e.Gate.Rows != hidden || e.Up.Rows != hidden || e.Gate.Cols != dim || e.Up.Cols != dim ||
			e.Down.Rows != dim || e.Down.Cols != hidden {
			panic(fmt.Sprintf("kernels: MoE expert %d: gate %d×%d, up %d×%d, down %d×%d; expert 0's gate is %d×%d",
				i, e.Gate.Rows, e.Gate.Cols, e.Up.Rows, e.Up.Cols, e.Down.Rows, e.Down.Cols, hidden, dim))
		}
		if e.GateBias != nil && len(e.GateBias) != hidden || e.UpBias != nil && len(e.UpBias) != hidden ||
			(e.DownBias != nil) != (e0.DownBias != nil) || e.DownBias != nil && len(e.DownBias) != dim {
			panic(fmt.Sprintf("kernels: MoE expert %d: biases of %d, %d, %d for %d hidden units of %d",
				i, len(e.GateBias), len(e.UpBias), len(e.DownBias), hidden, dim))
		}
		// The shapes of one token's products: the kernels' type checks.
		checkMatMul(k, nil, e.Gate, nil, 0)
		checkMatMul(k, nil, e.Up, nil, 0)
		checkMatMul(k, nil, e.Down, nil, 0)
	}
	if len(b.Dst) != n*dim || len(b.X) != n*dim || len(b.IDs) != n*b.K || len(b.Weights) != n*b.K {
		panic(fmt.Sprintf("kernels: MoE buffers: dst %d, x %d, ids %d, weights %d for %d tokens of %d choosing %d",
			len(b.Dst), len(b.X), len(b.IDs), len(b.Weights), n, dim, b.K))
	}
	for i, id := range b.IDs {
		if int(id) >= len(m.Experts) {
			panic(fmt.Sprintf("kernels: MoE: token %d chooses expert %d of %d", i/b.K, id, len(m.Experts)))
		}
	}
}

// moeJobs is the state of Pool.MoE: the grouping of the rows by expert
// and the jobs of its phases. It is scratch, reused from call to call
// under Pool.mu.
type moeJobs struct {
	k         *impl
	n, kk     int
	dim       int
	hidden    int
	x         []float32 // the caller's input
	count     []int     // (experts) rows per expert
	first     []int     // (experts) first gathered row of each expert
	slot      []int32   // (n·K) the gathered row of choice (t, r)
	src       []int32   // (n·K) the token of each gathered row
	xs        []float32 // (n·K, dim) gathered input rows
	gate      []float32 // (n·K, hidden) gate products, then the activation
	up        []float32 // (n·K, hidden) up products
	ys        []float32 // (n·K, dim) expert outputs
	ex        []moeExpert
	used      int // experts used: ex[:used]
	convTasks []moeConvTask
	conv      moeConvJob
	glu       concatJob
	downConv  moeDownConvJob
	down      concatJob
	comb      moeCombineJob
}

// moeExpert is one used expert's products over its gathered rows.
type moeExpert struct {
	row0, rows int
	mm         [3]matmulJob // gate, up, down
	acts       [3]actRows
	owners     [2]*matmulJob // the jobs converting the gathered rows
	nown       int
	glu        gluJob
}

// moeConvTask gathers and converts rows [r0, r1) of used expert e.
type moeConvTask struct{ e, r0, r1 int }

// plan groups the choices by expert and lays out every phase.
func (j *moeJobs) plan(p *Pool, m *MoE, b *MoEBuffers, n int) {
	k := p.impl
	ne, kk := len(m.Experts), b.K
	e0 := &m.Experts[0]
	j.k, j.n, j.kk, j.dim, j.hidden, j.x = k, n, kk, e0.Gate.Cols, e0.Gate.Rows, b.X
	rows := n * kk
	j.count = grow(j.count, ne)
	j.first = grow(j.first, ne)
	clear(j.count)
	for _, id := range b.IDs {
		if id >= 0 {
			j.count[id]++
		}
	}
	used, off := 0, 0
	for e, c := range j.count {
		j.first[e] = off
		off += c
		if c > 0 {
			used++
		}
	}
	j.slot = grow(j.slot, rows)
	j.src = grow(j.src, rows)
	for t := range n {
		for r := range kk {
			id := b.IDs[t*kk+r]
			if id < 0 { // another rank's expert
				j.slot[t*kk+r] = -1
				continue
			}
			s := j.first[id]
			j.first[id]++
			j.slot[t*kk+r], j.src[s] = int32(s), int32(t)
		}
	}
	j.xs = grow(j.xs, rows*j.dim)
	j.gate = grow(j.gate, rows*j.hidden)
	j.up = grow(j.up, rows*j.hidden)
	j.ys = grow(j.ys, rows*j.dim)
	if len(j.ex) < used {
		// Grown before any job points into it; the old buffers are kept.
		j.ex = append(j.ex, make([]moeExpert, used-len(j.ex))...)
	}
	j.used = used
	p.fused.subs = grow(p.fused.subs, p.threads)
	chunk := max(4, (rows+4*p.threads-1)/(4*p.threads)) // gathered rows per conversion task
	j.convTasks = j.convTasks[:0]
	j.glu.reset()
	j.down.reset()
	j.downConv.experts = j.downConv.experts[:0]
	i := 0
	for e, c := range j.count {
		if c == 0 {
			continue
		}
		x := &j.ex[i]
		w := &m.Experts[e]
		x.row0, x.rows = j.first[e]-c, c
		r0, r1 := x.row0, x.row0+c
		xs := j.xs[r0*j.dim : r1*j.dim]
		gate, up := j.gate[r0*j.hidden:r1*j.hidden], j.up[r0*j.hidden:r1*j.hidden]
		x.mm[0] = planMatmul(k, &x.acts[0], k.dotFor(w.Gate), gate, w.Gate, xs, c, p.threads)
		upAct := &x.acts[1]
		if samePrep(k, w.Gate, w.Up) {
			upAct = &x.acts[0]
		}
		x.mm[1] = planMatmul(k, upAct, k.dotFor(w.Up), up, w.Up, xs, c, p.threads)
		x.mm[2] = planMatmul(k, &x.acts[2], k.dotFor(w.Down), j.ys[r0*j.dim:r1*j.dim], w.Down, gate, c, p.threads)
		x.owners[0], x.nown = &x.mm[0], 1
		if upAct != &x.acts[0] {
			x.owners[1], x.nown = &x.mm[1], 2
		}
		x.glu = newGLUJob(k, &x.mm[0], &x.mm[1], &x.mm[2], c)
		x.glu.act = m.Act
		x.glu.gateBias, x.glu.upBias = w.GateBias, w.UpBias
		x.glu.subs = p.fused.subs
		for s := 0; s < c; s += chunk {
			j.convTasks = append(j.convTasks, moeConvTask{i, s, min(s+chunk, c)})
		}
		j.glu.add(&x.glu, x.glu.tasks())
		if !x.glu.epilogue {
			j.downConv.experts = append(j.downConv.experts, &x.mm[2])
		}
		j.down.add(&x.mm[2], x.mm[2].tasks())
		i++
	}
	j.conv = moeConvJob{j: j}
	j.comb = moeCombineJob{k: k, dst: b.Dst, ys: j.ys, slot: j.slot, w: b.Weights, n: n, kk: kk, dim: j.dim,
		rows: max(1, (n+4*p.threads-1)/(4*p.threads))}
	if m.Experts[0].DownBias != nil {
		j.comb.ids, j.comb.experts = b.IDs, m.Experts
	}
}

// release drops the references to the caller's buffers and weights.
func (j *moeJobs) release() {
	for i := range j.ex[:j.used] {
		x := &j.ex[i]
		clear(x.mm[:])
		x.owners = [2]*matmulJob{}
		x.glu = gluJob{}
	}
	j.x = nil
	j.glu.reset()
	j.down.reset()
	clear(j.downConv.experts)
	j.downConv.experts = j.downConv.experts[:0]
	j.conv = moeConvJob{}
	j.comb = moeCombineJob{}
	j.used = 0
}

// moeConvJob gathers each expert's rows and converts them for its gate
// and up weights, a task per moeConvTask.
type moeConvJob struct{ j *moeJobs }

func (c *moeConvJob) run(_, task int) {
	j := c.j
	ct := j.convTasks[task]
	x := &j.ex[ct.e]
	d := j.dim
	for r := ct.r0; r < ct.r1; r++ {
		g := x.row0 + r
		t := int(j.src[g])
		copy(j.xs[g*d:(g+1)*d], j.x[t*d:(t+1)*d])
	}
	for _, o := range x.owners[:x.nown] {
		o.convert(ct.r0, ct.r1)
	}
}

func (c *moeConvJob) finishPhase() {
	j := c.j
	for i := range j.ex[:j.used] {
		x := &j.ex[i]
		for _, o := range x.owners[:x.nown] {
			o.converted()
		}
	}
}

// moeDownConvJob converts the input of the down products whose gate tasks
// could not (gluJob.epilogue false), a task per expert.
type moeDownConvJob struct{ experts []*matmulJob }

func (c *moeDownConvJob) run(_, task int) {
	d := c.experts[task]
	d.convert(0, d.n)
	d.converted()
}

// moeCombineJob sums each token's expert outputs by their weights in the
// rank order of the choices, rows tokens per task.
type moeCombineJob struct {
	k          *impl
	dst, ys, w []float32
	slot       []int32
	n, kk, dim int
	rows       int
	ids        []int32  // the choices' experts, when they have down biases
	experts    []Expert // (their DownBias)
}

func (c *moeCombineJob) tasks() int { return (c.n + c.rows - 1) / c.rows }

func (c *moeCombineJob) run(_, task int) {
	d := c.dim
	for t := task * c.rows; t < min((task+1)*c.rows, c.n); t++ {
		out := c.dst[t*d : (t+1)*d]
		first := true
		for r := range c.kk {
			w, s := c.w[t*c.kk+r], c.slot[t*c.kk+r]
			if s < 0 { // an expert another rank holds
				continue
			}
			y := c.ys[int(s)*d:][:d]
			if c.ids != nil {
				c.k.add(y, c.experts[c.ids[t*c.kk+r]].DownBias)
			}
			if first {
				first = false
				for i, v := range y {
					out[i] = w * v
				}
				continue
			}
			for i, v := range y {
				out[i] += float32(w * v) // the product rounded first: no fused multiply-add
			}
		}
		if first { // no expert held here
			clear(out)
		}
	}
}

// concatJob runs the tasks of several jobs as one phase: jobs[i]'s tasks
// are start[i] ≤ task < start[i+1].
type concatJob struct {
	jobs  []job
	start []int
}

func (c *concatJob) reset() {
	clear(c.jobs)
	c.jobs = c.jobs[:0]
	c.start = append(c.start[:0], 0)
}

// add appends tasks tasks of j (none: skipped).
func (c *concatJob) add(j job, tasks int) {
	if tasks <= 0 {
		return
	}
	c.jobs = append(c.jobs, j)
	c.start = append(c.start, c.start[len(c.start)-1]+tasks)
}

func (c *concatJob) total() int {
	if len(c.start) == 0 {
		return 0
	}
	return c.start[len(c.start)-1]
}

// sub returns the job of task and the task's number in it.
func (c *concatJob) sub(task int) (job, int) {
	lo, hi := 0, len(c.jobs)-1
	for lo < hi {
		mid := (lo + hi + 1) / 2
		if c.start[mid] <= task {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	return c.jobs[lo], task - c.start[lo]
}

func (c *concatJob) run(worker, task int) {
	j, t := c.sub(task)
	j.run(worker, t)
}

func (c *concatJob) finishPhase() {
	for _, j := range c.jobs {
		if f, ok := j.(phaseFinisher); ok {
			f.finishPhase()
		}
	}
}

func (c *concatJob) prefetch(task int) int {
	j, t := c.sub(task)
	if p, ok := j.(prefetcher); ok {
		return p.prefetch(t)
	}
	return 0
}

// Softmax normalises every row of x (rows of cols) in place as ggml's
// soft_max without a mask or scale: the maximum subtracted, ggml's vector
// exponential on whole 16-element blocks and expf on the rest, the sum in
// float64, the row multiplied by float32(1/sum).
func Softmax(x []float32, cols int) {
	checkRows("Softmax", len(x), cols)
	for r := 0; r < len(x); r += cols {
		def.softmax(x[r : r+cols])
	}
}
