// Package dist is the communication tensor parallelism and dual-batch
// overlap need, and nothing more: ranks, a broadcast of bytes from rank 0
// (the step, see sched.Step's wire form), an all-reduce (sum) of float32
// activations in place, its nonblocking form, and a barrier.
//
// Two implementations sit behind Comm:
//
//   - Local, a single rank in pure Go: every collective is the identity.
//     Always built; the default binary stays static and cgo-free.
//   - Open MPI through cgo, behind the build tag mpi (make build-mpi), when
//     the process was started by mpirun (Init picks it). MPI is
//     initialized with MPI_THREAD_MULTIPLE: a goroutine may run on any OS
//     thread between two cgo calls, so FUNNELED (only the thread that
//     initialized MPI may call it) would force every call through one
//     locked goroutine; MULTIPLE lets the forward pass and a waiter call
//     from wherever they run. Init and Finalize run on one goroutine locked
//     to its OS thread, as the standard asks.
//
// Progress. Open MPI (4.1, "OMPI progress: no") moves a nonblocking
// collective forward only inside MPI calls. pagoda drives it from the
// caller, not from a progress thread: the forward pass calls
// Comm.Progress between kernels (each call tests every outstanding
// request once, MPI_Test), and Request.Wait polls until done. A progress
// thread would spin on a core the kernels need (the scale-out setup gives
// each rank one core); polling between kernels costs a few microseconds.
//
// Failure. Errors come back as values, never as an abort from inside MPI:
// the MPI implementation sets MPI_ERRORS_RETURN on its communicator, and
// every blocking operation is a nonblocking one polled against
// Options.Timeout, so a peer that stops answering (crashed, exited,
// killed) makes the operation fail with ErrTimeout instead of hanging
// forever. After an error or a timeout the Comm is broken: every later
// operation returns the same error.
//
// Collectives must be called in the same order on every rank, as in MPI.
// A Comm is safe for concurrent use, but two collectives started
// concurrently from different goroutines have no defined order.
package dist

import (
	"errors"
	"time"
)

// Comm is a group of ranks that run the same program.
type Comm interface {
	// Rank is this process's index, 0 ≤ Rank < Size. Rank 0 owns the
	// engine and broadcasts the steps.
	Rank() int
	// Size is the number of ranks.
	Size() int
	// Broadcast sends rank 0's msg to every rank and returns it. On rank 0
	// msg is the message; on the others msg is only a buffer to reuse (its
	// capacity), and the result is the received message in it (grown when
	// too small).
	Broadcast(msg []byte) ([]byte, error)
	// AllReduce replaces x, on every rank, by the element-wise sum of
	// every rank's x. The lengths must agree.
	AllReduce(x []float32) error
	// IAllReduce starts AllReduce(x) and returns at once. x must not be
	// read or written until the request completes (Wait, or Test
	// reporting done).
	IAllReduce(x []float32) (Request, error)
	// Progress gives every outstanding nonblocking operation a chance to
	// advance (see the package documentation); call it between kernels
	// while a request is in flight. It does not block.
	Progress() error
	// Barrier returns once every rank has called it.
	Barrier() error
	// Close ends this rank's participation; the Comm is unusable after.
	// Outstanding requests must have completed.
	Close() error
}

// TimeoutSetter is implemented by the Comms whose waits are bounded (MPI,
// and Local trivially): SetTimeout replaces Options.Timeout for the waits
// that start after it (0 means DefaultTimeout, negative forever). Tensor
// parallelism sets it before every step, scaled with the step's size, and
// before every heartbeat.
type TimeoutSetter interface {
	SetTimeout(d time.Duration)
}

// Request is a nonblocking operation in flight. It is an alias of an
// unnamed interface type (as model.Request is), so that a Comm is a
// model.Reducer without dist importing model.
type Request = interface {
	// Wait blocks until the operation completes (or fails, or times out).
	Wait() error
	// Test reports whether the operation completed, advancing it; after
	// done is true, Wait returns at once.
	Test() (done bool, err error)
}

// Options configure Init.
type Options struct {
	// Timeout bounds every blocking wait (a collective, Request.Wait); 0
	// means DefaultTimeout, negative means wait forever. Ranks that wait
	// for rank 0's next step while it is idle should use no timeout.
	Timeout time.Duration
}

// DefaultTimeout is Options.Timeout when unset.
const DefaultTimeout = 60 * time.Second

func (o Options) timeout() time.Duration {
	if o.Timeout == 0 {
		return DefaultTimeout
	}
	return o.Timeout
}

var (
	// ErrTimeout: a peer did not take part in a collective within
	// Options.Timeout.
	ErrTimeout = errors.New("dist: timed out waiting for the other ranks")
	// ErrClosed: the Comm was closed.
	ErrClosed = errors.New("dist: communicator closed")
	// ErrNoMPI: the process was started by mpirun with several ranks but
	// this binary was built without MPI support.
	ErrNoMPI = errors.New("dist: started with several ranks, but this binary has no MPI support (build it with make build-mpi)")
)

// launchedSize returns the world size the launcher announced in the
// environment (Open MPI's mpirun sets OMPI_COMM_WORLD_SIZE), or 0.
func launchedSize(getenv func(string) string) int {
	n := 0
	for _, c := range getenv("OMPI_COMM_WORLD_SIZE") {
		if c < '0' || c > '9' || n > 1<<20 {
			return 0
		}
		n = n*10 + int(c-'0')
	}
	return n
}
