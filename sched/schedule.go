package sched

import (
	"fmt"
	"slices"
)

// Schedule builds the next step. It reserves the KV slots of every scheduled
// token and advances each scheduled sequence's NumComputedTokens as if the
// step had run: the caller runs the returned step before calling Schedule
// again. Output.Step, filled last (after every reservation, so it holds the
// final block tables), is the complete description the runner executes.
// The Output is valid until the next call.
func (s *Scheduler) Schedule() (*Output, error) {
	s.out.reset()
	s.kv.BeginRound()
	s.running = slices.DeleteFunc(s.running, (*Group).Finished)
	sortRunning(s.running)
	budget := s.cfg.MaxNumBatchedTokens
	if err := s.scheduleRunning(&budget); err != nil {
		return nil, err
	}
	if s.out.NumPreempted == 0 {
		if err := s.scheduleSwapped(&budget); err != nil {
			return nil, err
		}
		if len(s.swapped) == 0 {
			if err := s.scheduleWaiting(&budget); err != nil {
				return nil, err
			}
		}
	}
	if err := s.out.Step.fill(s.out.Seqs, s.kv); err != nil {
		return nil, err
	}
	for _, g := range s.running {
		for _, q := range g.Seqs {
			q.Spec = q.Spec[:0]
		}
	}
	s.out.Step.Split = s.split.Split(&s.out.Step, s.cfg.DBO, s.kv.BlockSize())
	for _, sq := range s.out.Seqs {
		sq.Seq.NumComputedTokens += sq.NumTokens
	}
	return &s.out, nil
}

// scheduleRunning gives each running group its tokens, decodes first (see
// sortRunning), preempting from the back of the queue (a prefill before a
// decode, then lowest priority, newest) when blocks run out. Running
// prefills always continue: they hold their partial-prefill slots. Groups
// already scheduled this step are never preempted: the victim is always
// behind the group being scheduled.
func (s *Scheduler) scheduleRunning(budget *int) error {
	for i := 0; i < len(s.running) && *budget > 0; i++ {
		g := s.running[i]
		for s.blocksNeeded(g, *budget) > s.kv.NumFreeBlocks() {
			victim := s.running[len(s.running)-1]
			s.running = s.running[:len(s.running)-1]
			if victim == g && len(s.running) == 0 && s.onlyHolder(g) {
				// Nothing else holds blocks: g can never fit.
				s.ignore(g)
				return nil
			}
			if err := s.preempt(victim); err != nil {
				return err
			}
			if victim == g {
				return nil
			}
		}
		if err := s.runGroup(g, budget); err != nil {
			return err
		}
	}
	return nil
}

// onlyHolder reports whether g's sequences are all the sequences the block
// manager knows, i.e. no other group could free blocks for it.
func (s *Scheduler) onlyHolder(g *Group) bool {
	return s.kv.NumSequences() == len(s.unfinishedIDs(g)) && len(s.swapped) == 0
}

// want is how many tokens q computes this step given the remaining budget:
// all it has left, within the budget and LongPrefillTokenThreshold; a
// decoding sequence with proposals adds as many of them as the budget
// leaves room for (spec of the tokens).
func (s *Scheduler) want(q *Sequence, budget int) (n, spec int) {
	if q.Status == StatusFinished {
		return 0, 0
	}
	n = q.NumTokens() - q.NumComputedTokens
	if n == 1 && len(q.Spec) > 0 && budget > 1 {
		spec = min(len(q.Spec), budget-1)
		return 1 + spec, spec
	}
	if t := s.cfg.LongPrefillTokenThreshold; t > 0 {
		n = min(n, t)
	}
	return min(n, budget), 0
}

// blocksNeeded bounds the free blocks runGroup(g, budget) takes.
func (s *Scheduler) blocksNeeded(g *Group, budget int) int {
	need := 0
	for _, q := range g.Seqs {
		n, _ := s.want(q, budget)
		if n <= 0 {
			continue
		}
		budget -= n
		k, err := s.kv.NumAppendBlocks(q.ID, n)
		if err != nil {
			continue // reported by runGroup
		}
		need += k
	}
	return need
}

