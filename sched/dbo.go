package sched

import "fmt"

// DBO configures dual-batch overlap (vLLM's --enable-dbo): a step with
// enough tokens is split into two micro-batches at a sequence boundary, and
// the runner overlaps one micro-batch's tensor-parallel all-reduces with
// the other's computation. The scheduler decides the split (Step.Split),
// so every rank runs the same micro-batches.
type DBO struct {
	Enable bool
	// DecodeTokenThreshold is the fewest tokens a decode-only step (every
	// sequence computes one token) needs to be split
	// (--dbo-decode-token-threshold, default 32).
	DecodeTokenThreshold int
	// PrefillTokenThreshold is the fewest tokens a step with a prompt chunk
	// needs to be split (--dbo-prefill-token-threshold, default 512).
	PrefillTokenThreshold int
}

// vLLM's default thresholds.
const (
	DefaultDBODecodeTokenThreshold  = 32
	DefaultDBOPrefillTokenThreshold = 512
)

// DefaultDBO is DBO off with vLLM's default thresholds.
func DefaultDBO() DBO {
	return DBO{DecodeTokenThreshold: DefaultDBODecodeTokenThreshold, PrefillTokenThreshold: DefaultDBOPrefillTokenThreshold}
}

// Validate checks the thresholds.
func (d DBO) Validate() error {
	if d.DecodeTokenThreshold < 1 {
		return fmt.Errorf("--dbo-decode-token-threshold must be ≥ 1, got %d", d.DecodeTokenThreshold)
	}
	if d.PrefillTokenThreshold < 1 {
		return fmt.Errorf("--dbo-prefill-token-threshold must be ≥ 1, got %d", d.PrefillTokenThreshold)
	}
	return nil
}

// imbalance is vllm-ascend's imbalance ratio: a split point farther than
// this fraction of the step's tokens from the middle is not taken.
const imbalanceTenths = 1

// Splitter finds and checks dual-batch overlap split points; its buffers
// are reused from step to step (the zero value is ready). The scheduler
// owns one to split, the runner one to check the split it receives.
type Splitter struct {
	lastWriter map[int32]int // block id → last sequence that writes it this step
	bad        []int32       // difference array: splits that would put a reader first
}

// Split returns where dual-batch overlap cuts s (Step.Split): the number of
// sequences in the first micro-batch, or 0 for no split. A step is split
// when cfg is enabled, it has at least two sequences and at least the
// threshold's tokens (the decode threshold when every sequence computes
// one token, the prefill threshold otherwise, as vLLM). The cut is at the
// sequence boundary nearest half the tokens among those that keep every
// reader of a block written in this step (a prefix-cache hit on a block
// another sequence of the step computes) in the writer's micro-batch or a
// later one; it is not taken when it lies more than a tenth of the tokens
// from the middle (vllm-ascend's imbalance ratio of 0.1).
func (sp *Splitter) Split(s *Step, cfg DBO, blockSize int) int32 {
	n, total := s.NumSeqs(), s.NumTokens()
	if !cfg.Enable || n < 2 {
		return 0
	}
	threshold := cfg.DecodeTokenThreshold
	if total != n {
		threshold = cfg.PrefillTokenThreshold
	}
	if total < threshold {
		return 0
	}
	sp.markReaders(s, blockSize)
	best, bestDist, bad := int32(0), total+1, int32(0)
	for k := 1; k < n; k++ {
		if bad += sp.bad[k]; bad > 0 {
			continue
		}
		if d := abs(2*int(s.QueryStart[k]) - total); d < bestDist {
			best, bestDist = int32(k), d
		}
	}
	// |first − total/2| < total/10, in integers.
	if best == 0 || 10*bestDist >= 2*imbalanceTenths*total {
		return 0
	}
	return best
}

// markReaders fills sp.bad so that its prefix sum at k counts the
// (reader, writer) pairs a split at k would order wrongly: reader j < k
// reads, from its cached context, a block that sequence i ≥ k writes.
func (sp *Splitter) markReaders(s *Step, blockSize int) {
	n := s.NumSeqs()
	if sp.lastWriter == nil {
		sp.lastWriter = map[int32]int{}
	}
	clear(sp.lastWriter)
	for g := range s.NumGroups() {
		slots := s.GroupSlots(g)
		for i := range n {
			for _, slot := range slots[s.QueryStart[i]:s.QueryStart[i+1]] {
				if slot >= 0 {
					sp.lastWriter[slot/int32(blockSize)] = i
				}
			}
		}
	}
	if cap(sp.bad) < n+1 {
		sp.bad = make([]int32, n+1)
	}
	sp.bad = sp.bad[:n+1]
	clear(sp.bad)
	for g := range s.NumGroups() {
		for j := range n {
			cached := int(s.ContextLens[j]) - s.QueryLen(j)
			table := s.GroupTable(g, j)
			for _, b := range table[:min(len(table), (cached+blockSize-1)/blockSize)] {
				if i, ok := sp.lastWriter[b]; ok && i > j && b >= 0 {
					sp.bad[j+1]++ // splits j+1 … i separate the reader from its writer
					sp.bad[i+1]--
				}
			}
		}
	}
}

// Check reports an error when s.Split puts a reader of a block written in
// the step before its writer (or is out of range). Call it after Validate
// and CheckBlocks.
func (sp *Splitter) Check(s *Step, blockSize int) error {
	k := int(s.Split)
	if k == 0 {
		return nil
	}
	sp.markReaders(s, blockSize)
	bad := int32(0)
	for i := 1; i <= k; i++ {
		bad += sp.bad[i]
	}
	if bad > 0 {
		return invalid("split after sequence %d puts a reader of a block this step writes before its writer", k)
	}
	return nil
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}
