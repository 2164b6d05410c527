//go:build mpi

package dist

/*
#cgo pkg-config: ompi-c
#include <stdlib.h>
#include <mpi.h>

// MPI_COMM_WORLD and friends are macros cgo cannot use: small wrappers.

static int pg_init(int *rank, int *size, int *provided) {
	int err = MPI_Init_thread(NULL, NULL, MPI_THREAD_MULTIPLE, provided);
	if (err != MPI_SUCCESS) return err;
	// Errors come back to the caller instead of aborting the job.
	err = MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
	if (err != MPI_SUCCESS) return err;
	err = MPI_Comm_rank(MPI_COMM_WORLD, rank);
	if (err != MPI_SUCCESS) return err;
	return MPI_Comm_size(MPI_COMM_WORLD, size);
}

static int pg_finalize(void) { return MPI_Finalize(); }

static int pg_ibcast(void *buf, int n, MPI_Request *req) {
	return MPI_Ibcast(buf, n, MPI_BYTE, 0, MPI_COMM_WORLD, req);
}

static int pg_iallreduce(float *x, int n, MPI_Request *req) {
	return MPI_Iallreduce(MPI_IN_PLACE, x, n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD, req);
}

static int pg_ibarrier(MPI_Request *req) { return MPI_Ibarrier(MPI_COMM_WORLD, req); }

static int pg_test(MPI_Request *req, int *done) {
	MPI_Status st;
	return MPI_Test(req, done, &st);
}

static void pg_error_string(int code, char *buf, int cap) {
	int n = 0;
	if (cap < 1) return;
	buf[0] = 0;
	if (MPI_Error_string(code, buf, &n) != MPI_SUCCESS) n = 0;
	if (n >= cap) n = cap - 1;
	buf[n] = 0;
}

static int pg_max_error_string(void) { return MPI_MAX_ERROR_STRING; }
*/
import "C"

import (
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"
)

// MPIAvailable reports whether this binary was built with MPI support.
const MPIAvailable = true

// Init returns the Comm of this process: MPI's world communicator when
// mpirun started it (OMPI_COMM_WORLD_SIZE is set), else Local. MPI can be
// initialized once per process.
func Init(opts Options) (Comm, error) {
	if launchedSize(os.Getenv) == 0 {
		return NewLocal(), nil
	}
	return NewMPI(opts)
}

// MPI is the Comm of MPI_COMM_WORLD (see the package documentation for
// threading, progress and failure handling).
type MPI struct {
	rank, size int
	timeout    atomic.Int64 // a time.Duration: bounds every wait (SetTimeout)

	mu      sync.Mutex
	pending []*mpiRequest // started, not yet seen complete
	broken  error         // first failure; every later call returns it
	lenBuf  *[8]byte      // Broadcast's length header, its own allocation (pinned while in flight)

	finalize chan chan error // to the goroutine that owns MPI's main thread
}

var initOnce sync.Once

// NewMPI initializes MPI (MPI_Init_thread, MPI_THREAD_MULTIPLE) on a
// goroutine locked to its OS thread, which later calls MPI_Finalize from
// Close. It fails if MPI was initialized before in this process.
func NewMPI(opts Options) (*MPI, error) {
	first := false
	initOnce.Do(func() { first = true })
	if !first {
		return nil, fmt.Errorf("dist: MPI can be initialized only once per process")
	}
	// Open MPI intercepts SIGSEGV, SIGBUS, SIGFPE and SIGABRT by default to
	// print a stack trace; the Go runtime needs those signals itself.
	if _, set := os.LookupEnv("OMPI_MCA_opal_signal"); !set {
		os.Setenv("OMPI_MCA_opal_signal", "")
	}
	m := &MPI{lenBuf: new([8]byte), finalize: make(chan chan error)}
	m.SetTimeout(opts.Timeout)
	ready := make(chan error)
	go m.mainThread(ready)
	if err := <-ready; err != nil {
		return nil, err
	}
	return m, nil
}

