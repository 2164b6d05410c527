package engine

import (
	"context"
	"errors"
	"math"
	"pagoda/internal/testmodel"
	"testing"
	"time"
)

// A best_of > n request aborted before its sequences fork (while waiting,
// or mid-prefill) finishes with the one sequence it has: it used to panic
// choosing n of fewer than n sequences (issue: slice bounds out of range).
func TestAbortBestOfBeforeFork(t *testing.T) {
	for _, tc := range []struct {
		name  string
		steps int // engine steps before the abort
	}{{"waiting", 0}, {"mid_prefill", 1}} {
		t.Run(tc.name, func(t *testing.T) {
			e := newTestEngine(t, testmodel.Stories(t), func(c *Config) { c.MaxNumBatchedTokens, c.MaxNumSeqs = 16, 4 })
			p := DefaultSamplingParams()
			p.N, p.BestOf, p.MaxTokens = 2, 4, 16
			prompt := e.Tokenizer().Encode("Once upon a time there was a little girl who liked to play with her big red ball in the park every day", true, false)
			s, err := e.AddRequest(Request{ID: "r", PromptTokens: prompt, Params: p})
			if err != nil {
				t.Fatal(err)
			}
			for range tc.steps {
				if err := e.Step(); err != nil {
					t.Fatal(err)
				}
			}
			e.Abort("r")
			for e.HasUnfinished() {
				if err := e.Step(); err != nil {
					t.Fatal(err)
				}
			}
			o, err := s.Collect(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if !o.Finished || len(o.Outputs) != 1 || o.Outputs[0].FinishReason != FinishAbort {
				t.Fatalf("output %+v, want one aborted sequence", o)
			}
			checkNoLeaks(t, e)
		})
	}
}

// Shutdown aborts a waiting best_of > n request without panicking, and the
// request ends with ErrEngineStopped.
func TestShutdownAbortsBestOf(t *testing.T) {
	e := newTestEngine(t, testmodel.Stories(t), nil)
	p := DefaultSamplingParams()
	p.N, p.BestOf, p.MaxTokens = 2, 4, 400
	ctx, cancel := context.WithCancel(context.Background())
	s, err := e.AddRequest(Request{PromptTokens: []int32{1, 400, 401}, Params: p})
	if err != nil {
		t.Fatal(err)
	}
	cancel() // the loop sees a cancelled context at once: the request never forks
	e.Start(ctx)
	rctx, rcancel := context.WithTimeout(context.Background(), time.Minute)
	defer rcancel()
	o, err := s.Collect(rctx)
	if !errors.Is(err, ErrEngineStopped) || !o.Finished {
		t.Fatalf("Collect = %+v, %v; want ErrEngineStopped", o, err)
	}
}

// max_tokens near the int range is refused, not wrapped around.
func TestMaxTokensOverflow(t *testing.T) {
	e := newTestEngine(t, testmodel.Stories(t), nil)
	p := GreedyParams(math.MaxInt)
	if _, err := e.AddRequest(Request{PromptTokens: []int32{1, 2, 3}, Params: p}); !errors.Is(err, ErrPromptTooLong) {
		t.Fatalf("max_tokens MaxInt: err %v, want ErrPromptTooLong", err)
	}
}
