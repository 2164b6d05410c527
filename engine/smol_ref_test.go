package engine

import (
	"math"
	"slices"
	"testing"

	"pagoda/internal/testmodel"
)

// TestSmolLM2Reference: the default model's greedy ids equal llama.cpp's
// for every reference prompt (testdata/reference, made by
// scripts/make_reference.py: token by token, F16 cache, flash attention
// off), with all prompts running together in one engine at the default
// settings, and every chosen logprob within 1e-4.
func TestSmolLM2Reference(t *testing.T) {
	ref := readReference(t, testmodel.SmolReference(t))
	e := newTestEngine(t, testmodel.Default(t), func(c *Config) { *c = DefaultConfig(c.Model); c.MaxModelLen, c.ExactArithmetic = 512, true })
	var reqs []Request
	for _, c := range ref.Cases {
		p := GreedyParams(len(c.CompletionTokens))
		p.ReturnLogprobs = true
		p.IgnoreEOS = true
		reqs = append(reqs, Request{PromptTokens: c.PromptTokens, Params: p})
	}
	outs := runAll(t, e, reqs)
	worst := 0.0
	for i, c := range ref.Cases {
		got := outs[i].Outputs[0]
		if !slices.Equal(got.TokenIDs, c.CompletionTokens) {
			t.Errorf("case %d %q: ids differ\n got %v\nwant %v", i, c.Prompt, got.TokenIDs, c.CompletionTokens)
			continue
		}
		for j, s := range c.Steps {
			worst = max(worst, math.Abs(float64(got.Logprobs[j].Logprob)-s.Logprob))
		}
	}
	if worst > 1e-4 {
		t.Errorf("max |logprob - llama.cpp| = %.2e, want ≤ 1e-4", worst)
	}
	t.Logf("10 prompts, ids identical; max |logprob - llama.cpp| = %.1e", worst)
}
