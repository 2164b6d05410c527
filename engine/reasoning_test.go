package engine

import (
	"regexp"
	"slices"
	"strings"
	"testing"

	"pagoda/grammar"
	"pagoda/internal/testmodel"
)

// A grammar delayed by ReasoningEnd leaves the output unconstrained up to
// and including the end sequence (the greedy tokens of the plain run), then
// constrains the rest; without ReasoningEnd it constrains from the first
// token; an end sequence that never comes leaves the whole output free.
func TestGrammarAfterReasoning(t *testing.T) {
	ref := readReference(t, testmodel.StoriesReference(t))
	c := ref.Cases[0] // "Once upon a time" → ", there was a little girl named Lily. ..."
	const k = 5       // the reasoning ends with the greedy token at k
	if slices.Index(c.CompletionTokens, c.CompletionTokens[k]) != k {
		t.Fatalf("token %d first appears before position %d: %v", c.CompletionTokens[k], k, c.CompletionTokens)
	}
	e := newTestEngine(t, testmodel.Stories(t), nil)
	tok := e.Tokenizer()
	g, err := grammar.FromRegex("[0-9]{3}")
	if err != nil {
		t.Fatal(err)
	}
	answer := regexp.MustCompile(`^[0-9]{3}$`)
	mk := func(end []int32, maxTokens int) Request {
		p := GreedyParams(maxTokens)
		p.Grammar, p.ReasoningEnd = g, end
		return Request{PromptTokens: c.PromptTokens, Params: p}
	}
	never := []int32{c.CompletionTokens[k], c.CompletionTokens[0]} // not in the first 12 greedy tokens
	outs := runAll(t, e, []Request{
		mk(c.CompletionTokens[k:k+1], 64),
		mk(c.CompletionTokens[k-1:k+1], 64), // an end sequence of two tokens
		mk(nil, 64),
		mk(never, 12),
	})
	thinking := tok.Decode(c.CompletionTokens[:k+1])
	for i, o := range outs[:2] {
		got := o.Outputs[0]
		rest, ok := strings.CutPrefix(got.Text, thinking)
		if !slices.Equal(got.TokenIDs[:k+1], c.CompletionTokens[:k+1]) || !ok || !answer.MatchString(rest) ||
			got.FinishReason != FinishStop {
			t.Errorf("request %d: %q (%v), %s; want %q then three digits", i, got.Text, got.TokenIDs, got.FinishReason, thinking)
		}
	}
	if got := outs[2].Outputs[0]; !answer.MatchString(got.Text) {
		t.Errorf("no reasoning end: %q, want three digits", got.Text)
	}
	if got := outs[3].Outputs[0]; !slices.Equal(got.TokenIDs, c.CompletionTokens[:12]) || got.FinishReason != FinishLength {
		t.Errorf("an end that never comes: %v %s, want the free greedy tokens %v", got.TokenIDs, got.FinishReason, c.CompletionTokens[:12])
	}
	p := GreedyParams(4)
	p.Grammar, p.ReasoningEnd = g, []int32{1 << 30}
	if _, err := e.AddRequest(Request{PromptTokens: c.PromptTokens, Params: p}); err == nil || !strings.Contains(err.Error(), "reasoning end") {
		t.Errorf("an out-of-vocabulary reasoning end: %v", err)
	}
}

// ThinkingBudget forces ThinkingEnd once the output has drawn the budget's
// tokens inside thinking sections: a section opened by ThinkingStart in the
// output, or from the first token (ThinkingFromStart); an end of two tokens
// is forced whole; a budget never spent changes nothing.
func TestThinkingBudget(t *testing.T) {
	ref := readReference(t, testmodel.StoriesReference(t))
	c := ref.Cases[0]
	greedy := c.CompletionTokens
	const s = 2 // the greedy token at s opens the section
	if slices.Index(greedy, greedy[s]) != s {
		t.Fatalf("token %d first appears before position %d: %v", greedy[s], s, greedy)
	}
	e := newTestEngine(t, testmodel.Stories(t), nil)
	end := []int32{13, 7} // forced after the budget
	if slices.Contains(greedy[:16], end[0]) {
		t.Fatalf("the end token %d is among the greedy tokens %v", end[0], greedy[:16])
	}
	mk := func(budget int, start []int32, fromStart bool, endIDs []int32) Request {
		p := GreedyParams(16)
		p.ThinkingBudget, p.ThinkingStart, p.ThinkingEnd, p.ThinkingFromStart = budget, start, endIDs, fromStart
		return Request{PromptTokens: c.PromptTokens, Params: p}
	}
	open := greedy[s : s+1]
	outs := runAll(t, e, []Request{
		mk(3, open, false, end[:1]),   // 0: s+1 free tokens, 3 inside, then the end
		mk(0, open, false, end),       // 1: the end forced right after the start, both tokens
		mk(4, nil, true, end[:1]),     // 2: inside from the first token
		mk(100, open, false, end[:1]), // 3: never spent
	})
	want := func(i int, prefix []int32, forced []int32) {
		t.Helper()
		got := outs[i].Outputs[0].TokenIDs
		n := len(prefix) + len(forced)
		if len(got) < n || !slices.Equal(got[:len(prefix)], prefix) || !slices.Equal(got[len(prefix):n], forced) {
			t.Errorf("request %d: %v, want %v then %v", i, got, prefix, forced)
		}
	}
	want(0, greedy[:s+1+3], end[:1])
	want(1, greedy[:s+1], end)
	want(2, greedy[:4], end[:1])
	if got := outs[3].Outputs[0].TokenIDs; !slices.Equal(got, greedy[:16]) {
		t.Errorf("an unspent budget: %v, want the greedy %v", got, greedy[:16])
	}
	p := GreedyParams(4)
	p.ThinkingBudget = 8
	if _, err := e.AddRequest(Request{PromptTokens: c.PromptTokens, Params: p}); err == nil || !strings.Contains(err.Error(), "reasoning parser") {
		t.Errorf("a budget without end tokens: %v", err)
	}
}