// runGroup reserves slots for g's tokens of this step and records them.
func (s *Scheduler) runGroup(g *Group, budget *int) error {
	for _, q := range g.Seqs {
		n, spec := s.want(q, *budget)
		if n <= 0 {
			continue
		}
		start := q.NumComputedTokens
		q.Tokens = append(q.Tokens, q.Spec[:spec]...)
		var err error
		s.out.Step.Copies, err = s.kv.AppendSpeculative(q.ID, q.Tokens[start:start+n], spec, s.out.Step.Copies)
		if err != nil {
			q.Tokens = q.Tokens[:len(q.Tokens)-spec]
			return fmt.Errorf("sched: request %s: %w", g.RequestID, err)
		}
		s.record(g, q, start, n, spec)
		*budget -= n
	}
	return nil
}

func (s *Scheduler) record(g *Group, q *Sequence, start, n, spec int) {
	s.out.Seqs = append(s.out.Seqs, ScheduledSeq{
		Group: g, Seq: q, Start: start, NumTokens: n, NumSpec: spec,
		Sample: start+n == q.NumTokens(),
	})
	s.out.NumBatchedTokens += n
}

// preempt takes g's blocks back: by swapping to host space when g has
// several sequences (or swap is forced) and the host has room, else by
// recompute (free everything; the group waits and recomputes its tokens).
func (s *Scheduler) preempt(g *Group) error {
	s.out.NumPreempted++
	s.NumPreemptions++
	ids := s.unfinishedIDs(g)
	swap := s.cfg.Preemption == PreemptSwap || (s.cfg.Preemption == PreemptAuto && len(ids) > 1)
	if swap && s.kv.CanSwapOut(ids) {
		var err error
		if s.out.Step.SwapOut, err = s.kv.SwapOut(ids, s.out.Step.SwapOut); err != nil {
			return fmt.Errorf("sched: swap out request %s: %w", g.RequestID, err)
		}
		g.setStatus(StatusSwapped)
		s.swapped = append(s.swapped, g)
		s.NumSwapOuts++
		return nil
	}
	for _, q := range g.Seqs {
		if q.Status == StatusFinished {
			continue
		}
		if err := s.kv.Free(q.ID); err != nil {
			return fmt.Errorf("sched: preempt request %s: %w", g.RequestID, err)
		}
		q.NumComputedTokens = 0
		q.Status = StatusWaiting
	}
	s.waiting = append(s.waiting, g)
	return nil
}

// scheduleSwapped brings swapped groups back, in priority order, while the
// blocks, budget and sequence limit allow. A group comes back only if it
// also runs in this step (its swap-in blocks plus the blocks its tokens
// take fit): a group swapped in without running would be preempted again
// before it computes anything, and groups could trade places forever.
func (s *Scheduler) scheduleSwapped(budget *int) error {
	sortGroups(s.swapped)
	for len(s.swapped) > 0 {
		g := s.swapped[0]
		n := g.NumUnfinished()
		ids := s.unfinishedIDs(g)
		if *budget < n || s.numRunningSeqs()+max(g.MaxSeqs, n) > s.cfg.MaxNumSeqs {
			return nil
		}
		if !s.kv.CanSwapIn(ids) || s.kv.NumSwapInBlocks(ids)+s.blocksNeeded(g, *budget) > s.kv.NumFreeBlocks() {
			if len(s.running) > 0 || s.kv.NumFreeBlocks() < s.kv.Device().NumBlocks() {
				return nil // blocks will free up
			}
			// Alone on an empty device it still cannot run: it never will.
			s.swapped = s.swapped[1:]
			s.ignore(g)
			continue
		}
		var err error
		if s.out.Step.SwapIn, err = s.kv.SwapIn(ids, s.out.Step.SwapIn); err != nil {
			return fmt.Errorf("sched: swap in request %s: %w", g.RequestID, err)
		}
		s.swapped = s.swapped[1:]
		g.setStatus(StatusRunning)
		s.running = append(s.running, g)
		if err := s.runGroup(g, budget); err != nil {
			return err
		}
	}
	return nil
}
