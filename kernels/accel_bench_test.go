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
	benchMatMul(b, k, rawBlocks(r, typ, rows, cols, 0, scaleDists["normal"](r)), randVec(r, n*cols, 1), n)
}

// benchMatMul times MatMul of weight one with the n rows of x on k,
// reporting weight bytes per second and GOP/s. Decode (n = 1) cycles
// through 64 MiB of copies of one, so that weights come from memory as in
// a forward pass.
func benchMatMul(b *testing.B, k *impl, one Weight, x []float32, n int) {
	copies := 1
	if n == 1 {
		copies = max(1, (64<<20)/len(one.Data))
	}
	ws := make([]Weight, copies)
	for i := range ws {
		ws[i] = one
		ws[i].Data = append([]byte(nil), one.Data...)
	}
	dst := make([]float32, n*one.Rows)
	p := newPool(0, k)
	defer p.Close()
	b.SetBytes(int64(len(one.Data)))
	i := 0
	for b.Loop() {
		p.MatMul(dst, ws[i%copies], x, n)
		i++
	}
	b.ReportMetric(float64(2*one.Rows*one.Cols*n)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GOP/s")
}

// BenchmarkGEMMK runs the K-quant matmuls of every implementation on a
// 2048-column shape (TinyLlama's), for decode and batches.
func BenchmarkGEMMK(b *testing.B) {
	for _, k := range implementations() {
		for _, typ := range kTypes {
			for _, n := range []int{1, 16} {
				if k == generic && n > 1 {
					continue
				}
				b.Run(fmt.Sprintf("%s/%v/2048x2048/n=%d", k.name, typ, n), func(b *testing.B) {
					r := newRand(31)
					w := rawBlocks(r, typ, 2048, 2048, 0, scaleDists["normal"](r))
					x := randVec(r, n*2048, 1)
					dst := make([]float32, n*2048)
					p := newPool(0, k)
					defer p.Close()
					b.SetBytes(int64(len(w.Data)))
					for b.Loop() {
						p.MatMul(dst, w, x, n)
					}
					b.ReportMetric(float64(2*2048*2048*n)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GOP/s")
				})
			}
		}
	}
}

// BenchmarkVec runs every float vector kernel of every implementation on
// 4096 elements (b.SetBytes: bytes read and written).
func BenchmarkVec(b *testing.B) {
	const n = 4096
	r := newRand(32)
	x, y, z := randVec(r, n, 1), randVec(r, n, 1), randVec(r, n, 1)
	h := make([]uint16, n)
	for i, v := range randVec(r, n, 1) {
		h[i] = F32ToF16(v)
	}
	benchEachImpl(b, []benchCase{
		{"axpyF16", 10 * n, func(k *impl) { k.axpyF16(x, 0.5, h) }},
		{"axpyF32", 12 * n, func(k *impl) { k.axpyF32(x, 0.5, y) }},
		{"madF16", 6 * n, func(k *impl) { k.madF16(h, 0.999, h) }},
		{"dotF16", 6 * n, func(k *impl) { k.dotF16(y, h) }},
		{"dotF32", 8 * n, func(k *impl) { k.dotF32(y, z) }},
		{"rmsNorm", 12 * n, func(k *impl) { k.rmsNorm(x, y, z, 1e-5) }},
		{"swiGLU", 12 * n, func(k *impl) { k.swiGLU(x, y, z) }},
		{"softmax", 8 * n, func(k *impl) { copy(x, y); k.softmax(x) }},
		{"add", 12 * n, func(k *impl) { k.add(x, y) }},
		{"quantizeQ8_1", 5 * n, func(k *impl) { quantizeOne(k, actQ8_1, y) }},
		{"quantizeQ8K", 5 * n, func(k *impl) { quantizeOne(k, actQ8K, y) }},
	})
}

// BenchmarkAttentionF16 is one decode token of 9 heads (3 KV heads) of
// dimension 64 against contexts of 128 and 1024 positions (b.SetBytes:
// K and V bytes read).
func BenchmarkAttentionF16(b *testing.B) {
	for _, k := range implementations() {
		for _, ctx := range []int{128, 1024} {
			b.Run(fmt.Sprintf("%s/ctx=%d", k.name, ctx), func(b *testing.B) {
				a, kv := sameAttnCase(newRand(33), KVF16, 64, 9, 3, 16, []int{ctx}, []int{1})
				p := newPool(1, k)
				defer p.Close()
				b.SetBytes(int64(2 * 2 * ctx * 3 * 64))
				for b.Loop() {
					p.Attention(a, kv)
				}
			})
		}
	}
}
