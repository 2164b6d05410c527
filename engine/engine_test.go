package engine

import (
	"context"
	"errors"
	"math"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"pagoda/internal/testmodel"
	"pagoda/model"
	"pagoda/sched"
)

// The stories260K reference (llama-server: flash attention, F16 cache): all
// 8 prompts together, greedy, also through caches small enough to force
// chunked prefill and preemption by recompute and by swap, give llama.cpp's
// 64 tokens and logprobs. One step of the reference is a near-tie (top two
// within 3e-5) that llama.cpp on this machine resolves the other way, as
// pagoda does; a case may depart there, and is compared up to that step.
// Logprobs agree to 2e-3: pagoda reproduces this machine's llama.cpp
// (llama-cpp-python 0.3.36) bit for bit (model/llama
// TestStories260KFlashExact), and the shared reference, from llama-server
// build 10587, differs from it by up to 1.8e-3.
func TestStoriesReferenceUnderPressure(t *testing.T) {
	ref := readReference(t, testmodel.StoriesReference(t))
	flash := func(c *Config) { c.FlashAttention, c.KVCacheType = true, model.KVF16 }
	for _, tc := range []struct {
		name   string
		mutate func(*Config)
	}{
		{"roomy", flash},
		{"block128", func(c *Config) {
			flash(c)
			c.BlockSize, c.NumBlocksOverride, c.MaxNumSeqs, c.MaxNumBatchedTokens = 128, 6, 8, 128
		}},
		{"tight_recompute", func(c *Config) {
			flash(c)
			c.BlockSize, c.NumBlocksOverride, c.MaxNumBatchedTokens, c.MaxNumSeqs, c.MaxModelLen = 4, 48, 16, 8, 128
		}},
		{"tight_swap", func(c *Config) {
			flash(c)
			c.BlockSize, c.NumBlocksOverride, c.MaxNumBatchedTokens, c.MaxNumSeqs, c.MaxModelLen = 4, 48, 16, 8, 128
			c.Preemption = sched.PreemptSwap
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newTestEngine(t, testmodel.Stories(t), tc.mutate)
			var reqs []Request
			for _, c := range ref.Cases {
				p := GreedyParams(64)
				p.ReturnLogprobs = true
				reqs = append(reqs, Request{PromptTokens: c.PromptTokens, Params: p})
			}
			outs := runAll(t, e, reqs)
			flips, worst := 0, 0.0
			for i, c := range ref.Cases {
				got := outs[i].Outputs[0]
				for j, s := range c.Steps {
					if got.TokenIDs[j] != s.ID {
						if gap := s.Top[0][1] - s.Top[1][1]; gap > 1e-4 || flips > 0 {
							t.Fatalf("case %d step %d: %d, llama.cpp %d (gap %.1e)", i, j, got.TokenIDs[j], s.ID, gap)
						}
						flips++
						break
					}
					d := math.Abs(float64(got.Logprobs[j].Logprob) - s.Logprob)
					worst = max(worst, d)
					if d > 2e-3 {
						t.Fatalf("case %d step %d: logprob %v, llama.cpp %v", i, j, got.Logprobs[j].Logprob, s.Logprob)
					}
				}
			}
			t.Logf("max |logprob - llama.cpp| %.1e, near-tie departures %d", worst, flips)
			st := e.Stats()
			if tc.name != "roomy" && tc.name != "block128" && st.Preemptions == 0 {
				t.Fatalf("the tight cache never preempted: %+v", st)
			}
			if tc.name == "tight_swap" && st.SwapOuts == 0 {
				t.Fatalf("forced swap mode never swapped: %+v", st)
			}
		})
	}
}

