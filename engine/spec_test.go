package engine

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	"pagoda/grammar"
	"pagoda/internal/testmodel"
	"pagoda/sched"
)

// specWorkload is copy-heavy work for stories260K: prompts that repeat a
// sentence (prompt lookup and suffix decoding guess well), plain ones, a
// shared prefix (prefix-cache hits), greedy and seeded sampling (two
// samples: a fork), penalties, min_tokens, a stop string and logprobs.
func specWorkload(e *Engine, n int) []Request {
	tok := e.Tokenizer()
	var reqs []Request
	for i := range n {
		text := "Once upon a time, there was a little girl named Lily."
		if i%2 == 0 {
			text += " She liked to play in the park. She liked to play in the park with her dog."
		}
		if i%3 == 1 {
			text = fmt.Sprintf("One day %d birds sat on a tree. %s", i, text)
		}
		p := GreedyParams(24 + 9*(i%4))
		switch i % 5 {
		case 1, 3:
			seed := int64(100 + i)
			p = DefaultSamplingParams()
			p.Temperature, p.TopP, p.Seed, p.MaxTokens = 0.8, 0.9, &seed, 40
			if i%5 == 3 {
				p.N = 2
			}
		case 2:
			p.MinTokens, p.Stop, p.PresencePenalty = 10, []string{" park."}, 0.3
		case 4: // a thinking budget forces an end of two tokens after 6
			p.ThinkingBudget, p.ThinkingFromStart, p.ThinkingEnd = 6, true, tok.Encode(" The end", false, false)
		}
		p.ReturnLogprobs, p.Logprobs = true, 2
		reqs = append(reqs, Request{PromptTokens: tok.Encode(text, true, true), Params: p})
	}
	return reqs
}

// sameOutputs fails unless got and want have the same outputs, token for
// token, logprob for logprob.
func sameOutputs(t *testing.T, got, want []RequestOutput) {
	t.Helper()
	for i := range want {
		g, w := got[i].Outputs, want[i].Outputs
		if len(g) != len(w) {
			t.Fatalf("request %d: %d outputs, want %d", i, len(g), len(w))
		}
		for j := range w {
			if !slices.Equal(g[j].TokenIDs, w[j].TokenIDs) || g[j].Text != w[j].Text || g[j].FinishReason != w[j].FinishReason {
				t.Fatalf("request %d output %d: %v %q (%s), without speculation %v %q (%s)", i, j,
					g[j].TokenIDs, g[j].Text, g[j].FinishReason, w[j].TokenIDs, w[j].Text, w[j].FinishReason)
			}
			if !reflect.DeepEqual(g[j].Logprobs, w[j].Logprobs) {
				t.Fatalf("request %d output %d: logprobs differ from plain decoding", i, j)
			}
		}
	}
}

// runEach runs the requests one at a time.
func runEach(t *testing.T, e *Engine, reqs []Request) []RequestOutput {
	var outs []RequestOutput
	for _, r := range reqs {
		outs = append(outs, runAll(t, e, []Request{r})[0])
	}
	return outs
}

// TestSpeculativeIdentity: speculative decoding never changes an output.
// For each proposer, the workload run alone and all at once — roomy, and
// in a small pool (chunked prefill, prefix hits, preemption by recompute
// and by swap) — gives exactly the tokens, text and logprobs of plain
// decoding, while proposals are verified and accepted.
func TestSpeculativeIdentity(t *testing.T) {
	path := testmodel.Stories(t)
	base := newTestEngine(t, path, nil)
	reqs := specWorkload(base, 10)
	want := runAll(t, base, reqs)
	tight := func(c *Config) {
		c.BlockSize, c.NumBlocksOverride, c.MaxNumBatchedTokens, c.MaxNumSeqs, c.MaxModelLen = 4, 60, 32, 8, 128
		c.EnablePrefixCaching = true
	}
	for _, method := range []string{"ngram", "suffix"} {
		spec := func(c *Config) {
			c.Speculative = &SpeculativeConfig{Method: method, NumSpeculativeTokens: 5, DisableByBatchSize: 64}
		}
		for _, tc := range specCases(spec, tight) {
			t.Run(method+"/"+tc.name, func(t *testing.T) {
				e := tc.run(t, path, reqs, want)
				st := e.Stats()
				if st.Spec.Drafts == 0 || st.Spec.Accepted == 0 {
					t.Fatalf("no proposal verified or accepted: %+v", st.Spec)
				}
				if tc.name == "tight_recompute" && st.Preemptions == 0 || tc.name == "tight_swap" && st.SwapOuts == 0 {
					t.Fatalf("the small pool did not preempt: %+v", st)
				}
				t.Logf("%d drafts, %d of %d proposed tokens accepted, per position %v; %d steps",
					st.Spec.Drafts, st.Spec.Accepted, st.Spec.DraftTokens, st.Spec.AcceptedPerPos, st.Steps)
			})
		}
	}
}

