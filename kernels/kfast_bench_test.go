package kernels

import (
	"fmt"
	"testing"
	"time"

	"pagoda/gguf"
)

// BenchmarkFastKAB alternates the exact and the fast arithmetic of the
// K-quants call by call on TinyLlama's shapes (the machine is shared:
// alternation exposes both to the same load), through Pool.MatMul on the
// default implementation, and reports each one's best GOP/s and the ratio
// of their total times (speedup = exact / fast).
func BenchmarkFastKAB(b *testing.B) {
	for _, typ := range []gguf.Type{gguf.Q4_K, gguf.Q6_K, gguf.Q5_K, gguf.Q3_K, gguf.Q2_K} {
		for _, shape := range [][2]int{{2048, 2048}, {5632, 2048}} {
			for _, n := range []int{1, 32, 512} {
				for _, threads := range []int{1, 2} {
					name := fmt.Sprintf("%v/%dx%d/n=%d/t=%d", typ, shape[0], shape[1], n, threads)
					b.Run(name, func(b *testing.B) { benchFastAB(b, typ, shape[0], shape[1], n, threads) })
				}
			}
		}
	}
}

func benchFastAB(b *testing.B, typ gguf.Type, rows, cols, n, threads int) {
	r := newRand(40)
	exact := rawBlocks(r, typ, rows, cols, 0, scaleDists["normal"](r))
	ws := [2]Weight{exact, fast(def, exact)}
	x := randVec(r, n*cols, 1)
	dst := make([]float32, n*rows)
	p := newPool(threads, def)
	defer p.Close()
	best := [2]time.Duration{1 << 62, 1 << 62}
	var total [2]time.Duration
	for b.Loop() {
		for v, w := range ws {
			t0 := time.Now()
			p.MatMul(dst, w, x, n)
			d := time.Since(t0)
			best[v] = min(best[v], d)
			total[v] += d
		}
	}
	ops := float64(2 * rows * cols * n)
	b.ReportMetric(ops/best[0].Seconds()/1e9, "GOP/s-exact")
	b.ReportMetric(ops/best[1].Seconds()/1e9, "GOP/s-fast")
	b.ReportMetric(total[0].Seconds()/total[1].Seconds(), "speedup")
}
