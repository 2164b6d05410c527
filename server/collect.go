package server

import (
	"context"
	"io"
	"time"

	"pagoda/engine"
)

// tracker follows one engine request: it merges the deltas into the whole
// output (for non-streamed responses and usage) and observes the request's
// metrics. Only the handler goroutine touches it.
type tracker struct {
	id        string
	stream    *engine.Stream
	outs      []engine.CompletionOutput // by index; merged deltas
	prompt    []int32
	promptLP  []engine.Logprob // entry 0 (the first token) is empty
	cached    int
	finished  bool
	err       error
	lastToken time.Time // LastToken of the previous delta with tokens
	m         *metrics
	n         int  // the n parameter
	maxTokens int  // max_tokens as the engine applies it
	released  bool // id released (abort)
	started   bool // the first delta arrived (its cached tokens are counted)
}

// add merges delta d and observes inter-token latency; when d is final it
// records the request's metrics.
func (t *tracker) add(d engine.RequestOutput) {
	t.prompt, t.cached = d.PromptTokenIDs, d.NumCachedTokens
	if !t.started {
		t.started = true
		t.m.observeCached(d.NumCachedTokens)
	}
	t.promptLP = append(t.promptLP, d.PromptLogprobs...)
	t.outs = engine.MergeOutputs(t.outs, d.Outputs)
	if lt := d.Metrics.LastToken; len(d.Outputs) > 0 && !lt.IsZero() {
		if !t.lastToken.IsZero() && lt.After(t.lastToken) {
			t.m.observeTokenInterval(lt.Sub(t.lastToken))
		}
		t.lastToken = lt
	}
	if d.Finished {
		t.finish(d)
	}
}

func (t *tracker) finish(d engine.RequestOutput) {
	t.finished, t.err = true, d.Err
	reason := engine.FinishAbort
	if d.Err == nil && len(t.outs) > 0 && t.outs[0].FinishReason != "" {
		reason = t.outs[0].FinishReason
	}
	longest := 0
	for _, o := range t.outs {
		longest = max(longest, len(o.TokenIDs))
	}
	t.m.observeFinished(finishedRequest{id: t.id, reason: reason, m: d.Metrics, promptTokens: len(t.prompt),
		genTokens: t.completionTokens(), cachedTokens: t.cached, maxGenTokens: longest, n: t.n, maxTokens: t.maxTokens})
}

// completionTokens counts the generated tokens of every returned output.
func (t *tracker) completionTokens() int {
	n := 0
	for _, o := range t.outs {
		n += len(o.TokenIDs)
	}
	return n
}

// collect reads the request to its end. On error (the client went away, or
// the request failed), the caller aborts it.
func (t *tracker) collect(ctx context.Context) error {
	for {
		d, err := t.stream.Recv(ctx)
		if err == io.EOF {
			return t.err
		}
		if err != nil {
			return err
		}
		t.add(d)
	}
}

// event is one delta of one of a request's prompts.
type event struct {
	prompt int
	out    engine.RequestOutput
	err    error // io.EOF after the last delta, or ctx.Err()
}

// merge delivers the deltas of several requests on one channel, in order
// per request. Its goroutines, one per request, end after their request's
// last delta (sent as io.EOF) or when ctx is done.
func merge(ctx context.Context, ts []*tracker) <-chan event {
	ch := make(chan event)
	for i, t := range ts {
		go func() {
			for {
				d, err := t.stream.Recv(ctx)
				select {
				case ch <- event{prompt: i, out: d, err: err}:
				case <-ctx.Done():
					return
				}
				if err != nil {
					return
				}
			}
		}()
	}
	return ch
}
