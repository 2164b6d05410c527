package kernels

import (
	"fmt"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"pagoda/gguf"
)

// countJob counts how often each task ran.
type countJob struct{ hits []atomic.Int32 }

func (c *countJob) run(_, task int) { c.hits[task].Add(1) }

// wantEachTaskOnce runs n counted tasks on p and fails the test, naming
// where, unless every one ran exactly once.
func wantEachTaskOnce(t *testing.T, p *Pool, n int, where string) {
	t.Helper()
	j := &countJob{hits: make([]atomic.Int32, n)}
	p.mu.Lock()
	p.run(j, n)
	p.mu.Unlock()
	for i := range j.hits {
		if h := j.hits[i].Load(); h != 1 {
			t.Fatalf("%s: task %d of %d ran %d times", where, i, n, h)
		}
	}
}

func TestPoolRunsEveryTaskOnce(t *testing.T) {
	for _, threads := range []int{1, 2, 4} {
		p := NewPool(threads)
		for _, n := range []int{0, 1, 3, 1000} {
			wantEachTaskOnce(t, p, n, fmt.Sprintf("%d threads, %d tasks", threads, n))
		}
		p.Close()
		p.Close() // idempotent
	}
}

// TestPoolStartsNoGoroutinePerCall: the goroutine count stays flat over
// many kernel calls, and Close ends the workers.
func TestPoolStartsNoGoroutinePerCall(t *testing.T) {
	before := settledGoroutines()
	p := NewPool(4)
	if p.Threads() != 4 {
		t.Fatalf("Threads() = %d", p.Threads())
	}
	started := runtime.NumGoroutine()
	if started-before != 3 {
		t.Fatalf("NewPool(4) started %d goroutines, want 3", started-before)
	}
	w := Weight{Type: gguf.F32, Data: make([]byte, 4*64*8), Rows: 64, Cols: 8}
	x, dst := make([]float32, 8), make([]float32, 64)
	for range 200 {
		p.MatMul(dst, w, x, 1)
	}
	if n := runtime.NumGoroutine(); n > started {
		t.Fatalf("goroutines went from %d to %d over 200 calls", started, n)
	}
	p.Close()
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > before {
		t.Fatalf("%d goroutines left after Close, want %d", n, before)
	}
}

// settledGoroutines waits for goroutines of earlier tests' closed pools to
// exit and returns the stable count.
func settledGoroutines() int {
	n := runtime.NumGoroutine()
	for range 200 {
		time.Sleep(5 * time.Millisecond)
		m := runtime.NumGoroutine()
		if m == n {
			return n
		}
		n = m
	}
	return n
}

func TestPoolDefaultThreads(t *testing.T) {
	p := NewPool(0)
	defer p.Close()
	if p.Threads() != runtime.GOMAXPROCS(0) {
		t.Fatalf("Threads() = %d, want GOMAXPROCS %d", p.Threads(), runtime.GOMAXPROCS(0))
	}
}

func TestPoolUseAfterClosePanics(t *testing.T) {
	p := NewPool(2)
	p.Close()
	defer func() {
		if recover() == nil {
			t.Fatal("no panic")
		}
	}()
	w := Weight{Type: gguf.F32, Data: make([]byte, 4), Rows: 1, Cols: 1}
	p.MatMul(make([]float32, 1), w, make([]float32, 1), 1)
}

// TestMatMulSteadyStateAllocs: a warmed-up Pool.MatMul allocates nothing.
func TestMatMulSteadyStateAllocs(t *testing.T) {
	p := NewPool(2)
	defer p.Close()
	r := newRand(15)
	w, _ := quantWeight(t, r, gguf.Q4_1, 64, 128)
	x := randVec(r, 4*128, 1)
	dst := make([]float32, 4*64)
	p.MatMul(dst, w, x, 4)
	if a := testing.AllocsPerRun(20, func() { p.MatMul(dst, w, x, 4) }); a != 0 {
		t.Fatalf("MatMul allocates %v times per call", a)
	}
}

func TestDispatch(t *testing.T) {
	impls := implementations()
	if impls[len(impls)-1] != generic {
		t.Fatal("generic is not the last implementation")
	}
	if chooseImpl("1") != generic {
		t.Fatal("PAGODA_NOASM=1 does not force the generic implementation")
	}
	if chooseImpl("") != impls[0] {
		t.Fatal("default is not the best implementation")
	}
	if noasm && len(impls) != 1 {
		t.Fatal("noasm build lists accelerated implementations")
	}
	for _, k := range impls {
		for _, typ := range []gguf.Type{gguf.F32, gguf.F16, gguf.BF16, gguf.Q4_0, gguf.Q4_1, gguf.Q5_0,
			gguf.Q5_1, gguf.Q8_0, gguf.Q2_K, gguf.Q3_K, gguf.Q4_K, gguf.Q5_K, gguf.Q6_K} {
			if k.dot[typ] == nil || !Supported(typ) {
				t.Fatalf("%s: no dot product for %v", k.name, typ)
			}
		}
	}
	if Implementation() == "" {
		t.Fatal("no implementation name")
	}
}