// oracle proposes from the outputs of plain decoding: the true
// continuation (right) or, at every position, another token (wrong).
type oracle struct {
	seqs  [][]int32 // prompt + output of every sequence of the baseline
	wrong bool
	vocab int32
}

func (o *oracle) propose(_ *proposerState, tokens []int32, k int, dst []int32) []int32 {
	for _, f := range o.seqs {
		if len(f) <= len(tokens) || !slices.Equal(f[:len(tokens)], tokens) {
			continue
		}
		for _, t := range f[len(tokens):min(len(f), len(tokens)+k)] {
			if o.wrong {
				t = (t + 1) % o.vocab
			}
			dst = append(dst, t)
		}
		return dst
	}
	return dst
}

func (o *oracle) finished(int64, []int32, int) {}

// TestSpeculativeOracles: proposals that are always right (every draft
// accepted whole, fewer steps), always wrong (none accepted), and drafts
// longer than what max_tokens leaves or than the step budget holds: the
// outputs are plain decoding's each time.
func TestSpeculativeOracles(t *testing.T) {
	path := testmodel.Stories(t)
	base := newTestEngine(t, path, nil)
	reqs := specWorkload(base, 6)
	for i := range reqs {
		reqs[i].Params.N = 1 // one sequence per prompt: the oracle knows its continuation
		reqs[i].Params.MaxTokens = 5 + 7*i
		reqs[i].PromptTokens = slices.Insert(slices.Clone(reqs[i].PromptTokens), 1, int32(300+i)) // distinct prompts
	}
	want := runAll(t, base, reqs)
	baseSteps := base.Stats().Steps
	var seqs [][]int32
	for i, o := range want {
		seqs = append(seqs, slices.Concat(reqs[i].PromptTokens, o.Outputs[0].TokenIDs))
	}
	vocab := int32(base.ModelConfig().VocabSize)
	for _, tc := range []struct {
		name   string
		wrong  bool
		budget int
	}{{"right", false, 2048}, {"wrong", true, 2048}, {"right_small_budget", false, 8}} {
		t.Run(tc.name, func(t *testing.T) {
			e := newTestEngine(t, path, func(c *Config) {
				c.Speculative = &SpeculativeConfig{Method: "ngram", NumSpeculativeTokens: 40, DisableByBatchSize: 64}
				c.MaxNumBatchedTokens, c.MaxNumSeqs, c.BlockSize = tc.budget, 8, 4
			})
			e.spec = &oracle{seqs: seqs, wrong: tc.wrong, vocab: vocab}
			got := runAll(t, e, reqs)
			sameOutputs(t, got, want)
			sp := e.Stats().Spec
			switch {
			case tc.wrong && sp.Accepted != 0:
				t.Fatalf("wrong proposals accepted: %+v", sp)
			case !tc.wrong && (sp.Accepted != sp.DraftTokens || sp.Drafts == 0):
				t.Fatalf("right proposals rejected: %+v", sp)
			case tc.name == "right" && e.Stats().Steps >= baseSteps:
				t.Fatalf("%d steps with every proposal right, %d without speculation", e.Stats().Steps, baseSteps)
			}
			t.Logf("%+v; %d steps (plain decoding: %d)", sp, e.Stats().Steps, baseSteps)
		})
	}
}

