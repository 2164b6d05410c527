//go:build linux

package kernels

import (
	"fmt"
	"runtime"
	"testing"
	"time"

	"pagoda/gguf"
)

// BenchmarkFastFewTokens times fast-arithmetic matmuls of a few tokens (a
// speculative step's verification, a small decode batch, a short prefill)
// on one thread (the caller's), by the thread's CPU time, which
// time-slicing on a shared machine does not inflate: SmolLM2-135M's FFN
// up and down shapes and its Q8_0 output head, and TinyLlama's FFN up
// shape in Q4_1 and Q8_0. The weights come from memory, as a model's do:
// each call takes the next of 96 MiB of interleaved copies. It reports
// multiply-adds per CPU second.
func BenchmarkFastFewTokens(b *testing.B) {
	cases := []struct {
		typ        gguf.Type
		rows, cols int
	}{{gguf.Q4_1, 1536, 576}, {gguf.Q4_1, 576, 1536}, {gguf.Q8_0, 49152, 576}, {gguf.Q4_1, 5632, 2048}, {gguf.Q8_0, 5632, 2048}}
	for _, c := range cases {
		for _, n := range []int{1, 2, 3, 4, 5, 6, 8, 12, 16} {
			b.Run(fmt.Sprintf("%v/%dx%d/n=%d", c.typ, c.rows, c.cols, n), func(b *testing.B) {
				r := newRand(41)
				data, err := gguf.Quantize(c.typ, randVec(r, c.rows*c.cols, 0.5))
				if err != nil {
					b.Fatal(err)
				}
				// Copies of the weights past the last-level cache, cycled
				// through as a model's layers are.
				ws := make([]Weight, max(1, (96<<20)/len(data)))
				for i := range ws {
					ws[i] = fast(def, Weight{Type: c.typ, Data: data, Rows: c.rows, Cols: c.cols})
				}
				x := randVec(r, n*c.cols, 1)
				dst := make([]float32, n*c.rows)
				p := newPool(1, def)
				defer p.Close()
				runtime.LockOSThread()
				defer runtime.UnlockOSThread()
				var cpu time.Duration
				i := 0
				for b.Loop() {
					t0 := threadCPU()
					p.MatMul(dst, ws[i%len(ws)], x, n)
					i++
					cpu += threadCPU() - t0
				}
				b.ReportMetric(float64(c.rows*c.cols*n)*float64(b.N)/cpu.Seconds()/1e9, "GMAC/cpus")
			})
		}
	}
}
