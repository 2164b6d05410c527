package llama

import (
	"path/filepath"
	"testing"

	"pagoda/gguf"
	"pagoda/internal/refmath"
	"pagoda/internal/testmodel"
	"pagoda/model"
	"pagoda/model/gemma3"
	"pagoda/model/gptoss"
	"pagoda/model/phi3"
	"pagoda/model/qwen3"
	"pagoda/model/qwen3moe"
	"pagoda/model/synth"
)

// storiesFlashRefPath: llama.cpp's flash-attention decode path on the
// AVX-512 machine (testdata/make_stories_flash_reference.py).
const storiesFlashRefPath = "testdata/stories260k-flash.json"

// The llama.cpp references the tests compare with.
type (
	refCase = testmodel.RefCase
	refStep = testmodel.RefStep
)

// tinyShape is a two-layer llama with 4 query and 2 KV heads, a 512-token
// context and the given widths.
func tinyShape(name string, dim, hidden, vocab int) synth.Shape {
	return synth.Shape{Arch: "llama", Name: name, Dim: dim, HiddenDim: hidden, Layers: 2, Heads: 4, KVHeads: 2,
		VocabSize: vocab, ContextLen: 512, RopeTheta: 10000, RMSEps: 1e-5}
}

// writeSynth writes a synthetic model with opt into the test's temporary
// directory and returns its path.
func writeSynth(t testing.TB, opt synth.Options) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "m.gguf")
	if err := synth.Write(path, opt); err != nil {
		t.Fatal(err)
	}
	return path
}

// familyLoaders are the loaders of the families other than llama's: the
// block-stack tests here (batch invariance, tensor parallelism, dual-batch
// overlap) run every family through the same harness.
var familyLoaders = map[string]func(*gguf.File, Options) (*Model, error){
	"qwen3": qwen3.New, "qwen3moe": qwen3moe.New, "gemma3": gemma3.New, "phi3": phi3.New, "gpt-oss": gptoss.New,
}

// openModel loads a GGUF model with the given options, with its family's
// loader.
func openModel(t testing.TB, path string, opt Options) *Model {
	t.Helper()
	f, err := gguf.Open(path)
	if err != nil {
		t.Fatalf("open %s: %v", path, err)
	}
	arch, _ := f.String("general.architecture")
	load, ok := familyLoaders[arch]
	if !ok {
		load = New
	}
	m, err := load(f, opt)
	if err != nil {
		f.Close()
		t.Fatalf("load %s: %v", path, err)
	}
	t.Cleanup(func() { m.Close() })
	return m
}

// seq is one sequence being decoded: its tokens and the blocks holding
// their keys and values, allocated sequentially from a shared counter.
type seq struct {
	tokens []int32
	table  []int32
	done   int // tokens whose K/V are in the cache
}

// blockAlloc hands out cache blocks in order.
type blockAlloc struct {
	next, total int32
}

// newCache allocates a KV cache of blocks blocks of bs tokens and an
// allocator that hands out all of them.
func newCache(t testing.TB, m *Model, blocks, bs int, typ model.KVType) (*model.KVCache, *blockAlloc) {
	t.Helper()
	kv, err := m.NewKVCache(blocks*m.Config().KVLayout().NumGroups(), bs, typ)
	if err != nil {
		t.Fatal(err)
	}
	return kv, &blockAlloc{total: int32(blocks)}
}

func (a *blockAlloc) grow(t testing.TB, s *seq, ctx, bs int) {
	for len(s.table)*bs < ctx {
		if a.next == a.total {
			t.Fatalf("test cache of %d blocks exhausted", a.total)
		}
		s.table = append(s.table, a.next)
		a.next++
	}
}

// addSeq appends sequence s's pending tokens (done..len) to the batch.
func addSeq(b *model.Batch, s *seq, bs int, wantLogits bool) {
	if len(b.QueryStart) == 0 {
		b.QueryStart = []int32{0}
	}
	for p := s.done; p < len(s.tokens); p++ {
		b.Tokens = append(b.Tokens, s.tokens[p])
		b.Positions = append(b.Positions, int32(p))
		b.SlotMapping = append(b.SlotMapping, s.table[p/bs]*int32(bs)+int32(p%bs))
	}
	if wantLogits {
		b.LogitIndices = append(b.LogitIndices, int32(len(b.Tokens)-1))
	}
	b.QueryStart = append(b.QueryStart, int32(len(b.Tokens)))
	b.ContextLens = append(b.ContextLens, int32(len(s.tokens)))
	b.BlockTables = append(b.BlockTables, s.table)
}

// grouped is model.SpreadGroups for the tests' hand-made batches.
func grouped(b *model.Batch, kv *model.KVCache) *model.Batch {
	out, err := model.SpreadGroups(b, kv)
	if err != nil {
		panic(err)
	}
	return out
}

// decoder runs one sequence: the prompt is prefilled in one batch, then
// one token per step.
type decoder struct {
	m      *Model
	kv     *model.KVCache
	alloc  *blockAlloc
	s      *seq
	logits []float32
}

func newDecoder(m *Model, kv *model.KVCache, alloc *blockAlloc, prompt []int32) *decoder {
	return &decoder{m: m, kv: kv, alloc: alloc, s: &seq{tokens: append([]int32(nil), prompt...)},
		logits: make([]float32, m.Config().VocabSize)}
}

// next runs the pending tokens and returns the log-softmax of the last.
func (d *decoder) next(t testing.TB) []float64 {
	t.Helper()
	d.alloc.grow(t, d.s, len(d.s.tokens), d.kv.BlockSize)
	var b model.Batch
	addSeq(&b, d.s, d.kv.BlockSize, true)
	if err := d.m.Forward(grouped(&b, d.kv), d.kv, d.logits); err != nil {
		t.Fatalf("forward: %v", err)
	}
	d.s.done = len(d.s.tokens)
	return refmath.LogSoftmax(d.logits)
}

// push appends a token to the sequence.
func (d *decoder) push(id int32) { d.s.tokens = append(d.s.tokens, id) }

// greedy decodes steps tokens after prompt and returns the ids and every
// step's log-softmax row.
func greedy(t testing.TB, m *Model, kv *model.KVCache, alloc *blockAlloc, prompt []int32, steps int) ([]int32, [][]float64) {
	t.Helper()
	d := newDecoder(m, kv, alloc, prompt)
	var ids []int32
	var rows [][]float64
	for range steps {
		lp := d.next(t)
		id := argmax(lp)
		ids = append(ids, id)
		rows = append(rows, lp)
		d.push(id)
	}
	return ids, rows
}

// argmax returns the first index of the largest value (as llama.cpp's
// greedy sampler).
func argmax[T float32 | float64](x []T) int32 {
	best := 0
	for i, v := range x {
		if v > x[best] {
			best = i
		}
	}
	return int32(best)
}
