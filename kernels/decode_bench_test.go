//go:build linux

package kernels

import (
	"fmt"
	"math"
	"runtime"
	"slices"
	"testing"
	"time"

	"pagoda/gguf"
	"pagoda/internal/hugemem"
)

// BenchmarkDecodeKQuant times one-token matmuls (n = 1, the fast
// arithmetic, a 2-thread pool) on TinyLlama's FFN shapes, 5632×2048 (gate,
// up) and 2048×5632 (down), streaming the weights from memory: each round
// multiplies every one of enough copies of the weight (decodeBenchBytes,
// four times this machine's L3) once, then reads as many bytes with the
// bandwidth probe of `pagoda bench ceilings` (two threads, each its half),
// so that the kernels and the ceiling are measured in the same minute. The
// variants (decodeVariants: the kernels in use, and whatever a change
// under test keeps selectable) run in turn within each round. It reports,
// per variant, the median over rounds of the bytes read per second (the
// interleaved copy the kernels read), that median over the probe's, and
// the file's bytes per second (what a token's time follows). Q4_0 stands
// for the other 32-element types, whose fast kernels are gemmq's too.
func BenchmarkDecodeKQuant(b *testing.B) {
	types := []gguf.Type{gguf.Q4_0, gguf.Q4_K, gguf.Q5_K, gguf.Q6_K, gguf.Q8_0}
	shapes := []struct{ rows, cols int }{{5632, 2048}, {2048, 5632}}
	for _, typ := range types {
		for _, s := range shapes {
			b.Run(fmt.Sprintf("%v/%dx%d", typ, s.rows, s.cols), func(b *testing.B) {
				benchDecode(b, typ, s.rows, s.cols, 1)
			})
		}
	}
}

// BenchmarkDecodeCompute times the one-token kernels (the fast
// arithmetic; and those of 2–4 tokens: speculative verification, small
// batches) where memory does not limit them: one thread, a 256×2048
// weight that stays in L2, the activations converted once, each variant
// (decodeVariants) running decodeComputeReps matmuls in turn per round,
// timed by the thread's CPU time (which time-slicing on a shared machine
// does not inflate). It reports per variant the medians over rounds of the
// interleaved bytes read per CPU second, the file's bytes per CPU second
// and GOP per CPU second (two operations per weight): the compute
// ceiling that sets how close to the read bandwidth a one-token decode
// gets when the bandwidth is high.
func BenchmarkDecodeCompute(b *testing.B) {
	for _, typ := range []gguf.Type{gguf.Q4_K, gguf.Q5_K, gguf.Q6_K, gguf.Q8_0} {
		for n := 1; n <= 4; n++ {
			b.Run(fmt.Sprintf("%v/n%d", typ, n), func(b *testing.B) { benchDecodeCompute(b, typ, 256, 2048, n) })
		}
	}
}

// decodeComputeReps is the matmuls of one variant in a round of
// BenchmarkDecodeCompute.
const decodeComputeReps = 200

