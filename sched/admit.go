package sched

import (
	"errors"
	"fmt"

	"pagoda/kvcache"
)

// scheduleWaiting admits waiting groups in (priority, arrival) order while
// the budget, MaxNumSeqs, the partial-prefill limits and the free blocks
// allow. Admission reserves only the tokens computed in this step (a first
// chunk of a long prompt), after prefix-cache hits. A long prompt that finds
// every long-prefill slot taken stays waiting, in its place, while shorter
// ones behind it are admitted (vLLM's max_long_partial_prefills).
func (s *Scheduler) scheduleWaiting(budget *int) error {
	sortGroups(s.waiting)
	pp := s.partialPrefills()
	n := len(s.waiting)
	kept := s.waiting[:0] // the groups that stay waiting, in order
	i := 0
	for ; i < n && *budget > 0; i++ {
		g := s.waiting[i]
		if g.Finished() {
			continue
		}
		if s.numRunningSeqs()+max(g.MaxSeqs, g.NumUnfinished()) > s.cfg.MaxNumSeqs || !pp.canStart() {
			break
		}
		if s.neverFits(g) {
			s.ignore(g)
			continue
		}
		long := g.longPrefill(s.cfg.LongPrefillTokenThreshold)
		if long && !pp.canStartLong() {
			kept = append(kept, g)
			continue
		}
		ok, err := s.admit(g, budget)
		if err != nil {
			kept = append(kept, s.waiting[i:n]...)
			s.waiting = kept
			return err
		}
		if !ok && s.idle() {
			// Alone on an empty device it cannot start: it never will
			// (a group of forked sequences preempted by recompute can
			// need more blocks together than the pool has).
			s.ignore(g)
			continue
		}
		if !ok {
			break
		}
		s.running = append(s.running, g)
		pp.start(long)
	}
	kept = append(kept, s.waiting[i:n]...)
	clear(s.waiting[len(kept):n])
	s.waiting = kept
	return nil
}

// partialPrefills counts the prefills of a step against MaxNumPartialPrefills
// and MaxLongPartialPrefills.
type partialPrefills struct {
	n, long       int
	maxN, maxLong int // maxN 0: no bound
}

// partialPrefills counts the running groups that prefill in this step.
func (s *Scheduler) partialPrefills() partialPrefills {
	pp := partialPrefills{maxN: s.cfg.MaxNumPartialPrefills, maxLong: s.cfg.MaxLongPartialPrefills}
	for _, g := range s.running {
		if g.prefilling() {
			pp.start(g.longPrefill(s.cfg.LongPrefillTokenThreshold))
		}
	}
	return pp
}

func (p *partialPrefills) canStart() bool     { return p.maxN == 0 || p.n < p.maxN }
func (p *partialPrefills) canStartLong() bool { return p.long < p.maxLong }

func (p *partialPrefills) start(long bool) {
	p.n++
	if long {
		p.long++
	}
}

// neverFits reports whether a sequence of g needs more blocks than the
// device pool has.
func (s *Scheduler) neverFits(g *Group) bool {
	for _, q := range g.Seqs {
		if q.Status != StatusFinished && s.kv.CanAllocate(q.Tokens) == kvcache.AllocNever {
			return true
		}
	}
	return false
}

// idle reports whether nothing runs or is swapped out and every device
// block is free: a group that cannot start now never will.
func (s *Scheduler) idle() bool {
	return len(s.running) == 0 && len(s.swapped) == 0 && s.kv.NumFreeBlocks() == s.kv.Device().NumBlocks()
}

// ignore finishes g, which can never run, and lists it in Output.Ignored
// (the engine ends its request with ErrCacheTooSmall).
func (s *Scheduler) ignore(g *Group) {
	s.finishGroup(g)
	s.out.Ignored = append(s.out.Ignored, g)
}

// admit allocates every unfinished sequence of g with the tokens it computes
// now; when the budget runs out, later sequences of the group start with
// their cached prefix only and compute at later steps. When there is no
// room it leaves nothing allocated and reports false.
func (s *Scheduler) admit(g *Group, budget *int) (bool, error) {
	left := *budget
	mark := len(s.out.Seqs)
	first := true
	for _, q := range g.Seqs {
		if q.Status == StatusFinished {
			continue
		}
		cached := 0
		if !g.AllLogits {
			cached = s.kv.NumCachedTokens(q.Tokens)
		}
		n := min(q.NumTokens()-cached, left)
		if t := s.cfg.LongPrefillTokenThreshold; t > 0 && !g.Whole {
			n = min(n, t)
		}
		if (first && n <= 0) || (g.Whole && n < q.NumTokens()-cached) || s.kv.CanAllocate(q.Tokens[:cached+n]) != kvcache.AllocOK {
			s.rollback(g, mark)
			return false, nil
		}
		first = false
		got, err := s.allocate(g, q.ID, q.Tokens[:cached+n])
		if err != nil {
			s.rollback(g, mark)
			if errors.Is(err, kvcache.ErrNoFreeBlocks) {
				return false, nil // uncached allocation needs more than CanAllocate counts
			}
			return false, fmt.Errorf("sched: admit request %s: %w", g.RequestID, err)
		}
		q.NumComputedTokens = got
		q.Status = StatusRunning
		if k := cached + n - got; k > 0 {
			s.record(g, q, got, k, 0)
			left -= k
		}
	}
	*budget = left
	return true, nil
}

// rollback undoes a partial admission of g: frees what was allocated and
// drops its scheduled entries from mark on.
func (s *Scheduler) rollback(g *Group, mark int) {
	for _, sq := range s.out.Seqs[mark:] {
		s.out.NumBatchedTokens -= sq.NumTokens
	}
	s.out.Seqs = s.out.Seqs[:mark]
	for _, q := range g.Seqs {
		if q.Status == StatusRunning {
			_ = s.kv.Discard(q.ID) // its reservations of this round were never computed
			q.Status = StatusWaiting
			q.NumComputedTokens = 0
		}
	}
}

// allocate is kv.Allocate, without prefix-cache hits for groups that need
// every position's logits.
func (s *Scheduler) allocate(g *Group, id int64, tokens []int32) (int, error) {
	if g.AllLogits {
		return 0, s.kv.AllocateUncached(id, tokens)
	}
	return s.kv.Allocate(id, tokens)
}
