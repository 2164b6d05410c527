package kernels

import "sync/atomic"

// spinIters bounds busy-waiting: how many times a helper polls the epoch
// before it parks, and the caller polls the helpers' completion before it
// starts yielding its thread (a few tens of microseconds).
const spinIters = 1 << 15

// helper is one helper goroutine's parking state.
//
// Parking protocol: a helper sets parked, then re-reads the epoch; the
// publisher bumps the epoch, then takes parked back with a CAS and sends one
// token on wake. Whichever of the two CASes wins decides whether a token is
// sent, so a parked helper is always woken and no token is left over.
type helper struct {
	wake   chan struct{} // (1) token from the publisher
	parked atomic.Bool
}

// publish bumps the epoch and wakes the parked helpers.
func (p *Pool) publish() {
	p.epoch.Add(1)
	for i := range p.helpers {
		h := &p.helpers[i]
		if h.parked.Load() && h.parked.CompareAndSwap(true, false) {
			h.wake <- struct{}{}
		}
	}
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
		p.drain(id)
		p.pending.Add(-1)
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
	h.parked.Store(true)
	if e := p.epoch.Load(); e != seen {
		if !h.parked.CompareAndSwap(true, false) {
			<-h.wake // the publisher took parked first: its token is ours
		}
		return e
	}
	<-h.wake
	return p.epoch.Load()
}