func benchDecodeCompute(b *testing.B, typ gguf.Type, rows, cols, n int) {
	r := newRand(41)
	one := rawBlocks(r, typ, rows, cols, 0, scaleDists["normal"](r))
	x := randVec(r, n*cols, 1)
	vs := decodeVariants()
	jobs := make([]matmulJob, len(vs))
	dsts := make([][]float32, len(vs))
	for v := range vs {
		w := fast(vs[v].k, one)
		if vs[v].relayout != nil {
			w = vs[v].relayout(w)
		}
		if w.repacked == nil {
			b.Skipf("%s has no fast kernel for %v", vs[v].name, typ)
		}
		dsts[v] = make([]float32, n*rows)
		jobs[v] = newMatmulJob(vs[v].k, new(actRows), vs[v].k.dotFor(w), dsts[v], w, x, n, 1)
		jobs[v].compute(0, rows, 0, n)
		for i, got := range dsts[v] {
			if math.Float32bits(got) != math.Float32bits(dsts[0][i]) {
				b.Fatalf("%s: row %d: %v, want %s's %v", vs[v].name, i, got, vs[0].name, dsts[0][i])
			}
		}
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	secs := make([][]float64, len(vs))
	for b.Loop() {
		for v := range jobs {
			t0 := threadCPU()
			for range decodeComputeReps {
				jobs[v].compute(0, rows, 0, n)
			}
			secs[v] = append(secs[v], (threadCPU()-t0).Seconds()/decodeComputeReps)
		}
	}
	for v := range vs {
		s := median(secs[v])
		b.ReportMetric(float64(len(jobs[v].w.repacked))/s/1e9, vs[v].name+"-GB/cpus")
		b.ReportMetric(float64(len(one.Data))/s/1e9, vs[v].name+"-fileGB/cpus")
		b.ReportMetric(float64(2*rows*cols*n)/s/1e9, vs[v].name+"-GOP/cpus")
	}
}

// decodeBenchBytes is the weight memory one round of BenchmarkDecodeKQuant
// streams per variant.
const decodeBenchBytes = 128 << 20

// decodeVariant is an implementation BenchmarkDecodeKQuant times: def with
// some of its kernels or plans replaced.
type decodeVariant struct {
	name     string
	k        *impl
	relayout func(Weight) Weight // the variant's own interleaved copy, or nil
}

// decodeVariants are the implementations BenchmarkDecodeKQuant compares:
// the one in use, and any others a change keeps for comparison while it is
// measured (say, the previous kernels generated under other names, set in
// their tiles, with relayout giving the layout they read).
var decodeVariants = func() []decodeVariant { return []decodeVariant{{"cur", def, nil}} }

func benchDecode(b *testing.B, typ gguf.Type, rows, cols, n int) {
	r := newRand(41)
	one := rawBlocks(r, typ, rows, cols, 0, scaleDists["normal"](r))
	x := randVec(r, n*cols, 1)
	vs := decodeVariants()
	copies := max(1, decodeBenchBytes/len(one.Data))
	// Every variant reads its own copies: the interleaved layouts may
	// differ between variants.
	ws := make([][]Weight, len(vs))
	for v := range vs {
		for range copies {
			w := one
			w.Data = slices.Clone(one.Data)
			w = fast(vs[v].k, w)
			if vs[v].relayout != nil {
				w = vs[v].relayout(w)
			}
			if w.repacked == nil {
				b.Skipf("%s has no fast kernel for %v", vs[v].name, typ)
			}
			ws[v] = append(ws[v], w)
		}
	}
	timeVariants(b, vs, ws, x, rows, n, len(one.Data))
}

// timeVariants times one-token-style matmuls of the variants vs (their
// copies ws of one weight, every copy
// multiplied once per round, the variants in turn) against the bandwidth
// probe of `pagoda bench ceilings` (two threads, each its half of as many
// bytes as the first variant's copies hold) run in the same round, after
// checking that every variant computes the first one's bits. Per variant
// it reports the medians over rounds of the time of one matmul, of the
// bytes of its copy read per second, of that over the probe's (each
// round's own ratio: the machine's bandwidth drifts between rounds) and
// of the file's bytes (fileBytes per copy) per second.
func timeVariants(b *testing.B, vs []decodeVariant, ws [][]Weight, x []float32, rows, n, fileBytes int) {
	names := make([]string, len(vs))
	ks := make([]*impl, len(vs))
	for v := range vs {
		names[v], ks[v] = vs[v].name, vs[v].k
	}
	copies, read := len(ws[0]), len(ws[0][0].repacked)
	probe := [2][]byte{hugemem.Slice[byte](copies * read / 2), hugemem.Slice[byte](copies * read / 2)}
	for _, p := range probe {
		for i := 0; i < len(p); i += 4096 {
			p[i] = 1
		}
	}
	dst := make([]float32, n*rows)
	pools := make([]*Pool, len(ks))
	for v := range ks {
		pools[v] = newPool(2, ks[v])
		defer pools[v].Close()
	}
	want := make([]float32, n*rows)
	pools[0].MatMul(want, ws[0][0], x, n)
	for v := 1; v < len(ks); v++ {
		pools[v].MatMul(dst, ws[v][0], x, n)
		for i := range dst {
			if math.Float32bits(dst[i]) != math.Float32bits(want[i]) {
				b.Fatalf("%s: row %d: %v, want %s's %v", names[v], i, dst[i], names[0], want[i])
			}
		}
	}
	secs := make([][]float64, len(ks)+1) // per variant, then the probe: seconds per round
	// Each round starts with the next variant: a variant's place in the
	// round moves its figures by up to 8% (the last one, just before the
	// probe, runs fastest on Zen 4).
	first := 0
	round := func(timed bool) {
		first++
		for i := range ks {
			v := (first + i) % len(ks)
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
			secs[len(ks)] = append(secs[len(ks)], s)
		}
	}
	round(false)
	for b.Loop() {
		round(true)
	}
	probed := secs[len(ks)]
	b.ReportMetric(float64(copies*read)/median(slices.Clone(probed))/1e9, "ceilGB/s")
	for v := range ks {
		bytes := float64(copies * len(ws[v][0].repacked))
		frac := make([]float64, len(probed))
		for i, s := range secs[v] {
			frac[i] = probed[i] / s * bytes / float64(copies*read)
		}
		m := median(slices.Clone(secs[v]))
		b.ReportMetric(m/float64(copies)*1e9, names[v]+"-ns/matmul")
		b.ReportMetric(bytes/m/1e9, names[v]+"-GB/s")
		b.ReportMetric(100*median(frac), names[v]+"-%ceil")
		b.ReportMetric(float64(copies*fileBytes)/m/1e9, names[v]+"-fileGB/s")
	}
}

// median returns the median of xs (sorted in place).
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	slices.Sort(xs)
	if n := len(xs); n%2 == 0 {
		return (xs[n/2-1] + xs[n/2]) / 2
	}
	return xs[len(xs)/2]
}
