package kernels

import (
	"fmt"
	"testing"

	"pagoda/gguf"
)

// BenchmarkMatMul measures weight bandwidth (b.SetBytes = weight bytes per
// call) for decode (n=1) and a small batch, on the SmolLM2 FFN shape.
func BenchmarkMatMul(b *testing.B) {
	const rows, cols = 1536, 576
	types := []gguf.Type{gguf.F32, gguf.F16, gguf.Q4_0, gguf.Q4_1, gguf.Q8_0, gguf.Q4_K, gguf.Q6_K}
	p := NewPool(0)
	defer p.Close()
	for _, typ := range types {
		c := cols
		if typ == gguf.Q4_K || typ == gguf.Q6_K {
			c = 512 // a whole number of 256-element super-blocks
		}
		for _, n := range []int{1, 8} {
			b.Run(fmt.Sprintf("%v/%dx%d/n=%d", typ, rows, c, n), func(b *testing.B) {
				r := newRand(16)
				data, err := gguf.Quantize(typ, randVec(r, rows*c, 0.5))
				if err != nil {
					b.Fatal(err)
				}
				w := Weight{Type: typ, Data: data, Rows: rows, Cols: c}
				x := randVec(r, n*c, 1)
				dst := make([]float32, n*rows)
				b.SetBytes(int64(len(data)))
				b.ResetTimer()
				for b.Loop() {
					p.MatMul(dst, w, x, n)
				}
				b.ReportMetric(float64(2*rows*c*n)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
			})
		}
	}
}

// BenchmarkAttention measures one decode token against a 512-token context.
func BenchmarkAttention(b *testing.B) {
	r := newRand(17)
	c := newAttnCase(r, KVF16, 16, []int{512}, []int{1})
	p := NewPool(0)
	defer p.Close()
	for b.Loop() {
		p.Attention(&c.att, c.kv)
	}
}
