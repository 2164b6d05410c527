package sched

import (
	"errors"
	"testing"

	"pagoda/kvcache"
)

// seqSpec is one sequence of a hand-built step: it computes its last q of
// ctx tokens, its block table is blocks (block size 16).
type seqSpec struct {
	q, ctx int
	blocks []int32
}

const testBlock = 16

// specStep builds a valid step from specs, each sequence sampling.
func specStep(t *testing.T, specs ...seqSpec) *Step {
	t.Helper()
	s := &Step{QueryStart: []int32{0}, BlockTableStart: []int32{0}, LogitStart: []int32{0}}
	for i, sp := range specs {
		for p := sp.ctx - sp.q; p < sp.ctx; p++ {
			s.Tokens = append(s.Tokens, 1)
			s.Positions = append(s.Positions, int32(p))
			s.SlotMapping = append(s.SlotMapping, sp.blocks[p/testBlock]*testBlock+int32(p%testBlock))
		}
		s.LogitIndices = append(s.LogitIndices, int32(len(s.Tokens)-1))
		s.SeqIDs, s.Flags = append(s.SeqIDs, int64(i)), append(s.Flags, FlagSample)
		s.QueryStart = append(s.QueryStart, int32(len(s.Tokens)))
		s.ContextLens = append(s.ContextLens, int32(sp.ctx))
		s.Blocks = append(s.Blocks, sp.blocks...)
		s.BlockTableStart = append(s.BlockTableStart, int32(len(s.Blocks)))
		s.LogitStart = append(s.LogitStart, int32(len(s.LogitIndices)))
	}
	if err := s.Validate(); err != nil {
		t.Fatal(err)
	}
	if err := s.CheckBlocks(1000, 0, testBlock, nil); err != nil {
		t.Fatal(err)
	}
	return s
}

// fresh is a prompt of q tokens in its own blocks from first on.
func fresh(q int, first int32) seqSpec {
	sp := seqSpec{q: q, ctx: q}
	for b := range int32((q + testBlock - 1) / testBlock) {
		sp.blocks = append(sp.blocks, first+b)
	}
	return sp
}

func dboOn() DBO { d := DefaultDBO(); d.Enable = true; return d }

func TestDBOSplitNearestHalf(t *testing.T) {
	var sp Splitter
	cases := []struct {
		name string
		lens []int
		want int32
	}{
		// Boundaries at 100, 450, 600 of 1000 tokens: 450 is nearest the middle.
		{"nearest", []int{100, 350, 150, 400}, 2},
		// 560 | 440: 60 tokens from the middle, within a tenth of 1000.
		{"within a tenth", []int{560, 440}, 1},
		// 600 | 400: exactly a tenth away — vllm-ascend's strict bound refuses it.
		{"a tenth away", []int{600, 400}, 0},
		{"imbalanced", []int{700, 300}, 0},
		{"one sequence", []int{1000}, 0},
		{"under the prefill threshold", []int{300, 211}, 0},
		{"at the prefill threshold", []int{300, 212}, 1},
	}
	for _, c := range cases {
		var specs []seqSpec
		for i, q := range c.lens {
			specs = append(specs, fresh(q, int32(100*i)))
		}
		if got := sp.Split(specStep(t, specs...), dboOn(), testBlock); got != c.want {
			t.Errorf("%s %v: split after %d sequences, want %d", c.name, c.lens, got, c.want)
		}
	}
}