// mainThread initializes MPI, then waits for Close to finalize it, on one
// OS thread.
func (m *MPI) mainThread(ready chan<- error) {
	runtime.LockOSThread() // never unlocked: the thread ends with the goroutine
	var rank, size, provided C.int
	if rc := C.pg_init(&rank, &size, &provided); rc != C.MPI_SUCCESS {
		ready <- mpiError("MPI_Init_thread", rc)
		return
	}
	if provided < C.MPI_THREAD_MULTIPLE {
		C.pg_finalize()
		ready <- fmt.Errorf("dist: MPI provides thread level %d, pagoda needs MPI_THREAD_MULTIPLE", provided)
		return
	}
	m.rank, m.size = int(rank), int(size)
	ready <- nil
	done := <-m.finalize
	if rc := C.pg_finalize(); rc != C.MPI_SUCCESS {
		done <- mpiError("MPI_Finalize", rc)
		return
	}
	done <- nil
}

// SetTimeout bounds the waits that start from now on (see TimeoutSetter).
func (m *MPI) SetTimeout(d time.Duration) { m.timeout.Store(int64(Options{Timeout: d}.timeout())) }

func (m *MPI) Rank() int { return m.rank }
func (m *MPI) Size() int { return m.size }

// mpiError turns an MPI error code into an error naming the call.
func mpiError(call string, rc C.int) error {
	n := int(C.pg_max_error_string())
	buf := (*C.char)(C.malloc(C.size_t(n + 1)))
	defer C.free(unsafe.Pointer(buf))
	C.pg_error_string(rc, buf, C.int(n+1))
	return fmt.Errorf("dist: %s: %s (MPI error %d)", call, C.GoString(buf), int(rc))
}

// fail records the first failure and returns it.
func (m *MPI) fail(err error) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.broken == nil {
		m.broken = err
	}
	return m.broken
}

func (m *MPI) err() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.broken
}

// mpiRequest is a nonblocking operation: its MPI handle and the pinned Go
// memory MPI reads and writes until it completes.
type mpiRequest struct {
	m    *MPI
	call string
	req  *C.MPI_Request // its own allocation: cgo checks all the memory a pointer argument reaches
	pin  runtime.Pinner
	done bool
	err  error
}

// start begins a nonblocking operation with f, which receives the request
// handle to fill; the pointers in pins stay pinned until it completes.
func (m *MPI) start(call string, f func(*C.MPI_Request) C.int, pins ...unsafe.Pointer) (*mpiRequest, error) {
	if err := m.err(); err != nil {
		return nil, err
	}
	r := &mpiRequest{m: m, call: call, req: new(C.MPI_Request)}
	for _, p := range pins {
		r.pin.Pin(p)
	}
	if rc := f(r.req); rc != C.MPI_SUCCESS {
		r.pin.Unpin()
		return nil, m.fail(mpiError(call, rc))
	}
	m.mu.Lock()
	m.pending = append(m.pending, r)
	m.mu.Unlock()
	return r, nil
}

// Test advances the operation once (MPI_Test).
func (r *mpiRequest) Test() (bool, error) {
	r.m.mu.Lock()
	defer r.m.mu.Unlock()
	return r.testLocked()
}

func (r *mpiRequest) testLocked() (bool, error) {
	if r.done {
		return true, r.err
	}
	if r.m.broken != nil {
		return false, r.m.broken
	}
	var flag C.int
	if rc := C.pg_test(r.req, &flag); rc != C.MPI_SUCCESS {
		r.complete(mpiError(r.call, rc))
		r.m.broken = r.err
		return true, r.err
	}
	if flag != 0 {
		r.complete(nil)
	}
	return r.done, r.err
}

// complete marks r done, unpins its memory and drops it from pending.
// The caller holds m.mu.
func (r *mpiRequest) complete(err error) {
	r.done, r.err = true, err
	if err == nil {
		r.pin.Unpin() // on failure MPI may still touch the memory: keep it pinned
	}
	r.m.pending = slices.DeleteFunc(r.m.pending, func(x *mpiRequest) bool { return x == r })
}

