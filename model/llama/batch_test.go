package llama

import (
	"errors"
	"fmt"
	"math"
	"testing"

	"pagoda/internal/testalloc"

	"pagoda/internal/testmodel"
	"pagoda/kernels"
	"pagoda/model"
	"pagoda/model/nn"
)

// TestBatchInvariance runs three sequences — a full prefill, a prefill
// chunk on top of cached tokens and a decode token — in one batch and each
// alone, with every row's logits requested: the logits must be
// bit-identical, for both attention modes and 1 or 3 threads.
func TestBatchInvariance(t *testing.T) {
	for _, mode := range []kernels.AttnMode{kernels.AttnMatMul, kernels.AttnFlash} {
		for _, threads := range []int{1, 3} {
			t.Run(fmt.Sprintf("mode%d/threads%d", mode, threads), func(t *testing.T) {
				m := openModel(t, testmodel.Stories(t), Options{Threads: threads, Attention: mode})
				checkBatchInvariance(t, m)
			})
		}
	}
}

// forwardAll runs one step over the pending tokens of seqs in kv and
// returns the logits of every token.
func forwardAll(t *testing.T, m *Model, seqs []*seq, bs int, kv *model.KVCache) []float32 {
	t.Helper()
	var b model.Batch
	for _, s := range seqs {
		addSeq(&b, s, bs, false)
	}
	for i := range b.Tokens {
		b.LogitIndices = append(b.LogitIndices, int32(i))
	}
	logits := make([]float32, len(b.Tokens)*m.Config().VocabSize)
	if err := m.Forward(grouped(&b, kv), kv, logits); err != nil {
		t.Fatal(err)
	}
	return logits
}

// TestBatchInvarianceKVQ8 is TestBatchInvariance on the default model
// with a q8_0 KV cache (the fast arithmetic's tiled attention, which reads
// it): 1 and 3 threads.
func TestBatchInvarianceKVQ8(t *testing.T) {
	for _, threads := range []int{1, 3} {
		t.Run(fmt.Sprintf("threads%d", threads), func(t *testing.T) {
			m := openModel(t, testmodel.Default(t), Options{Threads: threads, Attention: kernels.AttnTiled})
			checkBatchInvarianceKV(t, m, model.KVQ8_0)
		})
	}
}

func checkBatchInvariance(t *testing.T, m *Model) {
	t.Helper()
	checkBatchInvarianceKV(t, m, model.KVF16)
}

// checkBatchInvarianceKV is checkBatchInvariance on a cache of type typ.
func checkBatchInvarianceKV(t *testing.T, m *Model, typ model.KVType) {
	t.Helper()
	const bs = 4
	vocab := m.Config().VocabSize
	tokens := [][]int32{
		{1, 403, 407, 261, 378, 432, 383, 286, 261},
		{1, 415, 271, 422, 426, 359, 413, 286, 261},
		{1, 262, 415, 271, 422, 426, 359, 413, 286, 261, 370, 432, 352},
	}
	cached := []int{0, 5, 12} // tokens already in the cache before the step
	var caches [2]*model.KVCache
	var seqs [2][]*seq
	for c := range caches {
		caches[c], seqs[c] = cachedSeqs(t, m, bs, tokens, cached, typ)
	}
	together := forwardAll(t, m, seqs[0], bs, caches[0])
	row := 0
	for i, s := range seqs[1] {
		alone := forwardAll(t, m, []*seq{s}, bs, caches[1])
		for j, v := range alone {
			if math.Float32bits(v) != math.Float32bits(together[row*vocab+j]) {
				t.Fatalf("sequence %d: logit %d differs alone (%v) and batched (%v)", i, j, v, together[row*vocab+j])
			}
		}
		row += len(alone) / vocab
	}
}

// cachedSeqs allocates a cache and fills it with the first cached[i]
// tokens of every sequence, each run alone; the returned sequences hold all
// their tokens with the rest pending.
func cachedSeqs(t *testing.T, m *Model, bs int, tokens [][]int32, cached []int, typ model.KVType) (*model.KVCache, []*seq) {
	t.Helper()
	kv, alloc := newCache(t, m, 16, bs, typ)
	var seqs []*seq
	for i, toks := range tokens {
		s := &seq{tokens: toks[:cached[i]]}
		alloc.grow(t, s, len(toks), bs)
		if cached[i] > 0 {
			var b model.Batch
			addSeq(&b, s, bs, false)
			if err := m.Forward(grouped(&b, kv), kv, nil); err != nil {
				t.Fatal(err)
			}
			s.done = cached[i]
		}
		s.tokens = toks
		seqs = append(seqs, s)
	}
	return kv, seqs
}

