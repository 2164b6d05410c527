//go:build linux

package llama

import (
	"runtime"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"pagoda/internal/testmodel"
	"pagoda/model"
)

// BenchmarkSmolLM2Arithmetic compares the default model's exact and fast
// arithmetics on one thread (the caller's): a 512-token prefill, a decode
// step of 32 sequences at context 128 and a single-sequence decode step,
// the two arithmetics alternated step by step and each step timed by the
// thread's CPU time, which time-slicing on a shared machine does not
// inflate. It reports tokens per CPU second of each and the speedups.
func BenchmarkSmolLM2Arithmetic(b *testing.B) {
	path := testmodel.Default(b)
	var ms [2]*Model
	var kvs [2]*model.KVCache
	for i, exact := range []bool{true, false} {
		ms[i] = openModel(b, path, Options{Threads: 1, ExactArithmetic: exact})
		kv, err := ms[i].NewKVCache(32*8+32, 16, model.KVF16)
		if err != nil {
			b.Fatal(err)
		}
		kvs[i] = kv
		for s := range 32 { // 32 sequences of 127 cached tokens
			if err := ms[i].Forward(seqBatch(s, 0, 127, s*8), kv, make([]float32, ms[i].Config().VocabSize)); err != nil {
				b.Fatal(err)
			}
		}
	}
	steps := []struct {
		name   string
		batch  *model.Batch
		tokens int
	}{
		{"pp512", seqBatch(0, 0, 512, 256), 512},
		{"decode32", decodeBatch(32), 32},
		{"tg", decodeBatch(1), 1},
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var cpu [3][2]time.Duration
	for b.Loop() {
		for j, st := range steps {
			for i, m := range ms {
				logits := make([]float32, len(st.batch.LogitIndices)*m.Config().VocabSize)
				t0 := threadCPU()
				if err := m.Forward(st.batch, kvs[i], logits); err != nil {
					b.Fatal(err)
				}
				cpu[j][i] += threadCPU() - t0
			}
		}
	}
	for j, st := range steps {
		tok := float64(st.tokens * b.N)
		b.ReportMetric(tok/cpu[j][0].Seconds(), st.name+"-exact-tok/cpus")
		b.ReportMetric(tok/cpu[j][1].Seconds(), st.name+"-fast-tok/cpus")
		b.ReportMetric(cpu[j][0].Seconds()/cpu[j][1].Seconds(), st.name+"-speedup")
	}
}

// seqBatch is one sequence's tokens [p0, p0+n) in the blocks from block0
// on, with the last token's logits.
func seqBatch(seed, p0, n, block0 int) *model.Batch {
	b := &model.Batch{QueryStart: []int32{0, int32(n)}, ContextLens: []int32{int32(p0 + n)}, LogitIndices: []int32{int32(n - 1)}}
	var table []int32
	for k := range (p0 + n + 15) / 16 {
		table = append(table, int32(block0+k))
	}
	b.BlockTables = [][]int32{table}
	for p := p0; p < p0+n; p++ {
		b.Tokens = append(b.Tokens, int32(100+(seed*131+p*17)%20000))
		b.Positions = append(b.Positions, int32(p))
		b.SlotMapping = append(b.SlotMapping, int32(block0*16+p))
	}
	return b
}

// decodeBatch is one decode step of sequences 0..n−1 of seqBatch's
// layout at position 127.
func decodeBatch(n int) *model.Batch {
	b := &model.Batch{QueryStart: []int32{0}}
	for s := range n {
		one := seqBatch(s, 127, 1, s*8)
		b.Tokens = append(b.Tokens, one.Tokens...)
		b.Positions = append(b.Positions, one.Positions...)
		b.SlotMapping = append(b.SlotMapping, one.SlotMapping...)
		b.QueryStart = append(b.QueryStart, int32(s+1))
		b.ContextLens = append(b.ContextLens, 128)
		b.BlockTables = append(b.BlockTables, one.BlockTables[0])
		b.LogitIndices = append(b.LogitIndices, int32(s))
	}
	return b
}

// threadCPU returns the CPU time of the calling OS thread
// (CLOCK_THREAD_CPUTIME_ID: exact, unlike getrusage's tick-sampled split).
func threadCPU() time.Duration {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts); err != nil {
		panic(err)
	}
	return time.Duration(ts.Nano())
}