// TestSpeculativeConfig: vLLM's --speculative-config JSON, its defaults
// and its errors.
func TestSpeculativeConfig(t *testing.T) {
	c, err := ParseSpeculativeConfig(`{"method": "ngram", "num_speculative_tokens": 4, "prompt_lookup_max": 3}`)
	if err != nil || c.PromptLookupMin != 2 || c.PromptLookupMax != 3 || c.DisableByBatchSize != 8 {
		t.Fatalf("%+v %v", c, err)
	}
	if c, err = ParseSpeculativeConfig(`{"method": "suffix"}`); err != nil || c.NumSpeculativeTokens != 24 || c.SuffixMinTokenProb != 0.1 {
		t.Fatalf("%+v %v", c, err)
	}
	// vLLM's spellings without a method: a model is a draft model, "[ngram]" prompt lookup.
	if c, err = ParseSpeculativeConfig(`{"model": "x.gguf", "num_speculative_tokens": 3}`); err != nil || c.Method != "draft_model" || c.Model != "x.gguf" {
		t.Fatalf("%+v %v", c, err)
	}
	if c, err = ParseSpeculativeConfig(`{"model": "[ngram]", "num_speculative_tokens": 3}`); err != nil || c.Method != "ngram" || c.Model != "" {
		t.Fatalf("%+v %v", c, err)
	}
	for in, want := range map[string]string{
		`{"method": "ngram"}`: "num_speculative_tokens",
		`{"method": "draft_model", "num_speculative_tokens": 3}`:                                           "needs model",
		`{"method": "draft_model", "model": "x.gguf"}`:                                                     "num_speculative_tokens",
		`{"method": "ngram", "model": "x.gguf", "num_speculative_tokens": 3}`:                              "uses no model",
		`{"method": "eagle", "model": "x.gguf", "num_speculative_tokens": 3}`:                              "not supported yet",
		`{"method": "ngram", "num_speculative_tokens": 3, "frobnicate": 1}`:                                "frobnicate",
		`{"method": "ngram", "num_speculative_tokens": 3, "prompt_lookup_min": 4, "prompt_lookup_max": 2}`: "prompt_lookup",
		`{"method": "magic"}`: "unknown method",
		`[1]`:                 "speculative-config",
	} {
		if _, err := ParseSpeculativeConfig(in); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want an error naming %q", in, err, want)
		}
	}
}

// TestSpeculativeIdentitySmolLM2: on the default model, in the fast
// arithmetic `pagoda serve` runs, chat requests that copy from their input,
// greedy and seeded, alone and together, give plain decoding's tokens and
// logprobs with either proposer.
func TestSpeculativeIdentitySmolLM2(t *testing.T) {
	heavy(t)
	path := testmodel.Default(t)
	base := newTestEngine(t, path, fastArithmetic)
	reqs := smolChatRequests(base, 40, func(i int) bool { return i%2 == 1 },
		"Repeat this sentence exactly: The quick brown fox jumps over the lazy dog near the river bank.",
		"Fix the spelling and write the text again: Teh cat sat on teh mat and looked at teh bird.",
		"Write the list again in the same order: apples, pears, plums, cherries, grapes, melons.",
		"Say hello.")
	want := runAll(t, base, reqs)
	for _, method := range []string{"ngram", "suffix"} {
		t.Run(method, func(t *testing.T) {
			e := newTestEngine(t, path, func(c *Config) {
				fastArithmetic(c)
				c.Speculative = &SpeculativeConfig{Method: method, NumSpeculativeTokens: 4, DisableByBatchSize: 64}
			})
			sameOutputs(t, runEach(t, e, reqs), want)
			sameOutputs(t, runAll(t, e, reqs), want)
			sp := e.Stats().Spec
			if sp.Accepted == 0 {
				t.Fatalf("no proposal accepted: %+v", sp)
			}
			t.Logf("%+v", sp)
		})
	}
}

// TestSpeculativeStructured: with a JSON-schema grammar the proposals are
// checked against the sampled (masked) tokens; the outputs are plain
// decoding's.
func TestSpeculativeStructured(t *testing.T) {
	heavy(t)
	path := testmodel.Default(t)
	g, err := grammar.FromJSONSchema([]byte(`{"type": "object", "properties": {"name": {"type": "string"}, "tags": {"type": "array", "items": {"type": "string", "enum": ["red", "green", "blue"]}}}, "required": ["name", "tags"], "additionalProperties": false}`), false)
	if err != nil {
		t.Fatal(err)
	}
	base := newTestEngine(t, path, nil)
	tok := base.Tokenizer()
	var reqs []Request
	for i, text := range []string{"Describe a red and blue ball as JSON.", "Give me JSON about a green green green leaf."} {
		p := GreedyParams(48)
		if i == 1 {
			seed := int64(3)
			p = DefaultSamplingParams()
			p.Temperature, p.Seed, p.MaxTokens = 0.7, &seed, 48
		}
		p.Grammar, p.ReturnLogprobs = g, true
		prompt := "<|im_start|>user\n" + text + "<|im_end|>\n<|im_start|>assistant\n"
		reqs = append(reqs, Request{PromptTokens: tok.Encode(prompt, false, true), Params: p})
	}
	want := runAll(t, base, reqs)
	e := newTestEngine(t, path, func(c *Config) {
		c.Speculative = &SpeculativeConfig{Method: "suffix", NumSpeculativeTokens: 6, DisableByBatchSize: 64}
	})
	sameOutputs(t, runAll(t, e, append(slices.Clone(reqs), reqs...))[:len(reqs)], want)
	if sp := e.Stats().Spec; sp.Drafts == 0 {
		t.Fatalf("nothing proposed: %+v", sp)
	}
}

