package kernels

import (
	"sync/atomic"
	"testing"
	"time"
)

// orderJob is a phase of TestPhasedJobOrder: each task checks that the
// previous phase has run all its tasks and its finish, then counts itself.
type orderJob struct {
	prev     *orderJob
	tasks    int
	ran      atomic.Int64
	finished atomic.Int64
	bad      *atomic.Int64
	sleep    time.Duration
}

func (o *orderJob) run(_, _ int) {
	if o.prev != nil && (o.prev.ran.Load() != int64(o.prev.tasks) || o.prev.finished.Load() != 1) {
		o.bad.Add(1)
	}
	if o.sleep > 0 {
		time.Sleep(o.sleep)
	}
	o.ran.Add(1)
}

func (o *orderJob) finishPhase() {
	if o.ran.Load() != int64(o.tasks) {
		o.bad.Add(1)
	}
	o.finished.Add(1)
}

// TestPhasedJobOrder: a phase's tasks start only once every task of the
// previous phase and its finish have run, the finish runs once, on 1 to 4
// threads, with waits long enough for the workers to park; empty phases
// are skipped.
func TestPhasedJobOrder(t *testing.T) {
	for threads := 1; threads <= 4; threads++ {
		p := NewPool(threads)
		var bad atomic.Int64
		var phases []*orderJob
		for i, n := range []int{1, 7, 0, 3, 1, 5} {
			o := &orderJob{tasks: n, bad: &bad}
			if i == 1 {
				o.sleep = 3 * spinTime // the next phase's workers park
			}
			if n > 0 && len(phases) > 0 {
				o.prev = phases[len(phases)-1]
			}
			if n > 0 {
				phases = append(phases, o)
			}
		}
		p.mu.Lock()
		for _, o := range phases {
			p.fused.phased.add(o, o.tasks)
		}
		p.fused.phased.add(&orderJob{bad: &bad}, 0)
		if got := p.fused.phased.tasks(); got != 17 {
			t.Fatalf("%d tasks, want 17", got)
		}
		p.runPhased(&p.fused.phased)
		p.mu.Unlock()
		p.Close()
		for i, o := range phases {
			if o.ran.Load() != int64(o.tasks) || o.finished.Load() != 1 {
				t.Fatalf("%d threads: phase %d ran %d of %d tasks, finished %d times", threads, i, o.ran.Load(), o.tasks, o.finished.Load())
			}
		}
		if bad.Load() != 0 {
			t.Fatalf("%d threads: %d tasks started before the previous phase was done", threads, bad.Load())
		}
	}
}
