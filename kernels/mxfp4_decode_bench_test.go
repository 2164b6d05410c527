//go:build linux && amd64 && !noasm

package kernels

import (
	"fmt"
	"testing"

	"pagoda/gguf"
)

// BenchmarkMXFP4Decode compares MXFP4's native fast kernels (its 17-byte
// interleaved copy, "new"; on avx512 with AVX512_VBMI also the VPSHUFB
// set, "vpshufb") with the previous path (Q8_0's fast kernels on a 34-byte
// Q8_0 copy, "q8") at gpt-oss-20b's expert shape (2880 × 2880,
// weights from gguf's quantizer), for 1 and 8 tokens, on a 2-thread pool
// of each accelerated implementation, as BenchmarkDecodeKQuant measures:
// each round multiplies every one of enough copies of the weight (each
// variant its own, decodeBenchBytes of the file's bytes) once per
// variant, the variants in turn starting with the next one each round,
// then reads as many bytes as the new copies hold with the bandwidth
// probe. Per variant it reports the median over rounds of the time of one
// matmul (ns/matmul), of the bytes of its copy read per second (GB/s), of
// that over the probe's bandwidth in the same round (%ceil), and of the
// file's bytes per second (fileGB/s: what a token's time follows).
func BenchmarkMXFP4Decode(b *testing.B) {
	for _, k := range implementations() {
		if mxfp4Q8Impl(k) == nil {
			continue
		}
		for _, n := range []int{1, 8} {
			b.Run(fmt.Sprintf("%s/2880x2880/n=%d", k.name, n), func(b *testing.B) {
				benchMXFP4Decode(b, k, 2880, 2880, n)
			})
		}
	}
}

func benchMXFP4Decode(b *testing.B, k *impl, rows, cols, n int) {
	r := newRand(42)
	data, err := gguf.Quantize(gguf.MXFP4, randVec(r, rows*cols, 0.02))
	if err != nil {
		b.Fatal(err)
	}
	one := Weight{Type: gguf.MXFP4, Data: data, Rows: rows, Cols: cols}
	x := randVec(r, n*cols, 1)
	vs := []decodeVariant{
		{"new", k, func(w Weight) Weight { return fast(k, w) }},
		{"q8", mxfp4Q8Impl(k), mxfp4Q8},
	}
	if ks := mxfp4Variants(k); len(ks) > 1 {
		vs = append(vs, decodeVariant{"vpshufb", ks[1], func(w Weight) Weight { return fast(ks[1], w) }})
	}
	copies := max(1, decodeBenchBytes/len(one.Data))
	ws := make([][]Weight, len(vs))
	for v := range vs {
		for range copies {
			w := vs[v].relayout(one) // the kernels read the copy only: Data is shared
			if w.repacked == nil {
				b.Fatalf("%s: no interleaved copy", vs[v].name)
			}
			ws[v] = append(ws[v], w)
		}
	}
	timeVariants(b, vs, ws, x, rows, n, len(one.Data))
}
