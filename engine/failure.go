package engine

import (
	"errors"
	"fmt"
	"sync"
)

// The engine's failure state (vLLM's engine-dead behaviour). A tensor-parallel
// engine whose ranks stop answering cannot run another step: the collectives of
// a step that timed out or failed leave the ranks out of step for good. On the
// first such failure (a step's broadcast or forward pass, or the heartbeat
// while idle, see tp.go) the engine marks itself failed: every live request
// ends with an error wrapping ErrEngineFailed, AddRequest refuses new ones with
// it, the loop stops, and Dead is closed so that the process can report it
// (/health 503) and exit non-zero, letting mpirun or a supervisor end the job
// and restart it. A single-process engine keeps failing only the step's
// requests, as before: nothing is shared that a failed step could leave
// inconsistent.

// ErrEngineFailed is wrapped by Failed's error and by the errors of the
// requests a failed engine ended or refused.
var ErrEngineFailed = errors.New("the engine failed and cannot serve requests")

// failure is the engine's failure state; its zero value is healthy.
type failure struct {
	once sync.Once
	err  error         // set once, before dead is closed
	dead chan struct{} // closed by fail
	mu   sync.Mutex    // guards lazy creation of dead
}

func (f *failure) ch() chan struct{} {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.dead == nil {
		f.dead = make(chan struct{})
	}
	return f.dead
}

// Fail marks the engine failed with cause (the first cause wins) and wakes its
// loop, which ends every live request with the failure and stops. Safe from
// any goroutine; the loop may be inside a step, which then ends its requests
// when the step returns.
func (e *Engine) Fail(cause error) {
	e.fail.once.Do(func() {
		e.fail.mu.Lock()
		e.fail.err = fmt.Errorf("%w: %w", ErrEngineFailed, cause)
		e.fail.mu.Unlock()
		close(e.fail.ch())
	})
	select {
	case e.wake <- struct{}{}:
	default:
	}
}

// Failed returns the engine's failure (wrapping ErrEngineFailed and its
// cause), or nil while it is healthy. Safe from any goroutine.
func (e *Engine) Failed() error {
	e.fail.mu.Lock()
	defer e.fail.mu.Unlock()
	return e.fail.err
}

// Dead is closed when the engine fails.
func (e *Engine) Dead() <-chan struct{} { return e.fail.ch() }

// fatal marks the engine failed when a step's error leaves a tensor-parallel
// group out of step, and returns the error its requests end with.
func (e *Engine) fatal(err error) error {
	if e.cfg.tpRanks() == 1 {
		return err
	}
	e.Fail(err)
	return e.Failed()
}

// stopFailed ends the loop of a failed engine: later commands are refused and
// every live request ends with the failure.
func (e *Engine) stopFailed() {
	e.mu.Lock()
	e.closed = true
	e.mu.Unlock()
	e.drain()
	err := e.Failed()
	for id, r := range e.reqs {
		e.sched.Abort(id)
		e.finishRequest(r, FinishAbort, err)
	}
	e.publishStats()
}
