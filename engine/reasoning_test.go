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
