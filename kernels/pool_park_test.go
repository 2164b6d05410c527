package kernels

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"
)

// TestPoolStress publishes many jobs of random sizes, with pauses long
// enough for helpers to park between some of them, and checks that every
// task of every job runs exactly once.
func TestPoolStress(t *testing.T) {
	r := newRand(21)
	for _, threads := range []int{2, 3, 5} {
		p := NewPool(threads)
		for round := range 300 {
			n := r.IntN(20)
			wantEachTaskOnce(t, p, n, fmt.Sprintf("%d threads, round %d", threads, round))
			if round%50 == 0 {
				time.Sleep(2 * time.Millisecond) // helpers park
			}
		}
		p.Close()
	}
}

// TestPoolParksIdleHelpers: after a pause, every helper is parked on its
// channel instead of spinning.
func TestPoolParksIdleHelpers(t *testing.T) {
	p := NewPool(3)
	defer p.Close()
	j := &countJob{hits: make([]atomic.Int32, 8)}
	p.mu.Lock()
	p.run(j, 8)
	p.mu.Unlock()
	deadline := time.Now().Add(5 * time.Second)
	for {
		parked := 0
		for i := range p.helpers {
			if p.helpers[i].parked.Load() {
				parked++
			}
		}
		if parked == len(p.helpers) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d helpers parked after 5s", parked, len(p.helpers))
		}
		time.Sleep(time.Millisecond)
	}
}

// BenchmarkPoolDispatch measures the round trip of a job of one tiny task
// per worker: publishing, the helpers joining, and the completion wait.
func BenchmarkPoolDispatch(b *testing.B) {
	p := NewPool(0)
	defer p.Close()
	j := &countJob{hits: make([]atomic.Int32, p.Threads())}
	for b.Loop() {
		p.mu.Lock()
		p.run(j, p.Threads())
		p.mu.Unlock()
	}
}

// BenchmarkPoolRoundTrip measures a job every worker must take part in
// (each task waits until all of them have started): publishing, every
// helper's pick-up and the completion wait, the fixed cost of one
// parallel kernel call.
func BenchmarkPoolRoundTrip(b *testing.B) {
	p := NewPool(0)
	defer p.Close()
	if p.Threads() < 2 {
		b.Skip("needs 2 threads")
	}
	j := &barrierJob{threads: int64(p.Threads())}
	for b.Loop() {
		j.arrived.Store(0)
		p.mu.Lock()
		p.run(j, p.Threads())
		p.mu.Unlock()
	}
}

// barrierJob: every task spins until all threads tasks have started.
type barrierJob struct {
	arrived atomic.Int64
	threads int64
}

func (j *barrierJob) run(_, _ int) {
	j.arrived.Add(1)
	for j.arrived.Load() < j.threads {
	}
}
