package engine

import "slices"

// thinkingBudget is one sequence's count against SamplingParams'
// ThinkingBudget (vLLM's thinking_token_budget). The output is inside a
// thinking section from its first token when ThinkingFromStart, or after it
// ends with ThinkingStart; the section closes at ThinkingEnd's first token.
// Every token drawn inside a section counts (the budget is for the whole
// output, over however many sections it opens). Once budget tokens have
// been drawn inside, the next tokens are forced to be ThinkingEnd, one by
// one: each is drawn from a mask that allows only it, so its logprob is
// still the model's (under that mask), and speculative decoding's
// verification, which draws through the same sampleOne, forces the same
// tokens at the same positions.
type thinkingBudget struct {
	inside bool // the last token drawn is inside a thinking section
	used   int  // tokens drawn inside thinking sections
	forced int  // tokens of ThinkingEnd forced so far (0 < forced < len: mid-sequence)
}

// newThinkingBudget is the state of an output before its first token.
func newThinkingBudget(p *SamplingParams) thinkingBudget {
	return thinkingBudget{inside: p.ThinkingFromStart}
}

// force returns the token the next draw must give, if the budget forces one.
func (b *thinkingBudget) force(p *SamplingParams) (int32, bool) {
	if p.ThinkingBudget < 0 || len(p.ThinkingEnd) == 0 {
		return 0, false
	}
	if b.forced > 0 || (b.inside && b.used >= p.ThinkingBudget) {
		return p.ThinkingEnd[b.forced], true
	}
	return 0, false
}

// accept counts the token just appended to out (the output so far).
func (b *thinkingBudget) accept(p *SamplingParams, out []int32) {
	if p.ThinkingBudget < 0 || len(p.ThinkingEnd) == 0 {
		return
	}
	id := out[len(out)-1]
	switch {
	case b.forced > 0 || (b.inside && b.used >= p.ThinkingBudget): // a forced token
		b.inside = false
		if b.forced++; b.forced == len(p.ThinkingEnd) {
			b.forced = 0
		}
	case b.inside && id == p.ThinkingEnd[0]:
		b.inside = false
	case b.inside:
		b.used++
	case len(p.ThinkingStart) > 0 && len(out) >= len(p.ThinkingStart) &&
		slices.Equal(out[len(out)-len(p.ThinkingStart):], p.ThinkingStart):
		b.inside = true
	}
}

// forceMask sets e.mask to allow id alone.
func (e *Engine) forceMask(id int32) {
	clear(e.mask)
	e.mask[id/64] |= 1 << (id % 64)
}
