package kernels

import (
	"fmt"
	"testing"
	"unsafe"

	"pagoda/gguf"
)

// TestPrefetchCoversTasks: the weight memory a matmul task's prefetch
// hints (weightRows) is exactly what it reads, for every layout: the
// first token block's tasks tile the weight's buffer in task order, and
// later token blocks' tasks hint nothing (their rows were read already).
func TestPrefetchCoversTasks(t *testing.T) {
	r := newRand(11)
	for _, k := range implementations() {
		for _, c := range []struct {
			typ  gguf.Type
			prep func(*impl, Weight) Weight
			name string
		}{
			{gguf.Q4_0, fast, "fast"},
			{gguf.Q4_1, fast, "fast"},
			{gguf.Q8_0, pack, "packed"},
			{gguf.Q8_0, func(_ *impl, w Weight) Weight { return w }, "rows"},
			{gguf.Q6_K, func(_ *impl, w Weight) Weight { return w }, "rows"},
		} {
			w, _ := quantWeight(t, r, c.typ, 96, 256)
			w = c.prep(k, w)
			for _, n := range []int{1, 5, 64} {
				for threads := 1; threads <= 3; threads++ {
					t.Run(fmt.Sprintf("%s/%v/%s/n%d/t%d", k.name, c.typ, c.name, n, threads), func(t *testing.T) {
						var act actRows
						x := randVec(r, n*w.Cols, 1)
						j := planMatmul(k, &act, k.dotFor(w), make([]float32, n*w.Rows), w, x, n, threads)
						buf := j.weightRows(0, w.Rows)
						next := uintptr(unsafe.Pointer(&buf[0]))
						end := next + uintptr(len(buf))
						for task := range j.tasks() {
							nr := (w.Rows + j.rowsPerTask - 1) / j.rowsPerTask
							got := j.prefetch(task)
							if task >= nr {
								if got != 0 {
									t.Fatalf("task %d of a later token block hints %d bytes", task, got)
								}
								continue
							}
							r0 := task * j.rowsPerTask
							b := j.weightRows(r0, min(r0+j.rowsPerTask, w.Rows))
							if start := uintptr(unsafe.Pointer(&b[0])); start != next || got != len(b) {
								t.Fatalf("task %d hints %d bytes at %#x, want the %d after the last task's end %#x", task, got, start, len(b), next)
							}
							next += uintptr(len(b))
						}
						if next != end {
							t.Fatalf("tasks hint up to %#x, the weight's memory ends at %#x", next, end)
						}
					})
				}
			}
		}
	}
}
