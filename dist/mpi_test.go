//go:build mpi

package dist

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"testing"
	"time"

	"pagoda/internal/mpitest"
)

// The MPI tests run in two processes started by mpirun: TestMPI launches
// this test binary under `mpirun -np 2` with PAGODA_DIST_HELPER naming a
// scenario, and TestMPIHelperProcess is each rank's body (the os/exec
// helper-process pattern: without PAGODA_DIST_HELPER it is not a test of
// its own and returns at once).

const helperEnv = "PAGODA_DIST_HELPER"

// mpirun runs scenario on np ranks and returns mpirun's combined output
// and error.
func mpirun(t *testing.T, np int, scenario string, limit time.Duration, extra ...string) (string, error) {
	t.Helper()
	return mpitest.Run(t, np, "TestMPIHelperProcess", helperEnv, scenario, limit, extra...)
}

func TestMPI(t *testing.T) {
	t.Run("collectives", func(t *testing.T) {
		out, err := mpirun(t, 2, "collectives", 3*time.Minute)
		if err != nil || strings.Count(out, "RANK OK") != 2 {
			t.Fatalf("mpirun: %v\n%s", err, out)
		}
		t.Log(grepLines(out, "rank "))
	})
	// A rank exits without a word. mpirun's runtime notices and ends the
	// whole job at once (what a pagoda job relies on): the job must end,
	// with an error, and no collective may succeed.
	t.Run("rank-exit", func(t *testing.T) {
		out, err := mpirun(t, 2, "rank-exit", 3*time.Minute)
		t.Logf("mpirun: %v\n%s", err, grepLines(out, "rank ", "Process name", "Exit code"))
		if err == nil || strings.Contains(out, "UNEXPECTED") || !strings.Contains(out, "exiting without MPI_Finalize") {
			t.Fatalf("the job did not end with an error when a rank left:\n%s", out)
		}
	})
	// The same with the runtime told not to abort the job: MPI itself
	// never reports the lost peer (its shared-memory and TCP transports
	// wait on), so the watchdog must turn the wait into ErrTimeout.
	t.Run("rank-exit-no-abort", func(t *testing.T) {
		out, err := mpirun(t, 2, "rank-exit", 3*time.Minute, "--mca", "orte_abort_on_non_zero_status", "0")
		t.Logf("mpirun: %v\n%s", err, grepLines(out, "rank "))
		if strings.Contains(out, "UNEXPECTED") || !strings.Contains(out, "rank 0: failed as expected") ||
			!strings.Contains(out, ErrTimeout.Error()) {
			t.Fatalf("rank 0 did not report the lost rank as an error:\n%s", out)
		}
	})
}

func grepLines(s string, subs ...string) string {
	var keep []string
	for _, l := range strings.Split(s, "\n") {
		for _, sub := range subs {
			if strings.Contains(l, sub) {
				keep = append(keep, l)
				break
			}
		}
	}
	return strings.Join(keep, "\n")
}

func TestMPIHelperProcess(t *testing.T) {
	scenario := os.Getenv(helperEnv)
	if scenario == "" {
		return // started by TestMPI under mpirun only
	}
	opts := Options{Timeout: time.Minute}
	if scenario == "rank-exit" {
		opts.Timeout = 5 * time.Second
	}
	c, err := Init(opts)
	if err != nil {
		t.Fatal(err)
	}
	m, ok := c.(*MPI)
	if !ok || m.Size() < 2 {
		t.Fatalf("Init under mpirun returned %T of size %d", c, c.Size())
	}
	switch scenario {
	case "collectives":
		collectives(t, m)
		if err := m.Close(); err != nil {
			t.Fatal(err)
		}
		fmt.Printf("rank %d: RANK OK\n", m.Rank())
	case "rank-exit":
		rankExit(t, m)
	default:
		t.Fatalf("unknown scenario %q", scenario)
	}
}

// values is rank r's contribution to an all-reduce of n elements.
func values(r, n int, seed uint64) []float32 {
	rng := rand.New(rand.NewPCG(seed, uint64(r)))
	x := make([]float32, n)
	for i := range x {
		x[i] = rng.Float32()*2 - 1
	}
	return x
}

// sum is what the all-reduce must give: the ranks' values added in rank
// order (with two ranks the order does not matter: a+b = b+a exactly).
func sum(size, n int, seed uint64) []float32 {
	want := make([]float32, n)
	for r := range size {
		for i, v := range values(r, n, seed) {
			want[i] += v
		}
	}
	return want
}

