package kernels

import (
	"runtime"
	"sync"
	"sync/atomic"
)

// Pool is a fixed set of worker goroutines, started once by NewPool, that
// run the parallel kernels (MatMul by output rows, Attention by (token,
// head)). No goroutine is started per call: a call wakes idle workers, the
// caller works too, and tasks are claimed from a shared counter. Every task
// writes a disjoint part of the output and computes it in a fixed order, so
// results are bit-identical for any thread count.
//
// A Pool also owns the scratch buffers of its kernels (quantized
// activations, attention accumulators), which grow to the largest call and are
// reused. Calls are serialised by a mutex: a Pool runs one kernel at a time.
type Pool struct {
	impl    *impl
	threads int

	mu     sync.Mutex      // held for the whole of a kernel call
	start  []chan struct{} // (threads-1) wake-up signal of each helper
	wg     sync.WaitGroup  // helpers still draining the current job
	job    job             // current job, set before helpers are woken
	ntasks int64           // tasks in the current job
	next   atomic.Int64    // next unclaimed task
	closed bool

	scratch []workerScratch // (threads) per-worker buffers
	act     actRows         // MatMul: converted activations
	mm      matmulJob
	at      attentionJob
}

// job is a kernel split into independent tasks.
type job interface {
	run(worker, task int)
}

// workerScratch is owned by one worker.
type workerScratch struct {
	offs   []int     // (context) offset of each position's K/V row
	q      []float32 // (headDim) query rounded to the cache's precision
	scores []float32 // (context) AttnMatMul probabilities
	acc    []float32 // (headDim) AttnFlash accumulator, F32 and BF16 caches
	acc16  []uint16  // (headDim) AttnFlash accumulator, F16 cache
}

// NewPool starts a pool of threads workers (the caller counts as one).
// threads ≤ 0 means runtime.GOMAXPROCS(0).
func NewPool(threads int) *Pool { return newPool(threads, def) }

func newPool(threads int, k *impl) *Pool {
	if threads <= 0 {
		threads = runtime.GOMAXPROCS(0)
	}
	p := &Pool{impl: k, threads: threads, scratch: make([]workerScratch, threads)}
	p.start = make([]chan struct{}, threads-1)
	for i := range p.start {
		p.start[i] = make(chan struct{}, 1)
		go p.helper(i+1, p.start[i])
	}
	return p
}

// Threads is the number of workers, the caller included.
func (p *Pool) Threads() int { return p.threads }

// Close stops the workers. The pool must not be used afterwards.
func (p *Pool) Close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return
	}
	p.closed = true
	for _, c := range p.start {
		close(c)
	}
}

func (p *Pool) helper(id int, start <-chan struct{}) {
	for range start {
		p.drain(id)
		p.wg.Done()
	}
}

// run executes tasks 0..ntasks-1 of j on the workers and returns when all
// are done. p.mu must be held.
func (p *Pool) run(j job, ntasks int) {
	if p.closed {
		panic("kernels: Pool used after Close")
	}
	if ntasks <= 0 {
		return
	}
	p.job, p.ntasks = j, int64(ntasks)
	p.next.Store(0)
	helpers := min(len(p.start), ntasks-1)
	p.wg.Add(helpers)
	for _, c := range p.start[:helpers] {
		c <- struct{}{}
	}
	p.drain(0)
	p.wg.Wait()
	p.job = nil
}

func (p *Pool) drain(worker int) {
	for {
		t := p.next.Add(1) - 1
		if t >= p.ntasks {
			return
		}
		p.job.run(worker, int(t))
	}
}
