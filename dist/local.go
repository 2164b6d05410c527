package dist

import (
	"sync/atomic"
	"time"
)

// Local is the single-rank Comm: rank 0 of 1. Broadcast returns its
// message, the reductions leave x as it is (the sum over one rank), and
// requests are complete when returned. It is what a run without tensor
// parallelism uses, so the code paths are the same with one rank.
type Local struct {
	closed atomic.Bool
}

// NewLocal returns a single-rank Comm.
func NewLocal() *Local { return &Local{} }

func (l *Local) Rank() int { return 0 }
func (l *Local) Size() int { return 1 }

func (l *Local) err() error {
	if l.closed.Load() {
		return ErrClosed
	}
	return nil
}

func (l *Local) Broadcast(msg []byte) ([]byte, error) { return msg, l.err() }
func (l *Local) AllReduce(x []float32) error          { return l.err() }
func (l *Local) Progress() error                      { return l.err() }
func (l *Local) Barrier() error                       { return l.err() }

// SetTimeout does nothing: a single rank never waits.
func (l *Local) SetTimeout(time.Duration) {}

func (l *Local) IAllReduce(x []float32) (Request, error) {
	if err := l.err(); err != nil {
		return nil, err
	}
	return doneRequest{}, nil
}

func (l *Local) Close() error {
	if l.closed.Swap(true) {
		return ErrClosed
	}
	return nil
}

// doneRequest is a request that completed when it was made.
type doneRequest struct{}

func (doneRequest) Wait() error         { return nil }
func (doneRequest) Test() (bool, error) { return true, nil }