func collectives(t *testing.T, m *MPI) {
	for _, n := range []int{0, 1, 7, 1000, 1 << 20} {
		var msg []byte
		if m.Rank() == 0 {
			msg = bytes.Repeat([]byte{byte(n), 0xA5, 3}, n)[:n]
		}
		got, err := m.Broadcast(msg)
		if err != nil {
			t.Fatal(err)
		}
		if want := bytes.Repeat([]byte{byte(n), 0xA5, 3}, n)[:n]; !bytes.Equal(got, want) {
			t.Fatalf("rank %d: broadcast of %d bytes received %d different bytes", m.Rank(), n, len(got))
		}
	}
	for _, n := range []int{1, 576, 9 * 576, 1 << 18} {
		x := values(m.Rank(), n, uint64(n))
		if err := m.AllReduce(x); err != nil {
			t.Fatal(err)
		}
		if want := sum(m.Size(), n, uint64(n)); !equal(x, want, m.Size()) {
			t.Fatalf("rank %d: all-reduce of %d elements differs from the local sum", m.Rank(), n)
		}
	}
	overlap(t, m)
	nilDeref(t)
	if err := m.Barrier(); err != nil {
		t.Fatal(err)
	}
	if err := m.Progress(); err != nil {
		t.Fatal(err)
	}
}

// overlap runs two all-reduces in flight at once (as dual-batch overlap
// will, one per micro-batch) while computing, driving them with Progress
// between slices of the computation, then checks both results.
func overlap(t *testing.T, m *MPI) {
	const n = 1 << 21 // 8 MB each: many rounds of the all-reduce protocol
	a, b := values(m.Rank(), n, 1), values(m.Rank(), n, 2)
	ra, err := m.IAllReduce(a)
	if err != nil {
		t.Fatal(err)
	}
	rb, err := m.IAllReduce(b)
	if err != nil {
		t.Fatal(err)
	}
	work := values(m.Rank(), 1<<16, 3)
	polls, acc := 0, float32(0)
	for {
		for i := range work { // a slice of "kernel" work
			acc += work[i] * work[(i*7)%len(work)]
		}
		if err := m.Progress(); err != nil {
			t.Fatal(err)
		}
		polls++
		da, err := ra.Test()
		if err != nil {
			t.Fatal(err)
		}
		db, err := rb.Test()
		if err != nil {
			t.Fatal(err)
		}
		if da && db {
			break
		}
	}
	if err := ra.Wait(); err != nil {
		t.Fatal(err)
	}
	if err := rb.Wait(); err != nil {
		t.Fatal(err)
	}
	if !equal(a, sum(m.Size(), n, 1), m.Size()) || !equal(b, sum(m.Size(), n, 2), m.Size()) {
		t.Fatalf("rank %d: overlapped all-reduce results differ from the local sums", m.Rank())
	}
	fmt.Printf("rank %d: two overlapped all-reduces of %d floats completed after %d compute slices (acc %.3g)\n", m.Rank(), n, polls, acc)
}

// equal compares exactly for two ranks (the sum is order-free), else
// within float32 rounding of a different summation order.
func equal(x, want []float32, size int) bool {
	if len(x) != len(want) {
		return false
	}
	for i := range x {
		d := x[i] - want[i]
		if size <= 2 && d != 0 || d > 1e-5 || d < -1e-5 {
			return false
		}
	}
	return true
}

// rankExit: after a barrier the last rank exits without a word; the
// others' next collective must fail within the timeout, not hang.
func rankExit(t *testing.T, m *MPI) {
	if err := m.Barrier(); err != nil {
		t.Fatal(err)
	}
	if m.Rank() == m.Size()-1 {
		fmt.Printf("rank %d: exiting without MPI_Finalize\n", m.Rank())
		os.Exit(3)
	}
	start := time.Now()
	x := values(m.Rank(), 1000, 4)
	err := m.AllReduce(x)
	if err == nil {
		fmt.Printf("rank %d: UNEXPECTED all-reduce success with a rank gone\n", m.Rank())
		os.Exit(1)
	}
	fmt.Printf("rank %d: failed as expected after %v: %v\n", m.Rank(), time.Since(start).Round(time.Millisecond), err)
	if _, err2 := m.Broadcast(nil); err2 == nil {
		fmt.Printf("rank %d: UNEXPECTED broadcast success after a failure\n", m.Rank())
	}
	os.Exit(2)
}

// nilDeref checks that the Go runtime still owns SIGSEGV after MPI_Init
// (Open MPI would install its own handler, without SA_ONSTACK, unless
// told not to): a nil dereference must stay a recoverable panic.
func nilDeref(t *testing.T) {
	var p *int
	defer func() {
		if recover() == nil {
			t.Fatal("nil dereference did not panic")
		}
	}()
	_ = *p
}
