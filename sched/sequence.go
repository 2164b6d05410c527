package sched

// Status is where a sequence stands in the scheduler.
type Status int

const (
	StatusWaiting  Status = iota // not yet admitted, or preempted by recompute
	StatusRunning                // holds device blocks
	StatusSwapped                // blocks are in host swap space
	StatusFinished               // done; blocks released
)

func (s Status) String() string {
	switch s {
	case StatusWaiting:
		return "waiting"
	case StatusRunning:
		return "running"
	case StatusSwapped:
		return "swapped"
	case StatusFinished:
		return "finished"
	}
	return "unknown"
}

// Sequence is one token stream: a prompt followed by generated tokens.
//
// Invariant: 0 ≤ NumComputedTokens ≤ len(Tokens). Tokens[:NumComputedTokens]
// have their K/V in the cache (or are scheduled to, in the step being built);
// the rest are computed by later steps. A sequence samples a new token in a
// step that brings NumComputedTokens to len(Tokens).
type Sequence struct {
	ID                int64
	Tokens            []int32 // (prompt + output) token ids
	NumPromptTokens   int
	NumComputedTokens int
	Status            Status
	// Spec are proposed next tokens (speculative decoding) for the next
	// step to verify, set by the engine while the sequence decodes. A step
	// that schedules them appends them to Tokens (ScheduledSeq.NumSpec);
	// the engine takes them off again with Settle once it has verified
	// them. Schedule clears Spec.
	Spec []int32
}

// NumTokens is the prompt plus output length.
func (s *Sequence) NumTokens() int { return len(s.Tokens) }

// Output returns the generated tokens.
func (s *Sequence) Output() []int32 { return s.Tokens[s.NumPromptTokens:] }

// Append adds a sampled token.
func (s *Sequence) Append(id int32) { s.Tokens = append(s.Tokens, id) }

// Group is the sequences of one request (vLLM's SequenceGroup): one sequence
// at admission, more after the engine forks it for parallel samples or beams.
// Its sequences share blocks through kvcache forks, so they are preempted and
// swapped together.
type Group struct {
	RequestID string
	Priority  int // lower runs first
	Seqs      []*Sequence
	// MaxSeqs is the most sequences the group will run at once (n, best_of
	// or the beam width); admission reserves room for them in MaxNumSeqs.
	MaxSeqs int
	// AllLogits asks the runner for the logits of every computed position,
	// not only the sampling one (prompt logprobs).
	AllLogits bool
	// Whole runs the group's prompt in one step, never chunked (an
	// encoder's bidirectional attention needs every token at once): it is
	// admitted only when all it has to compute fits the step's budget.
	Whole bool

	arrival int64 // admission order, for FCFS within a priority
}

// Arrival is the order in which the group was added (FCFS within a priority).
func (g *Group) Arrival() int64 { return g.arrival }

// NumUnfinished counts sequences that are not finished.
func (g *Group) NumUnfinished() int {
	n := 0
	for _, s := range g.Seqs {
		if s.Status != StatusFinished {
			n++
		}
	}
	return n
}

// prefilling reports whether a sequence of g has more than one token left
// to compute (a prompt, a chunk of one, or a recomputation), i.e. g is not
// decoding.
func (g *Group) prefilling() bool {
	for _, s := range g.Seqs {
		if s.Status != StatusFinished && s.NumTokens()-s.NumComputedTokens > 1 {
			return true
		}
	}
	return false
}

// longPrefill reports whether a sequence of g has more than threshold
// tokens left to compute (never for threshold 0).
func (g *Group) longPrefill(threshold int) bool {
	for _, s := range g.Seqs {
		if threshold > 0 && s.Status != StatusFinished && s.NumTokens()-s.NumComputedTokens > threshold {
			return true
		}
	}
	return false
}

// Finished reports whether every sequence has finished.
func (g *Group) Finished() bool { return g.NumUnfinished() == 0 }

func (g *Group) setStatus(st Status) {
	for _, s := range g.Seqs {
		if s.Status != StatusFinished {
			s.Status = st
		}
	}
}
