package engine

import (
	"context"
	"fmt"
	"math/rand/v2"
	"pagoda/internal/testmodel"
	"reflect"
	"testing"
	"time"
)

// faultRequest is one request of a fault run and what happens to it.
type faultRequest struct {
	req     Request
	abortAt int // step before which it is aborted; -1: never
}

// randomFaultRequest draws a request shape: greedy or seeded sampling, n
// and best_of (also > n), beam search, prompt logprobs, logprobs, stop
// strings and stop token ids, min_tokens, priorities.
func randomFaultRequest(rng *rand.Rand, id string, vocab int) Request {
	prompt := make([]int32, 1+rng.IntN(40))
	prompt[0] = 1 // BOS
	for i := 1; i < len(prompt); i++ {
		prompt[i] = int32(3 + rng.IntN(vocab-3))
	}
	p := GreedyParams(1 + rng.IntN(20))
	switch rng.IntN(5) {
	case 0, 1: // greedy
	case 2, 3:
		seed := rng.Int64()
		p.Temperature, p.TopP, p.Seed = 0.9, 0.95, &seed
		p.N = 1 + rng.IntN(3)
		if rng.IntN(2) == 0 {
			p.BestOf = p.N + rng.IntN(3)
		}
	case 4:
		p.UseBeamSearch, p.BestOf = true, 2+rng.IntN(2)
	}
	if rng.IntN(4) == 0 {
		p.PromptLogprobs = rng.IntN(3)
	}
	if rng.IntN(3) == 0 {
		p.ReturnLogprobs, p.Logprobs = true, rng.IntN(3)
	}
	if rng.IntN(3) == 0 {
		p.Stop = []string{[]string{"e", "he", "the", ".", "a "}[rng.IntN(5)]}
	}
	if rng.IntN(5) == 0 {
		p.StopTokenIDs = []int32{int32(3 + rng.IntN(vocab-3))}
	}
	if rng.IntN(5) == 0 {
		p.MinTokens = rng.IntN(p.MaxTokens + 1)
	}
	return Request{ID: id, PromptTokens: prompt, Params: p, Priority: rng.IntN(3)}
}

// drainStream reads a stream to its end and checks that exactly one delta,
// the last, is final.
func drainStream(t *testing.T, s *Stream) RequestOutput {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var all RequestOutput
	finals := 0
	for o, err := range s.Deltas(ctx) {
		if err != nil {
			t.Fatalf("request lost: %v", err)
		}
		if all.Finished {
			t.Fatalf("%s: a delta after the final one", o.RequestID)
		}
		if o.Finished {
			finals++
		}
		merge(&all, o)
	}
	if finals != 1 {
		t.Fatalf("%s finished %d times", all.RequestID, finals)
	}
	return all
}

// runAlone is the batch-invariance reference: r on an engine of its own,
// with room to spare.
func runAlone(t *testing.T, e *Engine, r Request) RequestOutput {
	t.Helper()
	return runAll(t, e, []Request{r})[0]
}

// sameOutput compares what batch invariance promises identical.
func sameOutput(a, b RequestOutput) bool {
	return reflect.DeepEqual(a.Outputs, b.Outputs) && reflect.DeepEqual(a.PromptLogprobs, b.PromptLogprobs)
}

// TestFaultInjection runs random mixes of every request shape through a KV
// pool small enough to preempt by recompute and by swap, with chunked
// prefill and prefix caching, and aborts requests at random steps (while
// waiting, mid-prefill, right after the first sample or fork, while
// swapped, mid beam search); one run in four ends by shutting the engine
// down with requests live. After each run: no panic, every request
// finished exactly once, every request not aborted gave exactly the
// output it gives alone, and no block leaked.
func TestFaultInjection(t *testing.T) {
	heavy(t)
	runs := 2000
	switch {
	case testing.Short() && raceEnabled:
		runs = 150 // the race pass looks for races: 150 random runs, not 1000
	case testing.Short():
		runs = 1000
	}
	ref := newTestEngine(t, testmodel.Stories(t), func(c *Config) { c.MaxNumSeqs, c.MaxModelLen, c.ExactArithmetic = 8, 64, false })
	preempted, swapped := int64(0), int64(0)
	for run := range runs {
		p, s := faultRun(t, ref, run)
		preempted, swapped = preempted+p, swapped+s
	}
	t.Logf("%d runs, %d preemptions, %d swap-outs", runs, preempted, swapped)
	if preempted == swapped || swapped == 0 {
		t.Fatal("the runs did not preempt both by recompute and by swap")
	}
}

// aborted reports whether any sequence of o ended by an abort.
func aborted(o RequestOutput) bool {
	for _, c := range o.Outputs {
		if c.FinishReason == FinishAbort {
			return true
		}
	}
	return len(o.Outputs) == 0
}

// faultRun is run number run of TestFaultInjection (its own seed); it
// returns the run's preemptions and swap-outs.
func faultRun(t *testing.T, ref *Engine, run int) (preempted, swapped int64) {
	vocab := ref.ModelConfig().VocabSize
	rng := rand.New(rand.NewPCG(uint64(run), 77))
	e := newTestEngine(t, testmodel.Stories(t), func(c *Config) {
		c.NumBlocksOverride, c.MaxNumSeqs, c.MaxNumBatchedTokens, c.MaxModelLen = 8+rng.IntN(8), 6, 32, 64
		c.ExactArithmetic = false                   // the fast arithmetic `pagoda serve` runs (the reference runs it too)
		c.SwapSpace = int64(rng.IntN(3)) * 80 << 10 // none, 4 or 8 host blocks
	})
	defer e.Close()
	frs := make([]faultRequest, 2+rng.IntN(7))
	for i := range frs {
		frs[i] = faultRequest{req: randomFaultRequest(rng, fmt.Sprintf("r%d", i), vocab), abortAt: -1}
		if rng.IntN(4) == 0 {
			frs[i].abortAt = rng.IntN(30)
		}
	}
	shutdownAt := -1
	if rng.IntN(4) == 0 {
		shutdownAt = rng.IntN(40)
	}
	streams := make([]*Stream, len(frs))
	for i, fr := range frs {
		s, err := e.AddRequest(fr.req)
		if err != nil {
			t.Fatalf("run %d: %v", run, err)
		}
		streams[i] = s
	}
	for step := 0; e.HasUnfinished(); step++ {
		if step > 5000 {
			t.Fatalf("run %d: the engine did not finish", run)
		}
		for _, fr := range frs {
			if fr.abortAt == step {
				e.Abort(fr.req.ID)
			}
		}
		if step == shutdownAt {
			e.shutdown()
			break
		}
		if err := e.Step(); err != nil {
			t.Fatalf("run %d: %v", run, err)
		}
	}
	for i, fr := range frs {
		got := drainStream(t, streams[i])
		if got.Err != nil || fr.abortAt >= 0 || shutdownAt >= 0 && aborted(got) {
			continue
		}
		if want := runAlone(t, ref, fr.req); !sameOutput(got, want) {
			t.Fatalf("run %d, %s %+v: batched output differs from alone:\n got %+v\nwant %+v", run, fr.req.ID, fr.req.Params, got.Outputs, want.Outputs)
		}
	}
	checkNoLeaks(t, e)
	return e.sched.NumPreemptions, e.sched.NumSwapOuts
}