// TestForwardRejectsBadBatches: every malformed batch yields an error
// wrapping nn.ErrBadBatch, never a panic.
func TestForwardRejectsBadBatches(t *testing.T) {
	m := defaultTinyModel(t)
	kv, err := m.NewKVCache(4, 4, model.KVF32)
	if err != nil {
		t.Fatal(err)
	}
	good := func() *model.Batch {
		return &model.Batch{
			Tokens: []int32{1, 2, 3}, Positions: []int32{0, 1, 2}, SlotMapping: []int32{4, 5, 6},
			QueryStart: []int32{0, 3}, ContextLens: []int32{3}, BlockTables: [][]int32{{1}},
			LogitIndices: []int32{2},
		}
	}
	vocab := m.Config().VocabSize
	if err := m.Forward(good(), kv, make([]float32, vocab)); err != nil {
		t.Fatalf("good batch: %v", err)
	}
	cases := brokenBatches(vocab)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b := good()
			c.mutate(b)
			err := m.Forward(b, kv, make([]float32, c.logits))
			if !errors.Is(err, nn.ErrBadBatch) {
				t.Fatalf("Forward = %v, want nn.ErrBadBatch", err)
			}
		})
	}
	t.Run("wrong cache shape", func(t *testing.T) {
		other, err := model.NewKVCache(model.LayoutOf(1, nil), 4, 4, 2, 16, model.KVF32)
		if err != nil {
			t.Fatal(err)
		}
		if err := m.Forward(good(), other, make([]float32, vocab)); !errors.Is(err, nn.ErrBadBatch) {
			t.Fatalf("Forward = %v, want nn.ErrBadBatch", err)
		}
	})
}

// brokenBatch breaks a valid batch; logits is the buffer size passed.
type brokenBatch struct {
	name   string
	mutate func(b *model.Batch)
	logits int
}

func brokenBatches(vocab int) []brokenBatch {
	return []brokenBatch{
		{"empty", func(b *model.Batch) { *b = model.Batch{} }, 0},
		{"positions length", func(b *model.Batch) { b.Positions = b.Positions[:2] }, vocab},
		{"slot mapping length", func(b *model.Batch) { b.SlotMapping = nil }, vocab},
		{"query starts", func(b *model.Batch) { b.QueryStart = []int32{0, 2} }, vocab},
		{"block tables", func(b *model.Batch) { b.BlockTables = nil }, vocab},
		{"token id", func(b *model.Batch) { b.Tokens[1] = int32(vocab) }, vocab},
		{"negative token", func(b *model.Batch) { b.Tokens[1] = -1 }, vocab},
		{"position gap", func(b *model.Batch) { b.Positions[2] = 5 }, vocab},
		{"context too short", func(b *model.Batch) { b.ContextLens[0] = 2 }, vocab},
		{"context beyond model", func(b *model.Batch) {
			b.ContextLens[0] = 1000
			b.Positions = []int32{997, 998, 999}
		}, vocab},
		{"block table too short", func(b *model.Batch) {
			b.ContextLens[0] = 7
			b.Positions = []int32{4, 5, 6}
		}, vocab},
		{"block outside cache", func(b *model.Batch) { b.BlockTables[0][0] = 9 }, vocab},
		{"slot disagrees with table", func(b *model.Batch) { b.SlotMapping[0] = 0 }, vocab},
		{"logit index", func(b *model.Batch) { b.LogitIndices[0] = 3 }, vocab},
		{"logits buffer", func(b *model.Batch) {}, vocab - 1},
		{"sequence without tokens", func(b *model.Batch) {
			b.QueryStart = []int32{0, 0, 3}
			b.ContextLens = []int32{1, 3}
			b.BlockTables = [][]int32{{0}, {1}}
		}, vocab},
	}
}

// TestForwardSteadyStateAllocs: once buffers have grown, a decode step
// allocates nothing.
func TestForwardSteadyStateAllocs(t *testing.T) {
	m, kv, b, logits := tinyDecodeStep(t, 3)
	if err := m.Forward(b, kv, logits); err != nil {
		t.Fatal(err)
	}
	if a := testalloc.Steady(10, func() {
		if err := m.Forward(b, kv, logits); err != nil {
			t.Fatal(err)
		}
	}); a != 0 {
		t.Fatalf("Forward allocates %v times per decode step", a)
	}
}

// tinyDecodeStep is the default tiny model with a cache of 4 blocks of 4
// F16 tokens, a decode batch of token 5 at position pos in block 0 and a
// logits buffer.
func tinyDecodeStep(t *testing.T, pos int32) (*Model, *model.KVCache, *model.Batch, []float32) {
	t.Helper()
	m := defaultTinyModel(t)
	kv, err := m.NewKVCache(4, 4, model.KVF16)
	if err != nil {
		t.Fatal(err)
	}
	b := &model.Batch{
		Tokens: []int32{5}, Positions: []int32{pos}, SlotMapping: []int32{pos},
		QueryStart: []int32{0, 1}, ContextLens: []int32{pos + 1}, BlockTables: [][]int32{{0}},
		LogitIndices: []int32{0},
	}
	return m, kv, b, make([]float32, m.Config().VocabSize)
}

func defaultTinyModel(t *testing.T) *Model {
	t.Helper()
	m, err := New(defaultTiny().build(t), Options{Threads: 2})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return m
}
