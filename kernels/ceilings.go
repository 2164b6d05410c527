package kernels

import (
	"sync"
	"time"

	"pagoda/internal/hugemem"
)

// Machine ceilings: probes of the memory read bandwidth and of the peak
// throughput of the float32 FMA and int8 dot-product instructions the
// kernels use, on one or several threads at once. Benchmarks divide their
// figures by these to report how close a kernel comes to the hardware.

// ReadBandwidth returns the read bandwidth in bytes per second of threads
// goroutines, each reading its own buffer of size/threads bytes (rounded
// to 512) reps times after one untimed pass.
func ReadBandwidth(threads, size, reps int) float64 {
	threads = max(1, threads)
	per := max(512, size/threads&^511)
	bufs := make([][]byte, threads)
	for i := range bufs {
		bufs[i] = hugemem.Slice[byte](per)
		for j := 0; j < per; j += 4096 {
			bufs[i][j] = byte(j) // fault the pages in
		}
	}
	secs := parallel(threads, func(t int) {
		readProbe(bufs[t]) // warm
	}, func(t int) {
		for range reps {
			readProbe(bufs[t])
		}
	})
	return float64(threads*per*reps) / secs
}

// PeakFMA returns the float32 FMA throughput in FLOP/s (two per lane) of
// threads goroutines running iters rounds of 16 independent 16-lane FMAs.
func PeakFMA(threads, iters int) float64 {
	secs := parallel(max(1, threads), func(int) { fmaProbe(1000) }, func(int) { fmaProbe(iters) })
	return float64(max(1, threads)) * float64(iters) * 16 * 16 * 2 / secs
}

// PeakDot returns the int8 dot-product throughput in OP/s (two per byte
// pair: multiply and add) of threads goroutines running iters rounds of 16
// independent 64-byte VPDPBUSD-like instructions.
func PeakDot(threads, iters int) float64 {
	secs := parallel(max(1, threads), func(int) { dotProbe(1000) }, func(int) { dotProbe(iters) })
	return float64(max(1, threads)) * float64(iters) * 16 * 64 * 2 / secs
}

// parallel runs warm then work on threads goroutines, started together,
// and returns the wall time in seconds of the work phase.
func parallel(threads int, warm, work func(t int)) float64 {
	var ready, done sync.WaitGroup
	start := make(chan struct{})
	ready.Add(threads)
	done.Add(threads)
	for t := range threads {
		go func() {
			defer done.Done()
			warm(t)
			ready.Done()
			<-start
			work(t)
		}()
	}
	ready.Wait()
	t0 := time.Now()
	close(start)
	done.Wait()
	return time.Since(t0).Seconds()
}