// fastArithmetic configures the fast arithmetic and KV cache type `pagoda
// serve` runs by default.
func fastArithmetic(c *Config) {
	c.ExactArithmetic, c.KVCacheType = false, DefaultConfig("").KVCacheType
}

// smolChatRequests are the default model's chat requests for texts, with
// logprobs: greedy, or seeded sampling (temperature 0.8, top-p 0.9) where
// seeded(i), each of at most maxTokens.
func smolChatRequests(e *Engine, maxTokens int, seeded func(int) bool, texts ...string) []Request {
	tok := e.Tokenizer()
	var reqs []Request
	for i, text := range texts {
		prompt := "<|im_start|>user\n" + text + "<|im_end|>\n<|im_start|>assistant\n"
		p := GreedyParams(maxTokens)
		if seeded(i) {
			seed := int64(7 + i)
			p = DefaultSamplingParams()
			p.Temperature, p.TopP, p.Seed, p.MaxTokens = 0.8, 0.9, &seed, maxTokens
		}
		p.ReturnLogprobs = true
		reqs = append(reqs, Request{PromptTokens: tok.Encode(prompt, false, true), Params: p})
	}
	return reqs
}

// specCase is one way of running an identity workload: the engine's
// configuration, and whether the requests run one at a time.
type specCase struct {
	name   string
	mutate func(*Config)
	each   bool
}

// specCases run with speculation (spec) alone, together, and in a small
// pool (tight) preempting by recompute and by swap.
func specCases(spec, tight func(*Config)) []specCase {
	return []specCase{
		{"alone", spec, true},
		{"together", spec, false},
		{"tight_recompute", func(c *Config) { spec(c); tight(c); c.Preemption = sched.PreemptRecompute }, false},
		{"tight_swap", func(c *Config) { spec(c); tight(c); c.Preemption = sched.PreemptSwap; c.SwapSpace = 1 << 20 }, false},
	}
}

// run serves path configured as the case says, runs reqs (one at a time
// when each) and checks they give want, as plain decoding did; it returns
// the engine.
func (tc specCase) run(t *testing.T, path string, reqs []Request, want []RequestOutput) *Engine {
	t.Helper()
	e := newTestEngine(t, path, tc.mutate)
	if tc.each {
		sameOutputs(t, runEach(t, e, reqs), want)
	} else {
		sameOutputs(t, runAll(t, e, reqs), want)
	}
	return e
}

// A request with n > 1 whose chunked prefill leaves its prompt's last
// token for a step of its own is one token from decoding there: it must not
// speculate before its first draw, which forks its other sequences (it did,
// and forked them late, mid-output). Outputs equal plain decoding's.
func TestSpeculativeForkAfterChunkedPrefill(t *testing.T) {
	path := testmodel.Stories(t)
	const budget = 16
	chunked := func(c *Config) { c.MaxNumBatchedTokens, c.MaxNumSeqs = budget, 8 }
	base := newTestEngine(t, path, chunked)
	tok := base.Tokenizer()
	// Repeated, so that proposals exist for the prompt's end.
	prompt := tok.Encode(strings.Repeat("Lily liked to play in the park. ", 4), true, true)[:budget+1]
	seed := int64(7)
	p := DefaultSamplingParams()
	p.Temperature, p.Seed, p.MaxTokens, p.N = 0.8, &seed, 24, 2
	reqs := []Request{{PromptTokens: prompt, Params: p}}
	want := runAll(t, base, reqs)
	for _, method := range []string{"ngram", "suffix"} {
		e := newTestEngine(t, path, func(c *Config) {
			chunked(c)
			c.Speculative = &SpeculativeConfig{Method: method, NumSpeculativeTokens: 5, DisableByBatchSize: 64}
		})
		sameOutputs(t, runAll(t, e, reqs), want)
	}
}