// Decode-only steps use the decode threshold (32 tokens by default), steps
// with a prompt chunk the prefill one; DBO off never splits.
func TestDBOSplitThresholds(t *testing.T) {
	var sp Splitter
	decode := func(n int) *Step {
		var specs []seqSpec
		for i := range n {
			specs = append(specs, seqSpec{q: 1, ctx: 20, blocks: []int32{int32(2 * i), int32(2*i + 1)}})
		}
		return specStep(t, specs...)
	}
	if got := sp.Split(decode(31), dboOn(), testBlock); got != 0 {
		t.Errorf("31 decode tokens: split %d, want none", got)
	}
	if got := sp.Split(decode(32), dboOn(), testBlock); got != 16 {
		t.Errorf("32 decode tokens: split %d, want 16", got)
	}
	if got := sp.Split(decode(32), DefaultDBO(), testBlock); got != 0 {
		t.Errorf("DBO off: split %d", got)
	}
	// 40 tokens with one prompt chunk: over the decode threshold, under the prefill one.
	mixed := specStep(t, fresh(20, 0), fresh(20, 10))
	if got := sp.Split(mixed, dboOn(), testBlock); got != 0 {
		t.Errorf("mixed step of 40 tokens: split %d, want none", got)
	}
	low := dboOn()
	low.PrefillTokenThreshold = 40
	if got := sp.Split(mixed, low, testBlock); got != 1 {
		t.Errorf("mixed step at a prefill threshold of 40: split %d, want 1", got)
	}
}

// A sequence whose cached context includes a block another sequence of the
// step writes (a same-step prefix-cache hit) never runs in an earlier
// micro-batch than that writer.
func TestDBOSplitKeepsReadersAfterWriters(t *testing.T) {
	var sp Splitter
	writer := fresh(390, 500)       // writes blocks 500…524
	reader := func(q int) seqSpec { // 16 cached tokens in block 500, then q new ones
		return seqSpec{q: q, ctx: 16 + q, blocks: []int32{500, 600, 601, 602, 603, 604, 605, 606}}
	}
	// Boundaries at 300 and 410 of 800: 410 is nearest, but it would put the
	// reader first; 300 is a quarter of the tokens off the middle: no split.
	if got := sp.Split(specStep(t, fresh(300, 0), reader(110), writer), dboOn(), testBlock); got != 0 {
		t.Errorf("reader before its writer: split %d, want none", got)
	}
	// Boundaries at 350 and 410: 350 keeps the reader with its writer.
	if got := sp.Split(specStep(t, fresh(350, 0), reader(60), writer), dboOn(), testBlock); got != 1 {
		t.Errorf("reader before its writer: split %d, want 1", got)
	}
	// Writer first: the reader may run in the later micro-batch.
	if got := sp.Split(specStep(t, writer, reader(110), fresh(300, 0)), dboOn(), testBlock); got != 1 {
		t.Errorf("writer before its reader: split %d, want 1", got)
	}
	// A received step that splits a reader before its writer is refused.
	bad := specStep(t, fresh(300, 0), reader(110), writer)
	bad.Split = 2
	if err := sp.Check(bad, testBlock); !errors.Is(err, ErrInvalidStep) {
		t.Errorf("Check accepted a reader before its writer: %v", err)
	}
	bad.Split = 1
	if err := sp.Check(bad, testBlock); err != nil {
		t.Errorf("Check refused a valid split: %v", err)
	}
}

// The scheduler splits a step whose second prompt hits the first prompt's
// blocks in the same step (prefix caching registers blocks when reserved)
// with the reader after the writer.
func TestScheduleDBOWithSameStepPrefixHit(t *testing.T) {
	cfg := Config{MaxNumSeqs: 8, MaxNumBatchedTokens: 4096, DBO: dboOn()}
	cfg.DBO.PrefillTokenThreshold = 64
	s := newSched(t, cfg, kvcache.Config{BlockSize: testBlock, NumBlocks: 64, EnablePrefixCaching: true})
	shared := prompt(1, 64)
	s.Add(group("a", 0, shared))
	s.Add(group("b", 0, append(prompt(1, 64), prompt(900, 56)...)))
	out := step(t, s)
	st := &out.Step
	if st.NumSeqs() != 2 || st.QueryLen(1) >= 120 {
		t.Fatalf("want b to hit a's blocks in the same step: query lengths %d, %d", st.QueryLen(0), st.QueryLen(1))
	}
	if err := s.split.Check(st, testBlock); err != nil || st.Split != 1 {
		t.Fatalf("split after %d sequences (%v), want 1: a, then b which reads a's blocks", st.Split, err)
	}
	t.Logf("step of %d + %d tokens (b reads a's 4 blocks) split after %d sequence", st.QueryLen(0), st.QueryLen(1), st.Split)
}
