package kernels

import (
	"sync"
	"sync/atomic"
)

// maxPhases bounds the phases of one fused pool job.
const maxPhases = 6

// phasedJob runs several jobs that depend on each other as one pool job:
// phase i's tasks follow phase i−1's in the task numbering, and a worker
// that claims a task of phase i first waits until every task of phase i−1
// has finished. Tasks are claimed in increasing order, so by then every
// earlier task is claimed by a running worker: the wait always ends (the
// earliest unfinished phase never waits), with one thread as with many.
// Since phase i−1's tasks themselves waited for phase i−2, a finished phase
// i−1 means every earlier phase has finished too (empty phases are never
// added, so that this chain is unbroken).
//
// A phase boundary replaces a pool job's end and the next one's start (the
// caller closing the job, waiting for every helper to leave it, running
// the serial work between the two kernels, publishing the next job and the
// helpers joining it) by one counter that the workers read: the workers
// never leave the job, and the work between kernels runs as tasks.
// Results do not depend on the grouping: every task computes exactly what
// the separate kernels compute.
type phasedJob struct {
	jobs  [maxPhases]job
	fins  [maxPhases]phaseFinisher // the jobs that finish their phase, or nil
	start [maxPhases + 1]int       // first task of each phase; start[n] = total
	ran   [maxPhases]paddedCount   // tasks run
	done  [maxPhases]paddedCount   // tasks run, once the phase's finish has run
	ahead [maxPhases]paddedCount   // tasks whose weights a waiting worker prefetched
	n     int                      // phases added

	// Parking (the pool's protocol, see helper): a waiter counts itself in
	// sleepers under mu and re-reads its phase's count before it waits;
	// the worker that finishes a phase broadcasts under mu if sleepers is
	// not zero. No wake-up is lost, and a phase end costs one atomic load
	// when nobody sleeps.
	mu       sync.Mutex
	cond     *sync.Cond
	sleepers atomic.Int32
}

// phaseFinisher is a phase's job with work to do once all its tasks have
// run (completing records that depend on every row, say): the worker that
// runs the phase's last task runs finishPhase before the next phase may
// start, so that it costs no synchronisation of its own.
type phaseFinisher interface{ finishPhase() }

// prefetcher is a phase's job whose tasks stream weights: prefetch hints
// that task's weights are read soon and returns how many bytes it hinted.
// A worker waiting for the phase before issues the hints, task by task in
// the order the tasks are claimed, so that the memory bus, idle while the
// phase before ends (a norm, the attention, a conversion), already
// streams the weights the next phase reads first. Hints change no result.
type prefetcher interface{ prefetch(task int) int }

// aheadBudget bounds the bytes one wait prefetches: half a core's L2 on
// the machines measured, so the hinted lines are still there when read.
const aheadBudget = 512 << 10

// paddedCount is a task counter on its own cache line.
type paddedCount struct {
	atomic.Int64
	_ [56]byte
}

// reset empties the job.
func (pj *phasedJob) reset() {
	clear(pj.jobs[:])
	clear(pj.fins[:])
	pj.n, pj.start[0] = 0, 0
}

// add appends a phase of tasks tasks of j; a phase of no tasks is skipped.
func (pj *phasedJob) add(j job, tasks int) {
	if tasks <= 0 {
		return
	}
	if pj.n == maxPhases {
		panic("kernels: too many phases in a fused job")
	}
	pj.jobs[pj.n] = j
	pj.fins[pj.n], _ = j.(phaseFinisher)
	pj.ran[pj.n].Store(0)
	pj.done[pj.n].Store(0)
	pj.ahead[pj.n].Store(0)
	pj.start[pj.n+1] = pj.start[pj.n] + tasks
	pj.n++
}

// tasks returns the number of tasks over every phase.
func (pj *phasedJob) tasks() int { return pj.start[pj.n] }

func (pj *phasedJob) run(worker, task int) {
	i := 0
	for pj.start[i+1] <= task {
		i++
	}
	if i > 0 {
		pj.await(i - 1)
	}
	pj.jobs[i].run(worker, task-pj.start[i])
	want := int64(pj.start[i+1] - pj.start[i])
	if pj.ran[i].Add(1) != want {
		return
	}
	if pj.fins[i] != nil {
		pj.fins[i].finishPhase()
	}
	pj.done[i].Store(want)
	if pj.sleepers.Load() != 0 {
		pj.mu.Lock()
		pj.cond.Broadcast()
		pj.mu.Unlock()
	}
}

// await waits until every task of phase i has finished: it prefetches
// the next phase's first weights (prefetcher) up to aheadBudget, then
// spins for spinTime, then parks (the worker of a late task was
// descheduled: spinning on would take the CPU it needs when the machine
// is oversubscribed).
func (pj *phasedJob) await(i int) {
	want := int64(pj.start[i+1] - pj.start[i])
	next, _ := pj.jobs[i+1].(prefetcher)
	tasks := int64(pj.start[i+2] - pj.start[i+1])
	budget := aheadBudget
	var s spinner
	for pj.done[i].Load() != want {
		if next != nil && budget > 0 {
			if t := pj.ahead[i+1].Add(1) - 1; t < tasks {
				budget -= next.prefetch(int(t))
				continue
			}
			next = nil
		}
		if s.expired() {
			pj.park(i, want)
			return
		}
	}
}

// park waits on the condition until phase i has finished.
func (pj *phasedJob) park(i int, want int64) {
	pj.mu.Lock()
	defer pj.mu.Unlock()
	if pj.cond == nil {
		pj.cond = sync.NewCond(&pj.mu)
	}
	pj.sleepers.Add(1)
	for pj.done[i].Load() != want {
		pj.cond.Wait()
	}
	pj.sleepers.Add(-1)
}

// runPhased runs pj on the workers. p.mu must be held.
func (p *Pool) runPhased(pj *phasedJob) {
	p.run(pj, pj.tasks())
	pj.reset()
}