// Wait polls Test until the operation completes, fails or times out:
// first it spins for waitSpin, yielding the OS thread between tests
// (sched_yield, so a rank sharing its core with another process lets it
// run), then sleeps growing to a millisecond (an idle peer costs no CPU).
// The spin is measured in wall time, not iterations: a rank waits on its
// peer for as long as the peer's share of a layer takes (hundreds of
// microseconds to milliseconds), and a sleep overshoots by the timer's
// slack, which added about two milliseconds to every all-reduce of a
// decode step when the spin was 200 iterations.
func (r *mpiRequest) Wait() error {
	start := time.Now()
	var deadline time.Time
	timeout := time.Duration(r.m.timeout.Load())
	if timeout > 0 {
		deadline = start.Add(timeout)
	}
	spinUntil := start.Add(waitSpin)
	sleep := time.Duration(0)
	for {
		done, err := r.Test()
		if done || err != nil {
			return err
		}
		now := time.Now()
		if !deadline.IsZero() && now.After(deadline) {
			return r.m.fail(fmt.Errorf("%w: %s after %v", ErrTimeout, r.call, timeout))
		}
		if now.Before(spinUntil) {
			runtime.Gosched()
			syscall.Syscall(syscall.SYS_SCHED_YIELD, 0, 0, 0)
			continue
		}
		sleep = min(max(2*sleep, 10*time.Microsecond), time.Millisecond)
		time.Sleep(sleep)
	}
}

// waitSpin is how long Wait spins before it sleeps: longer than a rank
// waits for its peer inside a forward pass or between two decode steps,
// short enough that an idle rank soon stops using its core.
const waitSpin = 5 * time.Millisecond

// Progress tests every outstanding request once.
func (m *MPI) Progress() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.broken != nil {
		return m.broken
	}
	for i := len(m.pending) - 1; i >= 0 && i < len(m.pending); i-- {
		if _, err := m.pending[i].testLocked(); err != nil {
			return err
		}
	}
	return nil
}

// IAllReduce starts an in-place sum (MPI_Iallreduce with MPI_IN_PLACE).
func (m *MPI) IAllReduce(x []float32) (Request, error) {
	if len(x) > math.MaxInt32 {
		return nil, fmt.Errorf("dist: all-reduce of %d elements exceeds MPI's count", len(x))
	}
	if len(x) == 0 {
		x = make([]float32, 1)[:0] // a valid pointer for MPI
	}
	p := unsafe.Pointer(unsafe.SliceData(x))
	return m.start("MPI_Iallreduce", func(req *C.MPI_Request) C.int {
		return C.pg_iallreduce((*C.float)(p), C.int(len(x)), req)
	}, p)
}

// AllReduce is IAllReduce then Wait.
func (m *MPI) AllReduce(x []float32) error {
	r, err := m.IAllReduce(x)
	if err != nil {
		return err
	}
	return r.Wait()
}

// Barrier is MPI_Ibarrier, waited for.
func (m *MPI) Barrier() error {
	r, err := m.start("MPI_Ibarrier", func(req *C.MPI_Request) C.int { return C.pg_ibarrier(req) })
	if err != nil {
		return err
	}
	return r.Wait()
}

// Broadcast sends the length (8 bytes) then the bytes, two MPI_Ibcast
// waited for; receivers grow msg to the announced length.
func (m *MPI) Broadcast(msg []byte) ([]byte, error) {
	if m.rank == 0 {
		binary.LittleEndian.PutUint64(m.lenBuf[:], uint64(len(msg)))
	}
	if err := m.bcast(m.lenBuf[:]); err != nil {
		return nil, err
	}
	n := binary.LittleEndian.Uint64(m.lenBuf[:])
	if n > math.MaxInt32 {
		return nil, m.fail(fmt.Errorf("dist: broadcast of %d bytes exceeds MPI's count", n))
	}
	if m.rank != 0 {
		msg = slices.Grow(msg[:0], int(n))[:n]
	}
	if n == 0 {
		return msg, nil
	}
	return msg, m.bcast(msg)
}

func (m *MPI) bcast(b []byte) error {
	p := unsafe.Pointer(unsafe.SliceData(b))
	r, err := m.start("MPI_Ibcast", func(req *C.MPI_Request) C.int {
		return C.pg_ibcast(p, C.int(len(b)), req)
	}, p)
	if err != nil {
		return err
	}
	return r.Wait()
}

// Close finalizes MPI (on the thread that initialized it). After a
// failure it does not finalize (MPI_Finalize would wait for the lost
// peers): the process should exit.
func (m *MPI) Close() error {
	m.mu.Lock()
	if m.broken == ErrClosed {
		m.mu.Unlock()
		return ErrClosed
	}
	broken, pending := m.broken, len(m.pending)
	m.broken = ErrClosed
	m.mu.Unlock()
	if broken != nil {
		return broken
	}
	if pending > 0 {
		return fmt.Errorf("dist: close with %d operations in flight", pending)
	}
	done := make(chan error)
	m.finalize <- done
	return <-done
}
