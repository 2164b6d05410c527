package kernels

import "fmt"

// fusedJobs is the state of the fused calls (NormMatMulN, MLP,
// AttentionMatMul): the phased job and the jobs of its phases. It is
// scratch, reused from call to call under Pool.mu.
type fusedJobs struct {
	phased phasedJob
	conv   [2]convJob
	glu    gluJob
	attn   attnProjJob
	mm     [3]matmulJob // MLP: gate, up, down; AttentionMatMul: the output projection
	acts   [3]actRows   // their converted activations
	subs   []actRow     // (threads) each worker's row view for convertCols
}

// release drops the references to the caller's buffers and weights.
func (f *fusedJobs) release() {
	for i := range f.conv {
		f.conv[i] = convJob{owners: f.conv[i].owners[:0]}
	}
	f.glu, f.attn = gluJob{}, attnProjJob{}
	clear(f.mm[:])
}

// convJob is the prologue of products: it converts the activations of its
// owners (jobs from planMatmul, each the first of the jobs reading one
// activation format), rows tokens per task, after normalising them when
// norm is set (x → normed, which the owners read). It is the conversion
// MatMul runs before its job, row for row the same arithmetic; the worker
// that runs its last task completes the records (finishPhase).
type convJob struct {
	k      *impl
	owners []*matmulJob
	x      []float32 // (n, len(norm)) rows to normalise
	normed []float32 // (n, len(norm)) their RMSNorm, the owners' input
	norm   []float32 // RMSNorm weight, or nil: the owners' input is converted as is
	eps    float32
	n      int
	rows   int // tokens per task
}

func (c *convJob) run(_, task int) {
	t0 := task * c.rows
	t1 := min(t0+c.rows, c.n)
	if d := len(c.norm); d > 0 {
		for t := t0; t < t1; t++ {
			c.k.rmsNorm(c.normed[t*d:(t+1)*d], c.x[t*d:(t+1)*d], c.norm, c.eps)
		}
	}
	for _, j := range c.owners {
		j.convert(t0, t1)
	}
}

func (c *convJob) finishPhase() {
	for _, j := range c.owners {
		j.converted()
	}
}

// addConvert adds to p.fused.phased the phase converting the activations
// of owners (n tokens), in about four tasks per thread from
// convParallelMin rows on. With norm set, the tasks first normalise x into
// normed. It uses conversion slot i of p.fused. A prologue (first) that is a single task runs on the caller at
// once, as MatMul converts: the helpers join the job once there is work
// for all (a phase of one task would have them wait for it, and for a
// caller descheduled meanwhile).
func (p *Pool) addConvert(i int, first bool, owners []*matmulJob, n int, x, normed, norm []float32, eps float32) {
	f := &p.fused
	c := &f.conv[i]
	*c = convJob{k: p.impl, owners: append(c.owners[:0], owners...), x: x, normed: normed, norm: norm, eps: eps,
		n: n, rows: n}
	if p.threads > 1 && n >= convParallelMin {
		c.rows = (n + 4*p.threads - 1) / (4 * p.threads)
	}
	tasks := (n + c.rows - 1) / c.rows
	if first && tasks == 1 {
		c.run(0, 0)
		c.finishPhase()
		return
	}
	f.phased.add(c, tasks)
}

// checkNorm panics unless x and normed are n rows of len(norm) columns.
func checkNorm(x, normed, norm []float32, n int) {
	if len(norm) == 0 || len(x) != n*len(norm) || len(normed) != len(x) {
		panic(fmt.Sprintf("kernels: RMSNorm of %d tokens: x %d, normed %d, %d-element weight",
			n, len(x), len(normed), len(norm)))
	}
}

// NormMatMulN computes normed = RMSNorm(x)·norm (rows of len(norm), as
// RMSNorm) and then MatMulN(outs, normed, n), in one pool job: the
// normalisation and the activation conversion are its first phase (on the
// caller, before the helpers are called, when they are one task: fewer
// than convParallelMin tokens). Results are bit-identical to RMSNorm
// followed by MatMulN.
//
// It panics as MatMulN does on bad shapes, or if x or normed are not n
// rows of len(norm).
func (p *Pool) NormMatMulN(outs []MatMulOut, normed, x, norm []float32, eps float32, n int) {
	checkNorm(x, normed, norm, n)
	for i := range outs {
		checkMatMul(p.impl, outs[i].Dst, outs[i].W, normed, n)
	}
	if n == 0 {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.matMulN(outs, x, normed, norm, eps, n)
}

// matMulN runs MatMulN(outs, x, n) (norm nil), or NormMatMulN: one phased
// job converting the input (on the caller if it is one task) and then
// computing the products. p.mu must be held; n > 0.
func (p *Pool) matMulN(outs []MatMulOut, x, normed, norm []float32, eps float32, n int) {
	in := x
	if norm != nil {
		in = normed
	}
	ntasks := 0
	var owners [maxOwners]*matmulJob
	o := owners[:0]
	if len(outs) > 0 {
		ntasks = p.multi.plan(p, outs, in, n)
		for _, i := range p.multi.owner {
			o = append(o, &p.multi.jobs[i])
		}
	}
	p.addConvert(0, true, o, n, x, normed, norm, eps)
	p.fused.phased.add(&p.multi, ntasks)
	p.runPhased(&p.fused.phased)
	p.multi.release()
	p.fused.release()
}

// maxOwners bounds the activation formats of one matMulN call on the
// stack; more spill to the heap.
const maxOwners = 4
