//go:build linux && amd64 && !noasm

package kernels

import (
	"fmt"
	"math"
	"slices"
	"testing"
	"time"

	"pagoda/gguf"
	"pagoda/internal/hugemem"
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
	vs := []struct {
		name  string
		k     *impl
		relay func(Weight) Weight
	}{
		{"new", k, func(w Weight) Weight { return fast(k, w) }},
		{"q8", mxfp4Q8Impl(k), mxfp4Q8},
	}
	if ks := mxfp4Variants(k); len(ks) > 1 {
		vs = append(vs, vs[0])
		vs[2].name, vs[2].k, vs[2].relay = "vpshufb", ks[1], func(w Weight) Weight { return fast(ks[1], w) }
	}
	copies := max(1, decodeBenchBytes/len(one.Data))
	ws := make([][]Weight, len(vs))
	for v := range vs {
		for range copies {
			w := vs[v].relay(one) // the kernels read the copy only: Data is shared
			if w.repacked == nil {
				b.Fatalf("%s: no interleaved copy", vs[v].name)
			}
			ws[v] = append(ws[v], w)
		}
	}
	read := len(ws[0][0].repacked)
	probe := [2][]byte{hugemem.Slice[byte](copies * read / 2), hugemem.Slice[byte](copies * read / 2)}
	for _, p := range probe {
		for i := 0; i < len(p); i += 4096 {
			p[i] = 1
		}
	}
	dst := make([]float32, n*rows)
	pools := make([]*Pool, len(vs))
	for v := range vs {
		pools[v] = newPool(2, vs[v].k)
		defer pools[v].Close()
	}
	// Every variant computes the same bits.
	want := make([]float32, n*rows)
	pools[0].MatMul(want, ws[0][0], x, n)
	for v := 1; v < len(vs); v++ {
		pools[v].MatMul(dst, ws[v][0], x, n)
		for i := range dst {
			if math.Float32bits(dst[i]) != math.Float32bits(want[i]) {
				b.Fatalf("row %d: %s %v, new %v", i, vs[v].name, dst[i], want[i])
			}
		}
	}
	secs := make([][]float64, len(vs)+1) // per variant, then the probe
	first := 0
	round := func(timed bool) {
		first++
		for i := range vs {
			v := (first + i) % len(vs)
			t0 := time.Now()
			for _, w := range ws[v] {
				pools[v].MatMul(dst, w, x, n)
			}
			if timed {
				secs[v] = append(secs[v], time.Since(t0).Seconds())
			}
		}
		s := parallel(2, func(int) {}, func(t int) { readProbe(probe[t]) })
		if timed {
			secs[len(vs)] = append(secs[len(vs)], s)
		}
	}
	round(false)
	for b.Loop() {
		round(true)
	}
	probed := secs[len(vs)]
	b.ReportMetric(float64(copies*read)/median(slices.Clone(probed))/1e9, "ceilGB/s")
	for v := range vs {
		bytes := float64(copies * len(ws[v][0].repacked))
		frac := make([]float64, len(probed))
		for i, s := range secs[v] {
			frac[i] = probed[i] / s * bytes / float64(copies*read)
		}
		m := median(slices.Clone(secs[v]))
		b.ReportMetric(m/float64(copies)*1e9, vs[v].name+"-ns/matmul")
		b.ReportMetric(bytes/m/1e9, vs[v].name+"-GB/s")
		b.ReportMetric(100*median(frac), vs[v].name+"-%ceil")
		b.ReportMetric(float64(copies*len(one.Data))/m/1e9, vs[v].name+"-fileGB/s")
	}
}
