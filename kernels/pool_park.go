package kernels

import "sync/atomic"

// jobClosed is set in Pool.state when the caller has finished draining a
// job: no helper may join it any more.
const jobClosed = 1 << 32

// spinIters bounds busy-waiting: how many times a helper polls the epoch
// before it parks, and the caller polls the helpers' completion before it
// starts yielding its thread (a few tens of microseconds).
const spinIters = 1 << 15

// helper is one helper goroutine's parking state.
//
// Parking protocol (a condition variable): the publisher bumps the epoch,
// then broadcasts under parkMu; a helper re-reads the epoch under parkMu
// before it waits. So either the helper sees the new epoch, or it is
// already waiting when the broadcast comes: no wake-up can be lost.
type helper struct {
	parked atomic.Bool // waiting on the condition (observability, tests)
}

// publish bumps the epoch and wakes the parked helpers.
func (p *Pool) publish() {
	p.epoch.Add(1)
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

// await returns the first epoch different from seen, spinning for a while
// and then parking.
func (p *Pool) await(h *helper, seen uint64) uint64 {
	for range spinIters {
		if e := p.epoch.Load(); e != seen {
			return e
		}
	}
	p.parkMu.Lock()
	defer p.parkMu.Unlock()
	for p.epoch.Load() == seen {
		h.parked.Store(true)
		p.parkCond.Wait()
		h.parked.Store(false)
	}
	return p.epoch.Load()
}
