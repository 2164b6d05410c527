package kernels

// MatMulOut is one product of a MatMulN call: Dst = x · Wᵀ, Dst (n, W.Rows).
type MatMulOut struct {
	Dst []float32
	W   Weight
}

// multiTasksPerThread is the number of tasks per worker a MatMulN job aims
// at: enough for the workers to even out when one is slowed down, few
// enough that claiming a task stays cheap next to a one-token GEMV of a
// small matrix.
const multiTasksPerThread = 8

// MatMulN computes every product of outs on the same input x (n rows of
// the weights' common column count) in one pool job: one publish and one
// join instead of one per weight (the conversion of long inputs runs as
// the job's first phase). Each weight's result is bit-identical to
// MatMul's: x is converted to each weight's activation format (weights
// whose kernels read the same converted rows share one buffer), and each
// output row is computed by the same per-weight task code as MatMul's, only
// grouped differently over the workers.
//
// It panics as MatMul does on bad shapes or unsupported types.
func (p *Pool) MatMulN(outs []MatMulOut, x []float32, n int) {
	for i := range outs {
		checkMatMul(p.impl, outs[i].Dst, outs[i].W, x, n)
	}
	if n == 0 || len(outs) == 0 {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.matMulN(outs, x, nil, nil, 0, n)
}

// multiJob is MatMulN's job. Weight i has subs[i] tasks of its own
// matmulJob; consecutive ones are grouped by chunk into the tasks
// start[i] ≤ t < start[i+1] of the fused job.
type multiJob struct {
	jobs  []matmulJob // (weights) per-weight jobs, sharing converted rows
	subs  []int       // (weights) tasks of each per-weight job
	start []int       // (weights+1) first fused task of each weight
	chunk int         // per-weight tasks per fused task
	acts  []actRows   // (groups) converted activations, one per format
	owner []int       // (groups) first weight of each group
}

// plan builds the per-weight jobs for the weights of outs and returns the
// number of fused tasks. x is converted afterwards: the first job of each
// activation group (owner) converts it for the group.
func (m *multiJob) plan(p *Pool, outs []MatMulOut, x []float32, n int) int {
	k := p.impl
	m.jobs = grow(m.jobs, len(outs))
	m.subs = grow(m.subs, len(outs))
	m.start = grow(m.start, len(outs)+1)
	m.owner = m.owner[:0]
	if len(m.acts) < len(outs) {
		// Grown before any job points into it.
		m.acts = append(m.acts, make([]actRows, len(outs)-len(m.acts))...)
	}
	total := 0
	for i := range outs {
		o := &outs[i]
		dot := k.dotFor(o.W)
		g := m.group(k, outs, i)
		if g < 0 {
			g = len(m.owner)
			m.owner = append(m.owner, i)
		}
		// The weights of one group read the same buffers, which only the
		// group's first job converts (below).
		m.jobs[i] = planMatmul(k, &m.acts[g], dot, o.Dst, o.W, x, n, p.threads)
		m.subs[i] = m.jobs[i].tasks()
		total += m.subs[i]
	}
	m.chunk = max(1, total/(multiTasksPerThread*p.threads))
	t := 0
	for i := range outs {
		m.start[i] = t
		t += (m.subs[i] + m.chunk - 1) / m.chunk
	}
	m.start[len(outs)] = t
	return t
}

// group returns the activation group whose converted rows weight i can
// read, or −1 if it needs its own conversion.
func (m *multiJob) group(k *impl, outs []MatMulOut, i int) int {
	for g, o := range m.owner {
		if samePrep(k, outs[o].W, outs[i].W) {
			return g
		}
	}
	return -1
}

// release drops the references to the caller's buffers and weights.
func (m *multiJob) release() {
	clear(m.jobs)
	m.jobs = m.jobs[:0]
}

func (m *multiJob) run(worker, task int) {
	j, s0, s1 := m.sub(task)
	for s := s0; s < s1; s++ {
		j.run(worker, s)
	}
}

// sub returns the per-weight job of task and its tasks [s0, s1).
func (m *multiJob) sub(task int) (j *matmulJob, s0, s1 int) {
	i := 0
	for m.start[i+1] <= task {
		i++
	}
	s0 = (task - m.start[i]) * m.chunk
	return &m.jobs[i], s0, min(s0+m.chunk, m.subs[i])
}

// prefetch hints that task's weights are read soon (prefetcher).
func (m *multiJob) prefetch(task int) int {
	j, s0, s1 := m.sub(task)
	n := 0
	for s := s0; s < s1; s++ {
		n += j.prefetch(s)
	}
	return n
}

// samePrep reports whether weights a and b read identically
// converted activations: the same activation kind, and the same records
// for the accelerated kernels (or none for either).
func samePrep(k *impl, a, b Weight) bool {
	if a.actKind() != b.actKind() {
		return false
	}
	ga, gb := k.gemmFor(a), k.gemmFor(b)
	if ga == nil || gb == nil {
		return ga == nil && gb == nil
	}
	if ga.fast != nil || gb.fast != nil {
		return ga.fast != nil && gb.fast != nil && ga.fast.rec == gb.fast.rec && ga.fast.block == gb.fast.block
	}
	return ga == gb || ga.kq == gb.kq && ga.sAhead == gb.sAhead && ga.bias == gb.bias
}
