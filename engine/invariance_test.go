package engine

import (
	"fmt"
	"slices"
	"testing"

	"pagoda/internal/testmodel"
	"pagoda/model"
	"pagoda/sched"
)

// invarianceWorkload returns n requests of varied lengths on the default
// model: a shared system prompt (prefix-cache hits), short and long user
// parts (one longer than the step budget: chunked prefill), and every
// fourth request with two samples (a group of two sequences: swap).
func invarianceWorkload(t *testing.T, e *Engine, n int, params func(i int) SamplingParams) []Request {
	tok := e.Tokenizer()
	system := "You are a careful assistant. Answer in one short sentence, and say when you do not know."
	topics := []string{"the moon", "bread", "rivers", "music", "winter", "bees", "chess", "volcanoes",
		"the ocean", "trains", "paper", "clocks"}
	var reqs []Request
	for i := range n {
		user := fmt.Sprintf("Tell me one fact about %s.", topics[i%len(topics)])
		if i%7 == 3 {
			for range 6 {
				user += " Please be precise, cite a number if you can, and keep it short."
			}
		}
		var text string
		if i%3 == 0 {
			text = user // no shared prefix
		} else {
			text = "<|im_start|>system\n" + system + "<|im_end|>\n<|im_start|>user\n" + user + "<|im_end|>\n<|im_start|>assistant\n"
		}
		p := params(i)
		if i%4 == 3 {
			p.N = 2
		}
		reqs = append(reqs, Request{PromptTokens: tok.Encode(text, false, true), Params: p})
	}
	return reqs
}

// Scheduling transparency on the default model: requests run together
// through a small KV pool — chunked prefill, preemption by recompute and by
// swap, prefix-cache hits, and with the partial-prefill limits (a long
// prompt chunked to the threshold, prefills capped) — give exactly the
// tokens each gives alone.
func TestBatchInvarianceSmolLM2(t *testing.T) {
	heavy(t)
	n := 32
	if testing.Short() {
		n = 8
	}
	seed := func(i int) *int64 { s := int64(1000 + i); return &s }
	for _, tc := range []struct {
		name   string
		kv     model.KVType
		params func(i int) SamplingParams
	}{
		{"greedy", model.KVF16, func(i int) SamplingParams { return GreedyParams(6 + i%7) }},
		{"seeded_n3", model.KVF16, func(i int) SamplingParams {
			p := DefaultSamplingParams()
			p.N, p.Temperature, p.TopP, p.Seed, p.MaxTokens = 3, 0.8, 0.95, seed(i), 5+i%5
			return p
		}},
		// a q8_0 cache: tokens and every logprob identical
		{"q8_0_greedy_logprobs", model.KVQ8_0, func(i int) SamplingParams {
			p := GreedyParams(6 + i%7)
			p.ReturnLogprobs = true
			return p
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			testInvariance(t, n, tc.kv, tc.params)
		})
	}
}

func testInvariance(t *testing.T, n int, kv model.KVType, params func(i int) SamplingParams) {
	path := testmodel.Default(t)
	// The default arithmetic (fast), which the product serves with.
	alone := newTestEngine(t, path, func(c *Config) {
		c.KVCacheType, c.EnablePrefixCaching, c.MaxModelLen = kv, false, 256
		c.ExactArithmetic = false
	})
	reqs := invarianceWorkload(t, alone, n, params)
	want := make([]RequestOutput, len(reqs))
	for i, r := range reqs {
		want[i] = runAll(t, alone, []Request{r})[0]
	}
	per := int64(model.BlockBytes(30, 16, 3, 64, kv))
	for _, run := range []struct {
		mode    sched.PreemptionMode
		partial bool // long prompts chunked to 24 tokens, 2 prefills at once, 1 long
	}{{sched.PreemptAuto, false}, {sched.PreemptSwap, false}, {sched.PreemptAuto, true}} {
		mode := run.mode
		crowd := newTestEngine(t, path, func(c *Config) {
			c.KVCacheType, c.MaxModelLen, c.BlockSize = kv, 160, 16
			c.NumBlocksOverride, c.SwapSpace, c.Preemption = max(10, 3*n/4), 96*per, mode
			c.MaxNumBatchedTokens, c.MaxNumSeqs = 64, 16
			c.ExactArithmetic = false
			if run.partial {
				c.LongPrefillTokenThreshold, c.MaxNumPartialPrefills, c.MaxLongPartialPrefills = 24, 2, 1
				c.NumBlocksOverride = max(10, n/2) // fewer prompts at once take fewer blocks
			}
		})
		got := runAll(t, crowd, reqs)
		for i := range reqs {
			if len(got[i].Outputs) != len(want[i].Outputs) {
				t.Fatalf("request %d: %d outputs, alone %d", i, len(got[i].Outputs), len(want[i].Outputs))
			}
			for j := range want[i].Outputs {
				if !slices.Equal(got[i].Outputs[j].TokenIDs, want[i].Outputs[j].TokenIDs) {
					t.Errorf("mode %d request %d output %d: %v together, %v alone", mode, i, j, got[i].Outputs[j].TokenIDs, want[i].Outputs[j].TokenIDs)
				}
				if g, w := logprobsOf(got[i].Outputs[j]), logprobsOf(want[i].Outputs[j]); !slices.Equal(g, w) {
					t.Errorf("mode %d request %d output %d: logprobs %v together, %v alone", mode, i, j, g, w)
				}
			}
		}
		st := crowd.Stats()
		t.Logf("crowded run, preemption mode %d, partial-prefill limits %v: %d preemptions (%d swaps), prefix cache %+v", mode, run.partial, st.Preemptions, st.SwapOuts, st.Prefix)
		recomputed := st.Preemptions - st.SwapOuts
		if st.Prefix.HitBlocks == 0 || (mode == sched.PreemptAuto && recomputed == 0) || (mode == sched.PreemptSwap && st.SwapOuts == 0) {
			t.Errorf("the workload must preempt (recompute in auto mode, swap in swap mode) and hit the prefix cache: %+v", st)
		}
	}
}

// logprobsOf lists the logprobs of an output's tokens (none when not
// asked for).
func logprobsOf(o CompletionOutput) []float32 {
	var l []float32
	for _, lp := range o.Logprobs {
		l = append(l, lp.Logprob)
	}
	return l
}
