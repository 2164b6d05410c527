//go:build linux

package kernels

import (
	"fmt"
	"runtime"
	"syscall"
	"testing"
	"time"

	"pagoda/gguf"
)

// BenchmarkGEMMPackedAB alternates row-major and packed weights call by
// call (the machine is shared: alternation exposes both to the same load)
// and reports each variant's best GOP/s and the ratio of their total times.
func BenchmarkGEMMPackedAB(b *testing.B) {
	cases := []struct {
		typ        gguf.Type
		rows, cols int
	}{{gguf.Q4_0, 2048, 2048}, {gguf.Q4_1, 1536, 576}, {gguf.Q8_0, 49152, 576}}
	for _, c := range cases {
		for _, n := range []int{1, 64, 512} {
			if n > 1 && c.rows > 10000 {
				continue
			}
			for _, threads := range []int{1, 2} {
				b.Run(fmt.Sprintf("%v/%dx%d/n=%d/t=%d", c.typ, c.rows, c.cols, n, threads), func(b *testing.B) {
					benchPackedAB(b, c.typ, c.rows, c.cols, n, threads)
				})
			}
		}
	}
}

func benchPackedAB(b *testing.B, typ gguf.Type, rows, cols, n, threads int) {
	r := newRand(30)
	one := rawBlocks(r, typ, rows, cols, 0, scaleDists["normal"](r))
	copies := 1
	if n == 1 {
		copies = max(1, (128<<20)/len(one.Data))
	}
	ws := make([][2]Weight, copies)
	for i := range ws {
		ws[i][0] = one
		ws[i][0].Data = append([]byte(nil), one.Data...)
		ws[i][1] = pack(def, one)
	}
	x := randVec(r, n*cols, 1)
	dst := make([]float32, n*rows)
	p := newPool(threads, def)
	defer p.Close()
	var best, total [2]time.Duration
	best = [2]time.Duration{1 << 62, 1 << 62}
	i := 0
	for b.Loop() {
		for v := range 2 {
			t0 := time.Now()
			p.MatMul(dst, ws[i%copies][v], x, n)
			d := time.Since(t0)
			best[v] = min(best[v], d)
			total[v] += d
		}
		i++
	}
	ops := float64(2 * rows * cols * n)
	b.ReportMetric(ops/best[0].Seconds()/1e9, "GOP/s-rowmajor")
	b.ReportMetric(ops/best[1].Seconds()/1e9, "GOP/s-packed")
	b.ReportMetric(total[0].Seconds()/total[1].Seconds(), "speedup")
}

// BenchmarkGEMMPrefillShapes alternates TinyLlama's prefill matmuls (n=512,
// packed, one thread: the caller's) call by call and reports each one's
// GOP per second of the thread's CPU time, which time-slicing on a shared
// machine does not inflate.
func BenchmarkGEMMPrefillShapes(b *testing.B) {
	for _, layout := range []struct {
		name string
		prep func(*impl, Weight) Weight
	}{{"packed", pack}, {"repacked", fast}} {
		b.Run(layout.name, func(b *testing.B) { benchPrefillShapes(b, layout.prep) })
	}
}

// benchPrefillShapes times 512-token Q4_0 prefills of TinyLlama's matrix
// shapes on one thread, with weights prepared by prep (plain arithmetic
// on packed rows, or llama.cpp's repacked arithmetic).
func benchPrefillShapes(b *testing.B, prep func(*impl, Weight) Weight) {
	shapes := []struct{ rows, cols int }{{2048, 2048}, {5632, 2048}, {2048, 5632}, {256, 2048}}
	const n = 512
	r := newRand(30)
	ws := make([]Weight, len(shapes))
	xs := make([][]float32, len(shapes))
	dsts := make([][]float32, len(shapes))
	for i, s := range shapes {
		ws[i] = prep(def, rawBlocks(r, gguf.Q4_0, s.rows, s.cols, 0, scaleDists["normal"](r)))
		xs[i] = randVec(r, n*s.cols, 1)
		dsts[i] = make([]float32, n*s.rows)
	}
	p := newPool(1, def)
	defer p.Close()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	cpu := make([]time.Duration, len(shapes))
	for b.Loop() {
		for i, w := range ws {
			t0 := threadCPU()
			p.MatMul(dsts[i], w, xs[i], n)
			cpu[i] += threadCPU() - t0
		}
	}
	for i, s := range shapes {
		b.ReportMetric(float64(2*s.rows*s.cols*n)*float64(b.N)/cpu[i].Seconds()/1e9, fmt.Sprintf("GOP/cpus-%dx%d", s.rows, s.cols))
	}
}

// threadCPU returns the CPU time of the calling OS thread.
func threadCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(1, &ru); err != nil { // RUSAGE_THREAD
		panic(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkPack measures Pack on a TinyLlama FFN matrix.
func BenchmarkPack(b *testing.B) {
	r := newRand(1)
	w := rawBlocks(r, gguf.Q4_0, 5632, 2048, 0, scaleDists["normal"](r))
	b.SetBytes(int64(len(w.Data)))
	for b.Loop() {
		pack(def, w)
	}
}
