//go:build linux

package llama

import (
	"fmt"
	"runtime"
	"testing"
	"time"

	"pagoda/internal/testmodel"
	"pagoda/model"
	"pagoda/model/nn"
)

// verifyRows are the step widths BenchmarkSmolLM2Verify times: a decode
// step and speculative verifications of 1..16 proposals.
var verifyRows = []int{1, 2, 3, 4, 5, 8, 12, 17}

// BenchmarkSmolLM2Verify times the default model's verification steps on
// one thread (the caller's), loaded as model.Load loads it (the fast
// arithmetic and its tiled attention): one sequence with 128 tokens of
// context, a step of n query rows at positions 128..128+n−1 with every
// row's logits (a speculative step of n−1 proposals), for each n of
// verifyRows, the widths alternated step by step and each step timed by
// the thread's CPU time, which time-slicing on a shared machine does not
// inflate. It reports each width's CPU milliseconds per step and the mean
// cost of a row beyond the first (from 1 to 17 rows).
func BenchmarkSmolLM2Verify(b *testing.B) {
	m := openModel(b, testmodel.Default(b), nn.OptionsOf(model.LoadOptions{Threads: 1}))
	kv, err := m.NewKVCache(16, 16, model.KVF16)
	if err != nil {
		b.Fatal(err)
	}
	vocab := m.Config().VocabSize
	if err := m.Forward(seqBatch(0, 0, 128, 0), kv, make([]float32, vocab)); err != nil {
		b.Fatal(err)
	}
	batches := make([]*model.Batch, len(verifyRows))
	for i, n := range verifyRows {
		batches[i] = seqBatch(0, 128, n, 0)
		batches[i].LogitIndices = batches[i].LogitIndices[:0]
		for t := range n {
			batches[i].LogitIndices = append(batches[i].LogitIndices, int32(t))
		}
	}
	logits := make([]float32, verifyRows[len(verifyRows)-1]*vocab)
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	cpu := make([]time.Duration, len(verifyRows))
	for b.Loop() {
		for i, batch := range batches {
			t0 := threadCPU()
			if err := m.Forward(batch, kv, logits[:len(batch.LogitIndices)*vocab]); err != nil {
				b.Fatal(err)
			}
			cpu[i] += threadCPU() - t0
		}
	}
	ms := func(i int) float64 { return cpu[i].Seconds() * 1e3 / float64(b.N) }
	for i, n := range verifyRows {
		b.ReportMetric(ms(i), fmt.Sprintf("n=%d-cpums", n))
	}
	last := len(verifyRows) - 1
	b.ReportMetric((ms(last)-ms(0))/float64(verifyRows[last]-1), "extra-row-cpums")
}
