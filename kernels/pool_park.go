package kernels

import (
	"runtime"
	"sync/atomic"
	"time"
)

// jobClosed is set in Pool.state when the caller has finished draining a
// job: no helper may join it any more.
const jobClosed = 1 << 32

// spinTime bounds busy-waiting: how long a helper polls the epoch before it
// parks, and the caller polls the helpers' completion before it starts
// yielding its thread. It covers the gaps between the pool jobs of a
// forward pass (serial kernels of a few microseconds), so helpers are
// caught spinning there. Longer budgets (milliseconds, to spin across decode
// steps too) measured much worse when the machine is oversubscribed: a
// helper that never sleeps is preempted by the OS more often, and when it is
// preempted inside a task the caller waits for a whole time slice; a
// wake-up once per step costs far less.
const spinTime = 50 * time.Microsecond

// spinCheck is how many polls pass between clock reads.
const spinCheck = 64

// helper is one helper goroutine's parking state.
//
// Parking protocol (a condition variable): a helper counts itself in
// Pool.sleepers under parkMu and then re-reads the epoch before it waits;
// the publisher bumps the epoch and then, only if sleepers is not zero,
// broadcasts under parkMu. Both are sequentially consistent atomics, so
// either the publisher sees the sleeper and wakes it, or the sleeper
// counted itself after the bump and sees the new epoch: no wake-up can be
// lost, and a publish with every helper spinning costs one atomic add.
type helper struct {
	parked atomic.Bool // waiting on the condition (observability, tests)
}

// publish bumps the epoch and wakes the parked helpers.
func (p *Pool) publish() {
	p.epoch.Add(1)
	if p.sleepers.Load() == 0 {
		return
	}
	p.parkMu.Lock()
	p.parkCond.Broadcast()
	p.parkMu.Unlock()
}

// helper runs every published job until the pool stops.
func (p *Pool) helper(id int) {
	h := &p.helpers[id-1]
	var seen uint64
	for {
		seen = p.await(h, seen)
		if p.stop.Load() {
			return
		}
		if p.join() {
			p.drain(id)
			p.state.Add(-1)
		}
	}
}

// join enters the current job unless the caller has closed it.
func (p *Pool) join() bool {
	for {
		v := p.state.Load()
		if v&jobClosed != 0 {
			return false
		}
		if p.state.CompareAndSwap(v, v+1) {
			return true
		}
	}
}

// await returns the first epoch different from seen, spinning for up to
// spinTime and then parking.
func (p *Pool) await(h *helper, seen uint64) uint64 {
	var s spinner
	for !s.expired() {
		if e := p.epoch.Load(); e != seen {
			return e
		}
	}
	p.parkMu.Lock()
	defer p.parkMu.Unlock()
	p.sleepers.Add(1)
	for p.epoch.Load() == seen {
		h.parked.Store(true)
		p.parkCond.Wait()
		h.parked.Store(false)
	}
	p.sleepers.Add(-1)
	return p.epoch.Load()
}

// awaitHelpers spins until every helper that joined the closed job has
// left it, yielding the thread once it has waited for spinTime (a helper's
// goroutine was descheduled: let it run).
func (p *Pool) awaitHelpers() {
	var s spinner
	for p.state.Load() != jobClosed {
		if s.expired() {
			runtime.Gosched()
		}
	}
}

// spinner times a busy-wait: expired reports, once per poll, whether
// spinTime has passed since the first clock read, reading the clock only
// every spinCheck polls.
type spinner struct {
	polls int
	start time.Time
}

func (s *spinner) expired() bool {
	s.polls++
	if s.polls%spinCheck != 0 {
		return false
	}
	if s.start.IsZero() {
		s.start = time.Now()
		return false
	}
	return time.Since(s.start) > spinTime
}
