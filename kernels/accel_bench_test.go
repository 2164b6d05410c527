package kernels

import (
	"fmt"
	"testing"

	"pagoda/gguf"
)

// Kernel benchmarks of the accelerated (default) implementation. MatMul
// reports weight bytes per second (b.SetBytes) and GOP/s (two per
// multiply-add); the decode cases cycle through enough distinct matrices
// (64 MiB) that weights stream from memory, as in a forward pass.

// BenchmarkGEMM runs every implementation (the generic one on the smallest
// shape only: it is two orders of magnitude slower).
func BenchmarkGEMM(b *testing.B) {
	shapes := []struct{ rows, cols int }{{1536, 576}, {576, 1536}, {49152, 576}}
	for _, k := range implementations() {
		for _, typ := range []gguf.Type{gguf.Q4_0, gguf.Q4_1, gguf.Q8_0} {
			for si, s := range shapes {
				for _, n := range []int{1, 4, 16, 64} {
					if k == generic && (si > 0 || n > 4) {
						continue
					}
					b.Run(fmt.Sprintf("%s/%v/%dx%d/n=%d", k.name, typ, s.rows, s.cols, n), func(b *testing.B) {
						benchGEMM(b, k, typ, s.rows, s.cols, n)
					})
				}
			}
		}
	}
}

func benchGEMM(b *testing.B, k *impl, typ gguf.Type, rows, cols, n int) {
	r := newRand(30)
	one := rawBlocks32(r, typ, rows, cols, 0, scaleDists["normal"](r))
	copies := 1
	if n == 1 {
		copies = max(1, (64<<20)/len(one.Data))
	}
	ws := make([]Weight, copies)
	for i := range ws {
		ws[i] = one
		ws[i].Data = append([]byte(nil), one.Data...)
	}
	x := randVec(r, n*cols, 1)
	dst := make([]float32, n*rows)
	p := newPool(0, k)
	defer p.Close()
	b.SetBytes(int64(len(one.Data)))
	i := 0
	for b.Loop() {
		p.MatMul(dst, ws[i%copies], x, n)
		i++
	}
	b.ReportMetric(float64(2*rows*cols*n)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GOP/s")
}