func TestPromptTooLong(t *testing.T) {
	e := newTestEngine(t, testmodel.Stories(t), func(c *Config) { c.MaxModelLen = 64 })
	p := GreedyParams(20)
	_, err := e.AddRequest(Request{PromptTokens: make([]int32, 50), Params: p})
	if !errors.Is(err, ErrPromptTooLong) || !strings.Contains(err.Error(), "50") || !strings.Contains(err.Error(), "64") {
		t.Fatalf("want a prompt-too-long error naming 50 and 64, got %v", err)
	}
	p.MaxTokens = 0
	if _, err := e.AddRequest(Request{PromptTokens: make([]int32, 64), Params: p}); !errors.Is(err, ErrPromptTooLong) {
		t.Fatalf("a prompt filling the model length should be refused, got %v", err)
	}
	if _, err := e.AddRequest(Request{PromptTokens: []int32{1, 9999}, Params: p}); err == nil {
		t.Fatal("out-of-vocabulary token accepted")
	}
}

func TestStopConditions(t *testing.T) {
	ref := readReference(t, testmodel.StoriesReference(t))
	c := ref.Cases[0] // "Once upon a time" → ", there was a little girl named Lily. ..."
	e := newTestEngine(t, testmodel.Stories(t), nil)
	tok := e.Tokenizer()
	full := tok.Decode(c.CompletionTokens)
	mk := func(f func(*SamplingParams)) Request {
		p := GreedyParams(64)
		f(&p)
		return Request{PromptTokens: c.PromptTokens, Params: p}
	}
	outs := runAll(t, e, []Request{
		mk(func(p *SamplingParams) { p.Stop = []string{"little girl"} }),
		mk(func(p *SamplingParams) { p.Stop = []string{"little girl"}; p.IncludeStopStrInOutput = true }),
		mk(func(p *SamplingParams) { p.StopTokenIDs = []int32{c.CompletionTokens[5]} }),
		mk(func(p *SamplingParams) { p.MaxTokens = 7 }),
	})
	cut := strings.Index(full, "little girl")
	if got := outs[0].Outputs[0]; got.Text != full[:cut] || got.FinishReason != FinishStop || got.StopReason != "little girl" {
		t.Errorf("stop string: %q %s %v, want %q", got.Text, got.FinishReason, got.StopReason, full[:cut])
	}
	if got := outs[1].Outputs[0]; got.Text != full[:cut+len("little girl")] {
		t.Errorf("include_stop_str_in_output: %q", got.Text)
	}
	if got := outs[2].Outputs[0]; len(got.TokenIDs) != 6 || got.StopReason != c.CompletionTokens[5] {
		t.Errorf("stop token: %v reason %v", got.TokenIDs, got.StopReason)
	}
	if got := outs[3].Outputs[0]; len(got.TokenIDs) != 7 || got.FinishReason != FinishLength || got.Text != tok.Decode(c.CompletionTokens[:7]) {
		t.Errorf("max_tokens: %d tokens, %s, %q", len(got.TokenIDs), got.FinishReason, got.Text)
	}
}

func TestMinTokensSuppressesStops(t *testing.T) {
	e := newTestEngine(t, testmodel.Stories(t), nil)
	prompt := []int32{1, 403, 407, 261, 378} // greedy continuation starts with 432 (",")
	p := GreedyParams(40)
	p.StopTokenIDs = []int32{432}
	outs := runAll(t, e, []Request{{PromptTokens: prompt, Params: p}})
	if got := outs[0].Outputs[0]; len(got.TokenIDs) != 1 || got.StopReason != int32(432) {
		t.Fatalf("without min_tokens the stop token should end at once, got %v", got.TokenIDs)
	}
	p.MinTokens = 5
	outs = runAll(t, e, []Request{{PromptTokens: prompt, Params: p}})
	got := outs[0].Outputs[0]
	for i, id := range got.TokenIDs[:min(5, len(got.TokenIDs))] {
		if id == 432 && i < 4 {
			t.Fatalf("stop token drawn at %d before min_tokens: %v", i, got.TokenIDs)
		}
	}
	if len(got.TokenIDs) < 5 {
		t.Fatalf("min_tokens 5: only %d tokens (%s)", len(got.TokenIDs), got.FinishReason)
	}
}

