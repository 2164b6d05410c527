package engine

import (
	"math"
	"testing"

	"pagoda/internal/testmodel"
)

// gemma3Arithmetics are the bounds of the Gemma 3 270M comparisons, set
// from the measurement (2026-11-27): 640 positions, exact and fast both
// 631 (98.6%), disagreements within 0.18 and 0.42 nats, largest |Δ
// logprob| 0.317 and 0.242; the long case 32/32 and 31/32. llama.cpp's
// own two paths (n_batch 1 and 512) part on 6 of the 10 prompts: Gemma 3
// is sensitive to the batching of a prompt.
var gemma3Arithmetics = []teacherArithmetic{
	{"exact", func(c *Config) { c.ExactArithmetic = true }, 0.98, 0.2, 0.5},
	{"fast", func(c *Config) { c.ExactArithmetic = false }, 0.96, 0.5, 0.5},
}

// TestGemma3TeacherForced scores llama.cpp's greedy continuations of the
// ten reference prompts (eight texts, two chats; its default path, the
// prompt in one batch) on the real Gemma 3 270M teacher-forced, as
// TestSmolLM2TeacherForced does.
func TestGemma3TeacherForced(t *testing.T) {
	heavy(t)
	ref := readReference(t, testmodel.RepoFile(t, "testdata/reference/gemma3-270m-q4_k_m.teacher.json"))
	if testing.Short() {
		ref.Cases = ref.Cases[:4]
	}
	checkTeacherForced(t, testmodel.Gemma3(t), ref, 1024, gemma3Arithmetics)
}

// TestGemma3SlidingWindow scores a continuation of a 724-token prompt,
// which crosses the 512-position window of Gemma 3's local layers: its
// last tokens attend to positions the global layers see and the local
// ones must not.
func TestGemma3SlidingWindow(t *testing.T) {
	heavy(t)
	ref := readReference(t, testmodel.RepoFile(t, "testdata/reference/gemma3-270m-q4_k_m.long.json"))
	checkTeacherForced(t, testmodel.Gemma3(t), ref, 1024, gemma3Arithmetics)
}

// TestGemma3Greedy decodes the reference prompts greedily with the exact
// arithmetic and compares with llama.cpp's token-by-token path (n_batch 1:
// its single-token decode graph, which the exact arithmetic reproduces op
// for op): the same ids on every prompt, log-probabilities within 1e-4.
func TestGemma3Greedy(t *testing.T) {
	heavy(t)
	checkGreedy(t, testmodel.Gemma3(t), readReference(t, testmodel.RepoFile(t, "testdata/reference/gemma3-270m-q4_k_m.json")))
}

// checkGreedy decodes ref's prompts greedily with the exact arithmetic on
// the model at path: llama.cpp's ids at every step, log-probabilities
// within 1e-4.
func checkGreedy(t *testing.T, path string, ref reference) { checkGreedyWith(t, path, ref, nil) }

// checkGreedyWith is checkGreedy with the configuration changed by tweak
// (nil: none), e.g. llama.cpp's flash-attention arithmetic for a reference
// made with --flash-attn.
func checkGreedyWith(t *testing.T, path string, ref reference, tweak func(*Config)) {
	e := newTestEngine(t, path, func(c *Config) {
		*c = DefaultConfig(c.Model)
		c.MaxModelLen, c.ExactArithmetic = 1024, true
		if tweak != nil {
			tweak(c)
		}
	})
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
		for j, s := range c.Steps {
			if j >= len(got.TokenIDs) || got.TokenIDs[j] != s.ID {
				t.Errorf("case %d %q: step %d differs\n got %v\nwant %v", i, c.Prompt, j, got.TokenIDs, c.CompletionTokens)
				break
			}
			worst = max(worst, math.Abs(float64(got.Logprobs[j].Logprob)-s.Logprob))
		}
	}
	t.Logf("%d prompts; max |logprob - llama.cpp| = %.1e", len(ref.Cases), worst)
	if worst > 1e-4 {
		t.Errorf("max |logprob - llama.cpp| = %.2e, want ≤ 1e-4", worst)
	}
}
