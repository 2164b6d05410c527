// Package sched is pagoda's scheduler (vLLM's Scheduler): it decides, each
// step, which sequences run and how many tokens each computes, within a token
// budget and the free KV blocks, preempting when blocks run out.
//
// There are no prefill and decode phases, one rule: a running sequence has
// NumComputedTokens of its len(Tokens) tokens in the cache, and a step gives
// it up to len(Tokens) − NumComputedTokens more, within
// MaxNumBatchedTokens. A new prompt, a chunk of a long prompt (chunked
// prefill), a single decode token and the recomputation of a preempted
// sequence all follow from it.
//
// Queues, in the order a step serves them:
//
//	running  ─ each group, by (priority, arrival), gets its tokens; when the
//	           blocks run out the last group (lowest priority, newest) is
//	           preempted: recomputed (one sequence) or swapped (several)
//	swapped  ─ come back first, when no group was preempted this step
//	waiting  ─ admitted by (priority, arrival) while budget, MaxNumSeqs and
//	           blocks allow, only when nothing is swapped out
//
// Each step comes out twice: Output.Seqs, the engine's view (groups and
// sequences to update after the step), and Output.Step, the runner's — a
// plain-data, serializable description of the whole step (see Step), which
// with tensor parallelism rank 0 broadcasts to the other ranks.
//
// A Scheduler is not safe for concurrent use: the engine loop owns it.
package sched

import (
	"cmp"
	"errors"
	"fmt"
	"slices"

	"pagoda/kvcache"
)

// PreemptionMode chooses how a group gives its blocks back.
type PreemptionMode int

const (
	// PreemptAuto recomputes single-sequence groups and swaps groups of
	// several sequences (falling back to recompute when swap space is full).
	PreemptAuto PreemptionMode = iota
	PreemptRecompute
	PreemptSwap
)

// ParsePreemptionMode parses "auto", "recompute" or "swap".
func ParsePreemptionMode(s string) (PreemptionMode, error) {
	switch s {
	case "", "auto":
		return PreemptAuto, nil
	case "recompute":
		return PreemptRecompute, nil
	case "swap":
		return PreemptSwap, nil
	}
	return 0, fmt.Errorf("--preemption-mode: %q is not one of auto, recompute, swap", s)
}

// Config bounds what one step may schedule.
//
// The partial-prefill limits are vLLM's (--long-prefill-token-threshold,
// --max-num-partial-prefills, --max-long-partial-prefills): a group is
// prefilling while one of its sequences has more than one token left to
// compute, and its prefill is long while more than LongPrefillTokenThreshold
// are left. Together they bound the prompt tokens of a step to
// MaxNumPartialPrefills × LongPrefillTokenThreshold, so decodes are never
// stalled behind a step full of prompts.
type Config struct {
	MaxNumSeqs          int // sequences running at once
	MaxNumBatchedTokens int // tokens computed per step
	Preemption          PreemptionMode
	// DBO decides which steps run as two micro-batches (Step.Split).
	DBO DBO
	// LongPrefillTokenThreshold caps the tokens a sequence computes in one
	// step (a longer prefill is chunked to it) and marks longer prefills
	// as long. 0: no cap.
	LongPrefillTokenThreshold int
	// MaxNumPartialPrefills bounds the groups prefilling in one step;
	// waiting groups are admitted only while fewer are. 0: no bound.
	MaxNumPartialPrefills int
	// MaxLongPartialPrefills bounds the long prefills among them: a long
	// waiting group beyond it stays waiting while shorter ones behind it
	// are admitted. 0 means 1 (vLLM's default).
	MaxLongPartialPrefills int
}

