package llama

import (
	"math"
	"slices"
	"sync"
	"testing"

	"pagoda/gguf"
	"pagoda/internal/testmodel"
	"pagoda/model"
	"pagoda/model/synth"
)

// dboSeqs are the sequences of the dual-batch overlap tests: prompts of
// different lengths, the last one sharing the first one's first block
// (a prefix-cache hit on a block the first sequence writes in the same
// step, so it must run in the later micro-batch).
func dboSeqs(bs int) []*seq {
	prompts := [][]int32{
		{1, 403, 407, 261, 378, 432, 383, 286, 261, 320, 281},
		{1, 415, 271, 422},
		{1, 262, 415, 271, 422, 426, 359, 413, 286, 261, 370, 432, 352},
		{1, 320, 281, 300, 262, 409, 312},
	}
	shared := append(slices.Clone(prompts[0][:bs]), 300, 262, 409)
	var seqs []*seq
	next := int32(0)
	for _, p := range append(prompts, shared) {
		s := &seq{tokens: slices.Clone(p)}
		for range 8 { // room for 8·bs tokens
			s.table = append(s.table, next)
			next++
		}
		seqs = append(seqs, s)
	}
	last := seqs[len(seqs)-1]
	last.table[0], last.done = seqs[0].table[0], bs // its first block is sequence 0's
	return seqs
}

// dboBatches builds the step of seqs' pending tokens whole and split after
// k sequences, every sequence returning its last row's logits.
func dboBatches(seqs []*seq, k, bs int) (whole, a, b *model.Batch) {
	whole, a, b = &model.Batch{}, &model.Batch{}, &model.Batch{}
	for i, s := range seqs {
		addSeq(whole, s, bs, true)
		if i < k {
			addSeq(a, s, bs, true)
		} else {
			addSeq(b, s, bs, true)
		}
	}
	return whole, a, b
}

// onRanks runs f(rank) on every rank as a goroutine and waits.
func onRanks(n int, f func(r int)) {
	var wg sync.WaitGroup
	for r := range n {
		wg.Go(func() { f(r) })
	}
	wg.Wait()
}

// checkDBO decodes dboSeqs greedily on path split over n in-process
// ranks, each step run as one batch by one group of ranks and as two
// micro-batches (ForwardMicroBatches, split after k sequences) by another:
// the logits and, at the end, every rank's KV cache must be bit-identical.
func checkDBO(t *testing.T, path string, n int, steps int) {
	t.Helper()
	checkDBOWith(t, path, n, steps, Options{Threads: 2})
}

// checkDBOWith is checkDBO with the models opened with opt (its
// TensorParallel set per rank).
func checkDBOWith(t *testing.T, path string, n int, steps int, opt Options) {
	t.Helper()
	const bs = 4
	off, on := openTP(t, path, n, opt), openTP(t, path, n, opt)
	vocab := off[0].Config().VocabSize
	kvs := make([][2]*model.KVCache, n)
	for r := range n {
		for g := range 2 {
			kv, err := off[r].NewKVCache(40*off[r].Config().KVLayout().NumGroups(), bs, model.KVF32)
			if err != nil {
				t.Fatal(err)
			}
			kvs[r][g] = kv
		}
	}
	seqs := dboSeqs(bs)
	for step := range steps {
		k := 2 + step%2 // the reader (last) always in the second micro-batch
		whole, a, b := dboBatches(seqs, k, bs)
		rows := len(whole.LogitIndices)
		want, got := make([]float32, rows*vocab), make([]float32, rows*vocab)
		split := len(a.LogitIndices) * vocab
		errs := make([]error, 2*n)
		onRanks(n, func(r int) { errs[r] = off[r].Forward(grouped(whole, kvs[r][0]), kvs[r][0], want) })
		onRanks(n, func(r int) {
			errs[n+r] = on[r].ForwardMicroBatches(grouped(a, kvs[r][1]), grouped(b, kvs[r][1]), kvs[r][1], got[:split], got[split:])
		})
		for _, err := range errs {
			if err != nil {
				t.Fatalf("step %d: %v", step, err)
			}
		}
		for i := range want {
			if math.Float32bits(want[i]) != math.Float32bits(got[i]) {
				t.Fatalf("step %d (%d tokens, split after %d sequences): logit %d is %v with DBO, %v without",
					step, len(whole.Tokens), k, i, got[i], want[i])
			}
		}
		for i, s := range seqs {
			s.done = len(s.tokens)
			s.tokens = append(s.tokens, argmax(want[i*vocab:(i+1)*vocab]))
		}
	}
	for r := range n {
		for l := range kvs[r][0].Layers {
			a, b := &kvs[r][0].Layers[l], &kvs[r][1].Layers[l]
			if !slices.Equal(a.K32, b.K32) || !slices.Equal(a.V32, b.V32) {
				t.Fatalf("rank %d layer %d: the KV cache differs with DBO", r, l)
			}
		}
	}
	t.Logf("TP=%d: %d steps of %d sequences, two micro-batches equal one batch bit for bit (logits and every rank's cache)", n, steps, len(seqs))
}

// TestDualBatchOverlap: ForwardMicroBatches equals Forward bit for bit on
// stories260K (TP = 1, 2, 4) and a Q8_0 synthetic model with 4 heads / 2
// KV heads (TP = 2).
func TestDualBatchOverlap(t *testing.T) {
	for _, n := range []int{1, 2, 4} {
		checkDBO(t, testmodel.Stories(t), n, 6)
	}
	shape := tinyShape("dbo", 128, 256, 512)
	path := writeSynth(t, synth.Options{Shape: shape, Type: gguf.Q8_0, Seed: 9})
	checkDBO(t, path, 2, 6)
}
