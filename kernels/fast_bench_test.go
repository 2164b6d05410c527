package kernels

import (
	"fmt"
	"runtime"
	"testing"
	"time"

	"pagoda/gguf"
)

// BenchmarkFastMatMul compares the exact arithmetic (Pack) with the fast
// one (Fast) on one thread (the caller's), alternating the two call by
// call and timing each by the thread's CPU time, which time-slicing on a
// shared machine does not inflate: decode (n=1), batched decode (n=32) and
// prefill (n=512) on SmolLM2-135M's FFN up shape, per type with a fast
// arithmetic. It reports both arithmetics' GOP per CPU second (two
// operations per weight and token) and the speedup.
func BenchmarkFastMatMul(b *testing.B) {
	const rows, cols = 1536, 576
	for _, typ := range fastTypes() {
		for _, n := range []int{1, 32, 512} {
			b.Run(fmt.Sprintf("%v/n=%d", typ, n), func(b *testing.B) { benchFastVsExact(b, typ, rows, cols, n) })
		}
	}
}

func benchFastVsExact(b *testing.B, typ gguf.Type, rows, cols, n int) {
	r := newRand(40)
	data, err := gguf.Quantize(typ, randVec(r, rows*cols, 0.5))
	if err != nil {
		b.Fatal(err)
	}
	w := Weight{Type: typ, Data: data, Rows: rows, Cols: cols}
	ws := [2]Weight{pack(def, w), fast(def, w)}
	x := randVec(r, n*cols, 1)
	dst := make([]float32, n*rows)
	p := newPool(1, def)
	defer p.Close()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var cpu [2]time.Duration
	for b.Loop() {
		for i, w := range ws {
			t0 := threadCPU()
			p.MatMul(dst, w, x, n)
			cpu[i] += threadCPU() - t0
		}
	}
	ops := float64(2*rows*cols*n) * float64(b.N)
	b.ReportMetric(ops/cpu[0].Seconds()/1e9, "GOP/cpus-exact")
	b.ReportMetric(ops/cpu[1].Seconds()/1e9, "GOP/cpus-fast")
	b.ReportMetric(cpu[0].Seconds()/cpu[1].Seconds(), "speedup")
}