// Validate checks the configuration.
func (c Config) Validate() error {
	switch {
	case c.MaxNumSeqs < 1:
		return fmt.Errorf("--max-num-seqs must be ≥ 1, got %d", c.MaxNumSeqs)
	case c.MaxNumBatchedTokens < c.MaxNumSeqs:
		return fmt.Errorf("--max-num-batched-tokens must be ≥ --max-num-seqs (%d), got %d", c.MaxNumSeqs, c.MaxNumBatchedTokens)
	case c.LongPrefillTokenThreshold < 0:
		return fmt.Errorf("--long-prefill-token-threshold must be ≥ 0 (0: no threshold), got %d", c.LongPrefillTokenThreshold)
	case c.MaxNumPartialPrefills < 0:
		return fmt.Errorf("--max-num-partial-prefills must be ≥ 0 (0: no limit), got %d", c.MaxNumPartialPrefills)
	case c.MaxLongPartialPrefills < 0:
		return fmt.Errorf("--max-long-partial-prefills must be ≥ 1 (0: 1), got %d", c.MaxLongPartialPrefills)
	case c.MaxNumPartialPrefills > 0 && c.MaxLongPartialPrefills > c.MaxNumPartialPrefills:
		return fmt.Errorf("--max-long-partial-prefills must be ≤ --max-num-partial-prefills (%d), got %d",
			c.MaxNumPartialPrefills, c.MaxLongPartialPrefills)
	}
	if c.DBO.Enable {
		return c.DBO.Validate()
	}
	return nil
}

// ScheduledSeq is one sequence's share of a step: it computes
// Seq.Tokens[Start : Start+NumTokens].
type ScheduledSeq struct {
	Group     *Group
	Seq       *Sequence
	Start     int
	NumTokens int
	Sample    bool // the chunk reaches the end of Tokens: sample the next token
	// NumSpec of the NumTokens are proposals (speculative decoding): the
	// last NumSpec tokens, appended to Seq.Tokens for the step; every row
	// returns logits, and the engine calls Settle after verifying them.
	NumSpec int
}

// Output is one step's plan: the engine's view (Seqs, with the groups and
// sequences to update after the step) and the runner's (Step, the
// complete description of the forward pass and cache operations, which is
// what crosses to the runner and, with tensor parallelism, to other ranks).
// Step's sequence i is Seqs[i]. Its slices are reused by the next Schedule
// call.
type Output struct {
	Seqs             []ScheduledSeq
	Step             Step
	NumBatchedTokens int // len(Step.Tokens)
	NumPreempted     int // groups preempted while building this step
	// Ignored lists groups removed because they can never fit in the KV
	// cache; the engine finishes them with an error.
	Ignored []*Group
}

func (o *Output) reset() {
	o.Seqs = o.Seqs[:0]
	o.Step.Reset()
	clear(o.Ignored)
	o.Ignored = o.Ignored[:0]
	o.NumBatchedTokens, o.NumPreempted = 0, 0
}

// ErrCacheTooSmall finishes a group that needs more blocks than the cache has.
var ErrCacheTooSmall = errors.New("sched: request needs more KV cache blocks than the cache has")

// Scheduler holds the queues and the block manager.
type Scheduler struct {
	cfg      Config
	kv       *kvcache.Manager
	waiting  []*Group
	running  []*Group
	swapped  []*Group
	out      Output
	arrivals int64
	seqIDs   int64
	ids      []int64 // scratch sequence ids
	split    Splitter

	// NumPreemptions counts preemptions since start; NumSwapOuts those
	// that swapped a group out (the rest recomputed).
	NumPreemptions, NumSwapOuts int64
}

// New returns a scheduler over the block manager kv.
func New(cfg Config, kv *kvcache.Manager) (*Scheduler, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg.MaxLongPartialPrefills = max(cfg.MaxLongPartialPrefills, 1)
	return &Scheduler{cfg: cfg, kv: kv}, nil
}

// NumWaiting, NumRunning and NumSwapped count groups in each queue.
func (s *Scheduler) NumWaiting() int { return len(s.waiting) }
func (s *Scheduler) NumRunning() int { return len(s.running) }
func (s *Scheduler) NumSwapped() int { return len(s.swapped) }

// HasUnfinished reports whether any group is queued.
func (s *Scheduler) HasUnfinished() bool {
	return len(s.waiting)+len(s.running)+len(s.swapped) > 0
}

// Add queues a new group. Its sequences get ids and start waiting with
// nothing computed.
func (s *Scheduler) Add(g *Group) {
	s.arrivals++
	g.arrival = s.arrivals
	for _, q := range g.Seqs {
		s.seqIDs++
		q.ID = s.seqIDs
		q.Status = StatusWaiting
		q.NumComputedTokens = 0
	}
	if g.MaxSeqs < len(g.Seqs) {
		g.MaxSeqs = len(g.Seqs)
	}
	s.waiting = append(s.waiting, g)
}

