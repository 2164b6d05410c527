package kernels

import (
	"runtime"
	"sync"
	"sync/atomic"
)

// Pool is a fixed set of worker goroutines, started once by NewPool, that
// run the parallel kernels (MatMul by blocks of output and activation
// rows, Attention by (query tile, head)). No goroutine is started per call: a call publishes the job by
// bumping an epoch that idle helpers spin on for a while (spinTime) before
// they park on a condition variable, the caller works too, and tasks are
// claimed from a shared counter; the caller then spins until every helper
// has left the job; a helper that wakes after the caller has claimed every
// task does not join, so the caller never waits for a helper that is late.
// Kernel calls of a forward pass follow each other within microseconds, so
// helpers are normally caught spinning, and a publish then costs one atomic
// add. Every task writes a disjoint part of the output and computes it in a
// fixed order, so results are bit-identical for any thread count.
//
// A Pool also owns the scratch buffers of its kernels (quantized
// activations, attention accumulators), which grow to the largest call and are
// reused. Calls are serialised by a mutex: a Pool runs one kernel at a time.
type Pool struct {
	impl    *impl
	threads int

	mu       sync.Mutex    // held for the whole of a kernel call
	helpers  []helper      // (threads-1) parking state of each helper
	parkMu   sync.Mutex    // guards parking on parkCond
	parkCond *sync.Cond    // signalled by publish
	job      job           // current job, set before the epoch is bumped
	ntasks   int64         // tasks in the current job
	next     atomic.Int64  // next unclaimed task
	epoch    atomic.Uint64 // bumped to publish a job (or the stop) to the helpers
	state    atomic.Int64  // helpers inside the current job, | jobClosed once the caller is done
	sleepers atomic.Int32  // helpers parked or about to park (counted under parkMu)
	stop     atomic.Bool   // set by Close before its last epoch bump
	closed   bool

	between func() // run by the caller between the tasks it takes (SetBetween)

	scratch []workerScratch // (threads) per-worker buffers
	multi   multiJob        // MatMul, MatMulN
	at      attentionJob
	fused   fusedJobs     // NormMatMulN, MLP, AttentionMatMul
	moe     moeJobs       // MoE
	jobs    atomic.Uint64 // pool jobs run (Jobs)
}

// job is a kernel split into independent tasks.
type job interface {
	run(worker, task int)
}

// workerScratch is owned by one worker.
type workerScratch struct {
	offs   []int               // (context) offset of each position's K/V row
	lo     int                 // the current token's first attended position (its window's start)
	q      []float32           // (headDim) query rounded to the cache's precision
	scores []float32           // (context rounded up to 16) AttnMatMul probabilities
	lanes  []float32           // (64, headDim) AttnMatMul value accumulators, lane p mod 64
	acc    []float32           // (headDim) AttnFlash accumulator, F32 and BF16 caches
	acc16  []uint16            // (headDim) AttnFlash accumulator, F16 and F32 caches
	k16    []uint16            // (headDim) halves: the query being rounded to F16; AttnFlash: an F32 cache's K or V row
	block  []float32           // (16, headDim rounded up to 16) AttnTiled: one converted block of K or V rows
	bases  [tiledChunk]int     // AttnTiled on F16 rows in place: the first row of each block of a chunk
	vrows  valueRows           // AttnTiled on F16 rows in place: the rows of one valuesN call
	smax   [maxF16Rows]float32 // AttnTiled on F16 rows in place: the largest scores of one scoresN call
	head   int                 // AttnMatMul, AttnFlash: the query head of the current token (its sink)
}

// NewPool starts a pool of threads workers (the caller counts as one).
// threads ≤ 0 means runtime.GOMAXPROCS(0).
func NewPool(threads int) *Pool { return newPool(threads, def) }

func newPool(threads int, k *impl) *Pool {
	if threads <= 0 {
		threads = runtime.GOMAXPROCS(0)
	}
	p := &Pool{impl: k, threads: threads, scratch: make([]workerScratch, threads)}
	p.helpers = make([]helper, threads-1)
	p.parkCond = sync.NewCond(&p.parkMu)
	for i := range p.helpers {
		go p.helper(i + 1)
	}
	return p
}

// SetBetween sets f (nil: none) to run on the calling goroutine between
// the tasks it takes of every kernel call: dual-batch overlap drives an
// all-reduce in flight from there (MPI advances a nonblocking collective
// only inside MPI calls), so a long matmul does not stall it. f must be
// fast and must not use the pool. Set it while no kernel runs.
func (p *Pool) SetBetween(f func()) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.between = f
}

// Jobs returns the number of pool jobs run so far: each is one publish to
// the helpers and one wait for them to finish (a synchronisation of every
// worker). A job that runs on the caller alone (one task, or one thread)
// counts too.
func (p *Pool) Jobs() uint64 { return p.jobs.Load() }

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
	p.stop.Store(true)
	p.publish()
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
	p.jobs.Add(1)
	p.job, p.ntasks = j, int64(ntasks)
	p.next.Store(0)
	if ntasks == 1 || len(p.helpers) == 0 {
		p.drain(0)
		p.job = nil
		return
	}
	p.state.Store(0)
	p.publish()
	p.drain(0)
	// Every task is claimed: close the job to latecomers and wait only for
	// the helpers that joined it.
	p.state.Or(jobClosed)
	p.awaitHelpers()
	p.job = nil
}

func (p *Pool) drain(worker int) {
	for {
		t := p.next.Add(1) - 1
		if t >= p.ntasks {
			return
		}
		p.job.run(worker, int(t))
		if worker == 0 && p.between != nil {
			p.between()
		}
	}
}
