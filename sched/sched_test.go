package sched

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"pagoda/kvcache"
)

func newSched(t testing.TB, cfg Config, kcfg kvcache.Config) *Scheduler {
	t.Helper()
	kv, err := kvcache.New(kcfg)
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(cfg, kv)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func prompt(first, n int) []int32 {
	p := make([]int32, n)
	for i := range p {
		p[i] = int32(first + i)
	}
	return p
}

func group(id string, priority int, tokens []int32) *Group {
	return &Group{RequestID: id, Priority: priority,
		Seqs: []*Sequence{{Tokens: slices.Clone(tokens), NumPromptTokens: len(tokens)}}}
}

// step schedules one step and appends token 7 to every sequence that samples.
func step(t testing.TB, s *Scheduler) *Output {
	t.Helper()
	out, err := s.Schedule()
	if err != nil {
		t.Fatal(err)
	}
	for _, sq := range out.Seqs {
		if sq.Sample {
			sq.Seq.Append(7)
		}
	}
	if err := s.kv.CheckInvariants(); err != nil {
		t.Fatal(err)
	}
	return out
}

type shape struct {
	req    string
	start  int
	n      int
	sample bool
}

func shapes(out *Output) []shape {
	var r []shape
	for _, sq := range out.Seqs {
		r = append(r, shape{sq.Group.RequestID, sq.Start, sq.NumTokens, sq.Sample})
	}
	return r
}

func TestChunkedPrefillMixesWithDecode(t *testing.T) {
	s := newSched(t, Config{MaxNumSeqs: 4, MaxNumBatchedTokens: 8},
		kvcache.Config{BlockSize: 4, NumBlocks: 64})
	s.Add(group("a", 0, prompt(100, 3)))
	s.Add(group("b", 0, prompt(200, 12)))
	want := [][]shape{
		{{"a", 0, 3, true}, {"b", 0, 5, false}},
		{{"a", 3, 1, true}, {"b", 5, 7, true}},
		{{"a", 4, 1, true}, {"b", 12, 1, true}},
	}
	for i, w := range want {
		got := shapes(step(t, s))
		if !slices.Equal(got, w) {
			t.Fatalf("step %d: got %v, want %v", i, got, w)
		}
	}
}

func TestPriorityOrderAndFCFS(t *testing.T) {
	s := newSched(t, Config{MaxNumSeqs: 2, MaxNumBatchedTokens: 64},
		kvcache.Config{BlockSize: 4, NumBlocks: 64})
	s.Add(group("late-low", 5, prompt(1, 2)))
	s.Add(group("first", 0, prompt(10, 2)))
	s.Add(group("second", 0, prompt(20, 2)))
	got := shapes(step(t, s))
	want := []shape{{"first", 0, 2, true}, {"second", 0, 2, true}}
	if !slices.Equal(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	if s.NumWaiting() != 1 {
		t.Fatalf("waiting = %d, want 1", s.NumWaiting())
	}
}

func TestPreemptRecomputeNewestFirst(t *testing.T) {
	// 4 blocks of 2 tokens: two sequences of 4 tokens fill the cache, the
	// next decode step needs a block, so the newest is preempted and later
	// recomputed from scratch.
	s := newSched(t, Config{MaxNumSeqs: 4, MaxNumBatchedTokens: 64},
		kvcache.Config{BlockSize: 2, NumBlocks: 4})
	s.Add(group("old", 0, prompt(1, 4)))
	s.Add(group("new", 0, prompt(10, 4)))
	step(t, s)
	out := step(t, s)
	if out.NumPreempted != 1 || !slices.Equal(shapes(out), []shape{{"old", 4, 1, true}}) {
		t.Fatalf("got %v, preempted %d", shapes(out), out.NumPreempted)
	}
	if s.NumWaiting() != 1 || s.waiting[0].Seqs[0].NumComputedTokens != 0 {
		t.Fatal("preempted group should wait with nothing computed")
	}
	s.FinishSeq(s.running[0].Seqs[0])
	out = step(t, s)
	if !slices.Equal(shapes(out), []shape{{"new", 0, 5, true}}) {
		t.Fatalf("recompute: got %v", shapes(out))
	}
}

func TestPreemptSwapsGroupsOfSeveral(t *testing.T) {
	s := newSched(t, Config{MaxNumSeqs: 8, MaxNumBatchedTokens: 64},
		kvcache.Config{BlockSize: 2, NumBlocks: 6, NumHostBlocks: 8})
	s.Add(group("solo", 0, prompt(1, 4)))
	g := group("pair", 0, prompt(10, 3))
	s.Add(g)
	step(t, s) // solo: 2 blocks + sample; pair: 2 blocks + sample
	if _, err := s.Fork(g, g.Seqs[0]); err != nil {
		t.Fatal(err)
	}
	g.Seqs[1].Tokens[len(g.Seqs[1].Tokens)-1] = 8 // the fork sampled another token
	// solo needs a block, pair needs two (one copy-on-write): 1 free left
	out := step(t, s)
	if out.NumPreempted != 1 || len(out.Step.SwapOut) == 0 || s.NumSwapped() != 1 {
		t.Fatalf("want the pair swapped out, got preempted=%d swapOut=%v swapped=%d", out.NumPreempted, out.Step.SwapOut, s.NumSwapped())
	}
	s.FinishSeq(s.running[0].Seqs[0])
	out = step(t, s)
	if len(out.Step.SwapIn) == 0 || len(out.Seqs) != 2 {
		t.Fatalf("want the pair swapped back in and scheduled, got %v swapIn=%v", shapes(out), out.Step.SwapIn)
	}
}

func TestIgnoresGroupThatCanNeverFit(t *testing.T) {
	s := newSched(t, Config{MaxNumSeqs: 4, MaxNumBatchedTokens: 64},
		kvcache.Config{BlockSize: 2, NumBlocks: 2})
	s.Add(group("huge", 0, prompt(1, 9)))
	out := step(t, s)
	if len(out.Ignored) != 1 || s.HasUnfinished() {
		t.Fatalf("want the group ignored, got %v", out.Ignored)
	}
}

func TestAbortFreesBlocks(t *testing.T) {
	s := newSched(t, Config{MaxNumSeqs: 4, MaxNumBatchedTokens: 64},
		kvcache.Config{BlockSize: 2, NumBlocks: 8})
	s.Add(group("a", 0, prompt(1, 5)))
	step(t, s)
	if g := s.Abort("a"); g == nil || !g.Finished() {
		t.Fatal("abort should return the finished group")
	}
	if s.kv.NumFreeBlocks() != 8 || s.HasUnfinished() {
		t.Fatalf("free = %d, want 8", s.kv.NumFreeBlocks())
	}
	if s.Abort("a") != nil {
		t.Fatal("second abort should find nothing")
	}
}

// TestRandomWorkload drives the scheduler with random requests, forks and
// finishes, checking the block manager's invariants after every step, the
// step limits, and that every request reaches its length with no block
// leaked.
func TestRandomWorkload(t *testing.T) {
	for _, tc := range []struct {
		mode              PreemptionMode
		blockSize, blocks int
		caching           bool
		partial           bool // with partial-prefill limits
	}{
		{PreemptAuto, 4, 14, true, false}, {PreemptAuto, 16, 6, false, false},
		{PreemptRecompute, 4, 12, true, false}, {PreemptSwap, 2, 24, true, false}, {PreemptAuto, 1, 40, false, false},
		{PreemptRecompute, 4, 12, true, true}, {PreemptRecompute, 2, 20, false, true},
	} {
		t.Run(fmt.Sprintf("mode%d_bs%d_caching%v_partial%v", tc.mode, tc.blockSize, tc.caching, tc.partial), func(t *testing.T) {
			cfg := Config{MaxNumSeqs: 6, MaxNumBatchedTokens: 24, Preemption: tc.mode}
			if tc.partial {
				cfg.LongPrefillTokenThreshold, cfg.MaxNumPartialPrefills, cfg.MaxLongPartialPrefills = 5, 2, 1
			}
			randomWorkload(t, cfg, tc.blockSize, tc.blocks, tc.caching)
		})
	}
}

func randomWorkload(t *testing.T, cfg Config, blockSize, blocks int, caching bool) {
	r := rand.New(rand.NewPCG(uint64(blockSize), uint64(blocks)))
	s := newSched(t, cfg, kvcache.Config{BlockSize: blockSize, NumBlocks: blocks,
		NumHostBlocks: blocks, EnablePrefixCaching: caching})
	target := map[*Sequence]int{}
	var groups []*Group
	for i := range 40 {
		p := prompt(r.IntN(3)*50, 1+r.IntN(20)) // shared prefixes
		g := group(fmt.Sprint(i), r.IntN(3), p)
		g.MaxSeqs = 1 + r.IntN(2)
		s.Add(g)
		groups = append(groups, g)
		target[g.Seqs[0]] = len(p) + 1 + r.IntN(10)
	}
	dropped := map[*Group]bool{}
	for steps := 0; s.HasUnfinished(); steps++ {
		if steps > 5000 {
			t.Fatal("workload did not finish")
		}
		out := step(t, s)
		for _, g := range out.Ignored {
			dropped[g] = true
		}
		checkLimits(t, s, out, cfg)
		checkStep(t, s, out, blockSize, blocks)
		for _, sq := range out.Seqs {
			q := sq.Seq
			if !sq.Sample {
				continue
			}
			if sq.Group.MaxSeqs == 2 && len(sq.Group.Seqs) == 1 {
				c, err := s.Fork(sq.Group, q)
				if err != nil {
					t.Fatal(err)
				}
				target[c] = target[q] + r.IntN(4)
			}
			if q.NumTokens() >= target[q] {
				s.FinishSeq(q)
			}
		}
		if steps%7 == 3 && r.IntN(4) == 0 {
			if g := s.Abort(groups[r.IntN(len(groups))].RequestID); g != nil {
				dropped[g] = true
			}
		}
	}
	for _, g := range groups {
		for _, q := range g.Seqs {
			if !dropped[g] && q.NumTokens() < target[q] {
				t.Fatalf("request %s lost: %d of %d tokens", g.RequestID, q.NumTokens(), target[q])
			}
		}
	}
	if err := s.kv.CheckInvariants(); err != nil {
		t.Fatal(err)
	}
	t.Logf("preemptions %d, prefix cache %+v", s.NumPreemptions, s.kv.Stats())
	if s.NumPreemptions == 0 {
		t.Fatal("the workload never preempted: make the cache smaller")
	}
	if free := s.kv.NumFreeBlocks(); free != blocks || s.kv.NumFreeHostBlocks() != blocks {
		t.Fatalf("leaked blocks: free device %d/%d, host %d/%d", free, blocks, s.kv.NumFreeHostBlocks(), blocks)
	}
}

func checkLimits(t *testing.T, s *Scheduler, out *Output, cfg Config) {
	t.Helper()
	if out.NumBatchedTokens > cfg.MaxNumBatchedTokens {
		t.Fatalf("step has %d tokens, budget %d", out.NumBatchedTokens, cfg.MaxNumBatchedTokens)
	}
	if n := s.numRunningSeqs(); n > cfg.MaxNumSeqs {
		t.Fatalf("%d running sequences, limit %d", n, cfg.MaxNumSeqs)
	}
	checkPartialPrefills(t, out, cfg)
	for _, sq := range out.Seqs {
		if sq.Seq.NumComputedTokens > sq.Seq.NumTokens() || sq.Seq.Status != StatusRunning {
			t.Fatalf("bad scheduled sequence %+v", *sq.Seq)
		}
		if n, _ := s.kv.NumTokens(sq.Seq.ID); n != sq.Start+sq.NumTokens {
			t.Fatalf("seq %d: %d slots reserved, want %d", sq.Seq.ID, n, sq.Start+sq.NumTokens)
		}
	}
}

func TestRandomWorkloadExercisesPreemption(t *testing.T) {
	// Guard against a workload too gentle to test anything: the small
	// caches above must force both kinds of preemption.
	for _, mode := range []PreemptionMode{PreemptRecompute, PreemptSwap} {
		s := newSched(t, Config{MaxNumSeqs: 6, MaxNumBatchedTokens: 24, Preemption: mode},
			kvcache.Config{BlockSize: 2, NumBlocks: 12, NumHostBlocks: 40})
		for i := range 6 {
			s.Add(group(fmt.Sprint(i), 0, prompt(i*100, 6)))
		}
		swaps := 0
		for steps := 0; steps < 30; steps++ {
			out := step(t, s)
			swaps += len(out.Step.SwapOut)
		}
		if s.NumPreemptions == 0 || (mode == PreemptSwap) != (swaps > 0) {
			t.Fatalf("mode %d: preemptions %d, swapped blocks %d", mode, s.NumPreemptions, swaps)
		}
	}
}