// Fork adds to g a copy of parent that shares parent's blocks (the last one
// is copied on write when either appends to it).
func (s *Scheduler) Fork(g *Group, parent *Sequence) (*Sequence, error) {
	s.seqIDs++
	child := &Sequence{
		ID:                s.seqIDs,
		Tokens:            slices.Clone(parent.Tokens),
		NumPromptTokens:   parent.NumPromptTokens,
		NumComputedTokens: parent.NumComputedTokens,
		Status:            parent.Status,
	}
	if parent.Status == StatusRunning || parent.Status == StatusSwapped {
		if err := s.kv.Fork(parent.ID, child.ID); err != nil {
			return nil, err
		}
	}
	g.Seqs = append(g.Seqs, child)
	return child, nil
}

// FinishSeq releases a sequence's blocks and marks it finished. A group
// whose sequences have all finished leaves the queues at the next Schedule.
func (s *Scheduler) FinishSeq(q *Sequence) {
	if q.Status == StatusFinished {
		return
	}
	if s.kv.Contains(q.ID) {
		_ = s.kv.Free(q.ID) // cannot fail for a known sequence
	}
	q.Status = StatusFinished
}

// Settle ends the verification of q's proposals after its step, once the
// engine has taken the NumSpec proposals the step appended off Tokens (and
// appended what it sampled): the KV slots of the rejected proposals are
// given back, and q counts start + 1 + accepted tokens as computed (the
// verified proposals' KV stays). It does nothing to a finished sequence
// (its blocks are already freed).
func (s *Scheduler) Settle(q *Sequence, sq ScheduledSeq, accepted int) error {
	if sq.NumSpec == 0 {
		return nil
	}
	if q.Status == StatusFinished {
		return nil
	}
	keep := sq.Start + sq.NumTokens - sq.NumSpec + accepted
	q.NumComputedTokens = keep
	return s.kv.Settle(q.ID, keep)
}

// Remove drops a finished group from the running queue at once (Schedule
// would at its next call). It does nothing to an unfinished group.
func (s *Scheduler) Remove(g *Group) {
	if g.Finished() {
		s.running = slices.DeleteFunc(s.running, func(x *Group) bool { return x == g })
	}
}

// Abort removes the group of requestID from whichever queue holds it and
// frees its blocks. It returns the group, or nil when none is queued.
func (s *Scheduler) Abort(requestID string) *Group {
	for _, q := range []*[]*Group{&s.waiting, &s.running, &s.swapped} {
		for i, g := range *q {
			if g.RequestID == requestID {
				*q = slices.Delete(*q, i, i+1)
				s.finishGroup(g)
				return g
			}
		}
	}
	return nil
}

func (s *Scheduler) finishGroup(g *Group) {
	for _, q := range g.Seqs {
		s.FinishSeq(q)
	}
}

// numRunningSeqs counts the sequence slots the running groups hold.
func (s *Scheduler) numRunningSeqs() int {
	n := 0
	for _, g := range s.running {
		n += max(g.MaxSeqs, g.NumUnfinished())
	}
	return n
}

// unfinishedIDs fills the scratch id list with g's unfinished sequences.
func (s *Scheduler) unfinishedIDs(g *Group) []int64 {
	s.ids = s.ids[:0]
	for _, q := range g.Seqs {
		if q.Status != StatusFinished {
			s.ids = append(s.ids, q.ID)
		}
	}
	return s.ids
}

// sortRunning orders the running queue for a step: decoding groups first
// (vLLM's chunked-prefill policy: a decode is never starved by a prompt),
// then prefilling ones, each by (priority, arrival). Preemption takes its
// victims from the back, so prefills are preempted before decodes.
func sortRunning(q []*Group) {
	slices.SortStableFunc(q, func(a, b *Group) int {
		pa, pb := a.prefilling(), b.prefilling()
		switch {
		case pa != pb && !pa:
			return -1
		case pa != pb:
			return 1
		}
		return compareGroups(a, b)
	})
}

func sortGroups(q []*Group) {
	slices.SortStableFunc(q, compareGroups)
}

// compareGroups orders groups by priority, then arrival (for
// slices.SortStableFunc).
func compareGroups(a, b *Group) int {
	return cmp.Or(cmp.Compare(a.Priority, b.Priority), cmp.Compare(a.arrival, b.arrival))
}