// Parallel samples are forked from the prompt's blocks; each sample's
// logprobs must equal those of its own text recomputed alone (copy-on-write
// kept the forks apart), and seeded samples are reproducible under any
// batching.
func TestParallelSamplingForksAreIsolated(t *testing.T) {
	seed := int64(42)
	p := DefaultSamplingParams()
	p.N, p.MaxTokens, p.Seed, p.ReturnLogprobs, p.Temperature = 3, 24, &seed, true, 1.5
	prompt := []int32{1, 403, 407, 261, 378, 432, 383}
	e := newTestEngine(t, testmodel.Stories(t), func(c *Config) { c.BlockSize = 4 })
	out := runAll(t, e, []Request{{PromptTokens: prompt, Params: p}})[0]
	if len(out.Outputs) != 3 {
		t.Fatalf("%d outputs, want 3", len(out.Outputs))
	}
	if slices.Equal(out.Outputs[0].TokenIDs, out.Outputs[1].TokenIDs) && slices.Equal(out.Outputs[1].TokenIDs, out.Outputs[2].TokenIDs) {
		t.Fatal("three samples at temperature 1.5 should differ")
	}
	for _, c := range out.Outputs {
		// Score the sample's own tokens with prompt logprobs.
		full := append(append([]int32{}, prompt...), c.TokenIDs...)
		q := GreedyParams(1)
		q.PromptLogprobs = 0
		alone := runAll(t, e, []Request{{PromptTokens: full, Params: q}})[0]
		for j, lp := range c.Logprobs {
			want := alone.PromptLogprobs[len(prompt)+j]
			if want.ID != lp.ID || math.Abs(float64(want.Logprob-lp.Logprob)) > 1e-4 {
				t.Fatalf("sample %d token %d: %v (logprob %v), recomputed alone %v (%v)", c.Index, j, lp.ID, lp.Logprob, want.ID, want.Logprob)
			}
		}
	}
	// The same seeded request beside others, in a tight cache, gives the same samples.
	e2 := newTestEngine(t, testmodel.Stories(t), func(c *Config) {
		c.BlockSize, c.NumBlocksOverride, c.MaxNumBatchedTokens, c.MaxNumSeqs, c.MaxModelLen = 4, 40, 16, 8, 128
	})
	reqs := []Request{{PromptTokens: prompt, Params: p}}
	for i := range 6 {
		reqs = append(reqs, Request{PromptTokens: []int32{1, int32(300 + i), 400, 261}, Params: GreedyParams(40)})
	}
	crowded := runAll(t, e2, reqs)[0]
	for i := range out.Outputs {
		if !slices.Equal(crowded.Outputs[i].TokenIDs, out.Outputs[i].TokenIDs) {
			t.Fatalf("sample %d differs when batched with others under pressure", i)
		}
	}
	if st := e2.Stats(); st.Preemptions == 0 {
		t.Fatalf("expected preemption in the tight cache: %+v", st)
	}
}

func TestPrefixCachingIsTransparent(t *testing.T) {
	system := []int32{1, 403, 407, 261, 378, 432, 383, 286, 261, 376, 298, 315, 421, 395, 317, 426, 338, 401, 396, 267}
	var reqs []Request
	for i := range 6 {
		p := append(append([]int32{}, system...), int32(300+i), int32(310+i))
		reqs = append(reqs, Request{PromptTokens: p, Params: GreedyParams(16)})
	}
	var results [2][]RequestOutput
	for i, caching := range []bool{false, true} {
		e := newTestEngine(t, testmodel.Stories(t), func(c *Config) { c.BlockSize, c.EnablePrefixCaching = 4, caching })
		// Sequentially, so that later requests find the earlier ones' blocks.
		for _, r := range reqs {
			results[i] = append(results[i], runAll(t, e, []Request{r})...)
		}
		st := e.Stats()
		if caching && (st.Prefix.HitBlocks == 0 || results[i][5].NumCachedTokens != 20) {
			t.Fatalf("shared prompt gave no hits: %+v, cached tokens %d", st.Prefix, results[i][5].NumCachedTokens)
		}
		if !caching && st.Prefix.HitBlocks != 0 {
			t.Fatalf("hits with caching off: %+v", st.Prefix)
		}
	}
	for i := range reqs {
		if !slices.Equal(results[0][i].Outputs[0].TokenIDs, results[1][i].Outputs[0].TokenIDs) {
			t.Fatalf("request %d: prefix caching changed the output", i)
		}
	}
}

