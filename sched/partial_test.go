package sched

import (
	"slices"
	"testing"

	"pagoda/kvcache"
)

// checkPartialPrefills checks a step against the partial-prefill limits of
// cfg: no chunk above LongPrefillTokenThreshold, at most
// MaxNumPartialPrefills groups prefilling, at most MaxLongPartialPrefills of
// them long. Call it after step (which appends a token to each sampler).
func checkPartialPrefills(t *testing.T, out *Output, cfg Config) {
	t.Helper()
	prefill, long := map[*Group]bool{}, map[*Group]bool{}
	for _, sq := range out.Seqs {
		if th := cfg.LongPrefillTokenThreshold; th > 0 && sq.NumTokens > th {
			t.Fatalf("request %s computes %d tokens, threshold %d", sq.Group.RequestID, sq.NumTokens, th)
		}
		left := sq.NumTokens // tokens left before the step
		if !sq.Sample {
			left = sq.Seq.NumTokens() - sq.Start
		}
		if left > 1 {
			prefill[sq.Group] = true
		}
		if th := cfg.LongPrefillTokenThreshold; th > 0 && left > th {
			long[sq.Group] = true
		}
	}
	if m := cfg.MaxNumPartialPrefills; m > 0 && len(prefill) > m {
		t.Fatalf("%d groups prefill in one step, limit %d", len(prefill), m)
	}
	if m := max(cfg.MaxLongPartialPrefills, 1); cfg.LongPrefillTokenThreshold > 0 && len(long) > m {
		t.Fatalf("%d long prefills in one step, limit %d", len(long), m)
	}
}

func checkShapes(t *testing.T, s *Scheduler, want [][]shape) {
	t.Helper()
	for i, w := range want {
		if got := shapes(step(t, s)); !slices.Equal(got, w) {
			t.Fatalf("step %d: got %v, want %v", i, got, w)
		}
	}
}

// A decode runs before a prefill, even one of a higher priority: without
// that, a long prompt of priority 0 takes the whole budget every step and
// the running request of priority 1 stalls until it has been computed.
func TestDecodesFirst(t *testing.T) {
	s := newSched(t, Config{MaxNumSeqs: 4, MaxNumBatchedTokens: 8},
		kvcache.Config{BlockSize: 4, NumBlocks: 64})
	s.Add(group("low", 1, prompt(100, 2)))
	step(t, s)
	s.Add(group("high", 0, prompt(200, 30)))
	checkShapes(t, s, [][]shape{
		{{"low", 2, 1, true}, {"high", 0, 7, false}},
		{{"low", 3, 1, true}, {"high", 7, 7, false}},
		{{"low", 4, 1, true}, {"high", 14, 7, false}},
	})
}

// A prompt longer than the threshold is computed in chunks of at most the
// threshold, beside the decodes, even when the budget would take it whole.
func TestLongPrefillChunkedToThreshold(t *testing.T) {
	s := newSched(t, Config{MaxNumSeqs: 4, MaxNumBatchedTokens: 64, LongPrefillTokenThreshold: 6},
		kvcache.Config{BlockSize: 4, NumBlocks: 64})
	s.Add(group("short", 0, prompt(100, 3)))
	s.Add(group("long", 0, prompt(200, 20)))
	checkShapes(t, s, [][]shape{
		{{"short", 0, 3, true}, {"long", 0, 6, false}},
		{{"short", 3, 1, true}, {"long", 6, 6, false}},
		{{"short", 4, 1, true}, {"long", 12, 6, false}},
		{{"short", 5, 1, true}, {"long", 18, 2, true}},
		{{"short", 6, 1, true}, {"long", 20, 1, true}},
	})
}

// At most MaxNumPartialPrefills groups prefill in a step, at most
// MaxLongPartialPrefills of them long: a long prompt waits for the long
// slot while a short one behind it starts, and starts itself once the
// running long prefill has fewer than the threshold tokens left.
func TestPartialPrefillLimits(t *testing.T) {
	s := newSched(t, Config{MaxNumSeqs: 8, MaxNumBatchedTokens: 64, LongPrefillTokenThreshold: 8,
		MaxNumPartialPrefills: 2, MaxLongPartialPrefills: 1}, kvcache.Config{BlockSize: 4, NumBlocks: 64})
	s.Add(group("L1", 0, prompt(100, 30)))
	s.Add(group("L2", 0, prompt(200, 30)))
	s.Add(group("S1", 0, prompt(300, 4)))
	s.Add(group("S2", 0, prompt(400, 4)))
	checkShapes(t, s, [][]shape{
		{{"L1", 0, 8, false}, {"S1", 0, 4, true}},
		{{"S1", 4, 1, true}, {"L1", 8, 8, false}, {"S2", 0, 4, true}},
		{{"S1", 5, 1, true}, {"S2", 4, 1, true}, {"L1", 16, 8, false}},
		{{"S1", 6, 1, true}, {"S2", 5, 1, true}, {"L1", 24, 6, true}, {"L2", 0, 8, false}},
	})
	if s.NumWaiting() != 0 {
		t.Fatalf("waiting = %d, want 0", s.NumWaiting())
	}
}

// With MaxNumPartialPrefills 1 prompts start one at a time, in order.
func TestOnePartialPrefill(t *testing.T) {
	s := newSched(t, Config{MaxNumSeqs: 8, MaxNumBatchedTokens: 64, MaxNumPartialPrefills: 1},
		kvcache.Config{BlockSize: 4, NumBlocks: 64})
	s.Add(group("a", 0, prompt(100, 5)))
	s.Add(group("b", 0, prompt(200, 5)))
	s.Add(group("c", 0, prompt(300, 5)))
	checkShapes(t, s, [][]shape{
		{{"a", 0, 5, true}},
		{{"a", 5, 1, true}, {"b", 0, 5, true}},
		{{"a", 6, 1, true}, {"b", 5, 1, true}, {"c", 0, 5, true}},
	})
}

func TestPartialPrefillConfigErrors(t *testing.T) {
	base := Config{MaxNumSeqs: 4, MaxNumBatchedTokens: 64}
	for _, tc := range []struct {
		name string
		edit func(*Config)
	}{
		{"negative threshold", func(c *Config) { c.LongPrefillTokenThreshold = -1 }},
		{"negative partial", func(c *Config) { c.MaxNumPartialPrefills = -1 }},
		{"negative long", func(c *Config) { c.MaxLongPartialPrefills = -1 }},
		{"long above partial", func(c *Config) { c.MaxNumPartialPrefills, c.MaxLongPartialPrefills = 2, 3 }},
	} {
		c := base
		tc.edit(&c)
		if err := c.Validate(); err == nil {
			t.Errorf("%s: %+v validated", tc.name, c)
		}
	}
	ok := base
	ok.LongPrefillTokenThreshold, ok.MaxNumPartialPrefills, ok.MaxLongPartialPrefills = 256, 4, 4
	if err := ok.Validate(); err != nil {
		t.Fatal(err)
	}
}
