package sched

import (
	"slices"
	"testing"

	"pagoda/kvcache"
)

// checkStep checks that out.Step describes out.Seqs completely: the same
// sequences in order, their tokens, positions, slots and block tables as
// the block manager has them, the logit rows the engine reads, and that it
// is valid, fits the cache and survives its wire encoding.
func checkStep(t *testing.T, s *Scheduler, out *Output, blockSize, blocks int) {
	t.Helper()
	st := &out.Step
	if err := st.Validate(); err != nil {
		t.Fatal(err)
	}
	if err := st.CheckBlocks(blocks, blocks, blockSize, nil); err != nil {
		t.Fatal(err)
	}
	if st.NumSeqs() != len(out.Seqs) || st.NumTokens() != out.NumBatchedTokens {
		t.Fatalf("step has %d sequences and %d tokens, output %d and %d", st.NumSeqs(), st.NumTokens(), len(out.Seqs), out.NumBatchedTokens)
	}
	for i, sq := range out.Seqs {
		q, first := sq.Seq, int(st.QueryStart[i])
		if st.SeqIDs[i] != q.ID || st.QueryLen(i) != sq.NumTokens || int(st.ContextLens[i]) != sq.Start+sq.NumTokens {
			t.Fatalf("seq %d: step %d/%d/%d, scheduled %+v", i, st.SeqIDs[i], st.QueryLen(i), st.ContextLens[i], sq)
		}
		if !slices.Equal(st.Tokens[first:first+sq.NumTokens], q.Tokens[sq.Start:sq.Start+sq.NumTokens]) {
			t.Fatalf("seq %d: tokens differ", i)
		}
		if !slices.Equal(st.BlockTable(i), s.kv.BlockTable(q.ID)) {
			t.Fatalf("seq %d: block table %v, manager %v", i, st.BlockTable(i), s.kv.BlockTable(q.ID))
		}
		for j := range sq.NumTokens {
			if slot, err := s.kv.SlotFor(q.ID, sq.Start+j); err != nil || slot != st.SlotMapping[first+j] {
				t.Fatalf("seq %d token %d: slot %d, manager %d (%v)", i, j, st.SlotMapping[first+j], slot, err)
			}
		}
		wantLogits := 0
		switch {
		case sq.Group.AllLogits:
			wantLogits = sq.NumTokens
		case sq.Sample:
			wantLogits = 1
		}
		if st.NumLogits(i) != wantLogits || (st.Flags[i]&FlagSample != 0) != sq.Sample {
			t.Fatalf("seq %d: %d logit rows, flags %b, scheduled %+v", i, st.NumLogits(i), st.Flags[i], sq)
		}
	}
	roundTrip(t, st)
}

// A step's cache operations are its own: preemption by swap records the
// swap-outs in the step, and a forked sequence appending to a shared
// block records the copy-on-write.
func TestStepCarriesCacheOps(t *testing.T) {
	s := newSched(t, Config{MaxNumSeqs: 4, MaxNumBatchedTokens: 64},
		kvcache.Config{BlockSize: 4, NumBlocks: 16, NumHostBlocks: 16})
	g := group("a", 0, prompt(10, 6))
	g.MaxSeqs = 2
	s.Add(g)
	out := step(t, s)
	if _, err := s.Fork(g, g.Seqs[0]); err != nil {
		t.Fatal(err)
	}
	out = step(t, s)
	if len(out.Step.Copies) != 1 || out.Step.NumSeqs() != 2 || out.Step.NumTokens() != 2 {
		t.Fatalf("want one copy-on-write and two decode tokens, got %+v", out.Step)
	}
	checkStep(t, s, out, 4, 16)
}