// Concurrent AddRequest and Abort against the running loop: every stream
// ends, aborted ones with reason abort, and no block leaks.
func TestConcurrentAddAndAbort(t *testing.T) {
	e := newTestEngine(t, testmodel.Stories(t), func(c *Config) { c.BlockSize, c.NumBlocksOverride, c.MaxModelLen = 4, 64, 128 })
	ctx, cancel := context.WithCancel(context.Background())
	e.Start(ctx)
	var wg sync.WaitGroup
	var aborted, finished sync.Map
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 8 {
				id := string(rune('a'+g)) + string(rune('0'+i))
				s, err := e.AddRequest(Request{ID: id, PromptTokens: []int32{1, int32(300 + i), 400}, Params: GreedyParams(30)})
				if err != nil {
					t.Error(err)
					return
				}
				if i%2 == 0 {
					e.Abort(id)
					aborted.Store(id, true)
				}
				o, err := s.Collect(context.Background())
				if err != nil {
					t.Error(err)
					return
				}
				finished.Store(id, o.Outputs)
			}
		}()
	}
	wg.Wait()
	n := 0
	finished.Range(func(k, v any) bool {
		n++
		outs := v.([]CompletionOutput)
		if _, ab := aborted.Load(k); !ab && (len(outs) == 0 || outs[0].FinishReason == FinishAbort) {
			t.Errorf("request %v was not aborted but finished with %v", k, outs)
		}
		return true
	})
	if n != 32 {
		t.Fatalf("%d of 32 requests finished", n)
	}
	cancel()
	<-e.stopped
	checkNoLeaks(t, e)
}

func TestLoopAbortsOnShutdown(t *testing.T) {
	e := newTestEngine(t, testmodel.Stories(t), nil)
	ctx, cancel := context.WithCancel(context.Background())
	e.Start(ctx)
	s, err := e.AddRequest(Request{PromptTokens: []int32{1, 403}, Params: GreedyParams(400)})
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(20 * time.Millisecond)
	cancel()
	o, err := s.Collect(context.Background())
	if !errors.Is(err, ErrEngineStopped) {
		t.Fatalf("Collect error %v, want ErrEngineStopped", err)
	}
	if _, err := e.AddRequest(Request{PromptTokens: []int32{1, 403}, Params: GreedyParams(4)}); !errors.Is(err, ErrEngineStopped) {
		t.Fatalf("AddRequest after shutdown: %v, want ErrEngineStopped", err)
	}
	if !o.Finished || o.Outputs[0].FinishReason != FinishAbort {
		t.Fatalf("want an aborted final output, got %+v", o.Outputs)
	}
	<-e.stopped
	checkNoLeaks(t, e)
}

// Generated tokens are scored only when their logprobs are used: the same
// greedy request gives the same tokens with and without logprobs, and a
// cumulative logprob (the sum of the returned ones) only with them.
func TestScoresOnlyWhenUsed(t *testing.T) {
	e := newTestEngine(t, testmodel.Stories(t), nil)
	plain, scored := GreedyParams(16), GreedyParams(16)
	scored.ReturnLogprobs = true
	prompt := []int32{1, 403, 407, 261, 378}
	outs := runAll(t, e, []Request{{PromptTokens: prompt, Params: plain}, {PromptTokens: prompt, Params: scored}})
	a, b := outs[0].Outputs[0], outs[1].Outputs[0]
	if !slices.Equal(a.TokenIDs, b.TokenIDs) {
		t.Fatalf("tokens %v without logprobs, %v with", a.TokenIDs, b.TokenIDs)
	}
	sum := 0.0
	for _, lp := range b.Logprobs {
		sum += float64(lp.Logprob)
	}
	if a.CumulativeLogprob != 0 || len(a.Logprobs) != 0 || b.CumulativeLogprob >= 0 || math.Abs(sum-b.CumulativeLogprob) > 1e-9 {
		t.Fatalf("cumulative logprob %v without logprobs; %v with (returned logprobs sum to %v)",
			a.CumulativeLogprob, b.CumulativeLogprob, sum)
	}
}
