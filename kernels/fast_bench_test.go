package kernels

import (
	"fmt"
	"testing"

	"pagoda/gguf"
)

// BenchmarkFastMatMul compares the exact arithmetic (Pack) with the fast
// one (Fast) on one thread, for decode (n=1), batched decode (n=32) and a
// prefill (n=512), on SmolLM2-135M's FFN up shape, one sub-benchmark per
// type/n/arithmetic; GOP/s counts two operations per weight and token.
func BenchmarkFastMatMul(b *testing.B) {
	const rows, cols = 1536, 576
	p := newPool(1, def)
	defer p.Close()
	for _, typ := range fastTypes() {
		r := newRand(40)
		data, err := gguf.Quantize(typ, randVec(r, rows*cols, 0.5))
		if err != nil {
			b.Fatal(err)
		}
		w := Weight{Type: typ, Data: data, Rows: rows, Cols: cols}
		for _, n := range []int{1, 32, 512} {
			x := randVec(r, n*cols, 1)
			dst := make([]float32, n*rows)
			for _, ar := range []struct {
				name string
				prep func(*impl, Weight) Weight
			}{{"exact", pack}, {"fast", fast}} {
				b.Run(fmt.Sprintf("%v/n=%d/%s", typ, n, ar.name), func(b *testing.B) {
					w := ar.prep(def, w)
					b.SetBytes(int64(len(data)))
					for b.Loop() {
						p.MatMul(dst, w, x, n)
					}
					b.ReportMetric(float64(2*rows*cols*n)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GOP/s")
				})
			}
		}
	}
}
