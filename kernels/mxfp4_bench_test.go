package kernels

import (
	"fmt"
	"testing"

	"pagoda/gguf"
)

// BenchmarkMXFP4 times MXFP4 matmuls at gpt-oss-20b's expert width (2880
// × 2880) in the exact arithmetic (the generic dot everywhere) and the
// fast one (the native kernels on the interleaved copy), decode and a batch.
func BenchmarkMXFP4(b *testing.B) {
	r := newRand(40)
	const rows, cols = 2880, 2880
	data, err := gguf.Quantize(gguf.MXFP4, randVec(r, rows*cols, 0.02))
	if err != nil {
		b.Fatal(err)
	}
	w := Weight{Type: gguf.MXFP4, Data: data, Rows: rows, Cols: cols}
	for _, k := range implementations() {
		for _, n := range []int{1, 16} {
			for _, arith := range []string{"exact", "fast"} {
				b.Run(fmt.Sprintf("%s/%s/n=%d", k.name, arith, n), func(b *testing.B) {
					one := w
					if arith == "fast" {
						one = fast(k, w)
					}
					benchMatMul(b, k, one, randVec(r, n*cols, 1), n)
				})
			}
		}
	}
}
