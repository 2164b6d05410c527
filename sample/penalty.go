package sample

import (
	"cmp"
	"slices"
)

// history records the tokens a penalty looks at: the distinct tokens of the
// prompt (only when the repetition penalty is on) and of the output, with
// the number of times each occurs in the output.
//
// Invariants: index[entries[i].id] == i for every i; the ids in entries are
// distinct; an entry exists only for a token that is in the prompt or has
// count ≥ 1. Memory is O(distinct tokens), not O(vocabulary), so that
// hundreds of running sequences stay cheap with a 150k-token vocabulary.
type history struct {
	index   map[int32]int32 // token id → position in entries
	entries []histEntry     // (distinct tokens) in first-seen order
}

type histEntry struct {
	id     int32
	count  int32 // occurrences in the output
	prompt bool  // appears in the prompt
}

func newHistory(prompt []int32, withPrompt bool) *history {
	h := &history{index: make(map[int32]int32)}
	if withPrompt {
		for _, id := range prompt {
			h.entry(id).prompt = true
		}
	}
	return h
}

// entry returns the entry of id, adding an empty one if id is new. O(1)
// amortized.
func (h *history) entry(id int32) *histEntry {
	i, ok := h.index[id]
	if !ok {
		i = int32(len(h.entries))
		h.index[id] = i
		h.entries = append(h.entries, histEntry{id: id})
	}
	return &h.entries[i]
}

// add counts one more occurrence of id in the output. O(1) amortized.
func (h *history) add(id int32) { h.entry(id).count++ }

// count returns the occurrences of id in the output.
func (h *history) count(id int32) int32 {
	if i, ok := h.index[id]; ok {
		return h.entries[i].count
	}
	return 0
}

func (h *history) clone() *history {
	c := &history{index: make(map[int32]int32, len(h.index)), entries: slices.Clone(h.entries)}
	for id, i := range h.index {
		c.index[id] = i
	}
	return c
}

// penalties are the penalty parameters of one sampler.
type penalties struct {
	repetition float32 // 1 = off
	frequency  float32 // 0 = off
	presence   float32 // 0 = off
}

func (p penalties) on() bool { return p.repetition != 1 || p.frequency != 0 || p.presence != 0 }

// apply penalizes logits (vocab) in place, in vLLM's order and float32
// arithmetic: the repetition penalty on prompt and output tokens (positive
// logits divided, others multiplied), then the frequency penalty times the
// output count, then the presence penalty. Ids outside logits are ignored.
// O(distinct tokens in the history).
func (p penalties) apply(h *history, logits []float32) {
	for _, e := range h.entries {
		if e.id < 0 || int(e.id) >= len(logits) {
			continue
		}
		l := logits[e.id]
		if p.repetition != 1 && (e.prompt || e.count > 0) {
			if l > 0 {
				l /= p.repetition
			} else {
				l *= p.repetition
			}
		}
		if e.count > 0 {
			l -= p.frequency * float32(e.count)
			l -= p.presence
		}
		logits[e.id] = l
	}
}

// bias is one logit bias entry.
type bias struct {
	id int32
	v  float32
}

// biasList turns a LogitBias map into a list sorted by id, so that applying
// it walks memory in order and does not iterate a map on every step.
func biasList(m map[int32]float32) []bias {
	l := make([]bias, 0, len(m))
	for id, v := range m {
		if v != 0 {
			l = append(l, bias{id, v})
		}
	}
	slices.SortFunc(l, func(a, b bias) int { return cmp.Compare(a.id, b.id) })
	return l
}

// applyBias adds the biases to logits (vocab) in place; ids outside logits
// are ignored.
func applyBias(l []bias, logits []float32) {
	for _, b := range l {
		if b.id >= 0 && int(b.id) < len(logits) {
			logits[b.id] += b.v
		}
	}
}
