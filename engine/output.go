package engine

import (
	"context"
	"io"
	"iter"
	"sync"
	"time"

	"pagoda/sample"
)

// Finish reasons, as in the OpenAI API.
const (
	FinishStop   = "stop"
	FinishLength = "length"
	FinishAbort  = "abort"
)

// Logprob is a token's log-probability and the most likely alternatives.
type Logprob struct {
	ID      int32
	Logprob float32
	Rank    int // prompt logprobs only: vLLM's rank of ID (tokens whose logit is ≥ its own)
	Top     []sample.TokenLogprob
}

// CompletionOutput is one sequence's output. In a streamed delta it holds
// only what is new since the previous delta; Collect merges deltas.
type CompletionOutput struct {
	Index    int
	Text     string
	TokenIDs []int32
	Logprobs []Logprob // when asked: one per token id
	// CumulativeLogprob is the sum of the tokens' logprobs, computed only
	// when they are scored: logprobs asked, best_of > n, or beam search
	// (0 otherwise; vLLM gives None).
	CumulativeLogprob float64
	FinishReason      string // "" while running, then stop, length or abort
	StopReason        any    // the matched stop string, or the stop token id
}

// Finished reports whether the sequence is done.
func (c *CompletionOutput) Finished() bool { return c.FinishReason != "" }

// Metrics are a request's timestamps.
type Metrics struct {
	Arrival, FirstScheduled, FirstToken, LastToken, Finished time.Time
}

// RequestOutput is one delta of a request's stream, or (after Collect) its
// whole output.
type RequestOutput struct {
	RequestID       string
	PromptTokenIDs  []int32
	PromptLogprobs  []Logprob // when asked; entry 0 (the first token) is empty
	NumCachedTokens int       // prompt tokens served from the prefix cache
	Outputs         []CompletionOutput
	Finished        bool
	Err             error // the request failed (Finished is true)
	// Embedding is the pooled hidden state of an embedding request
	// (Request.Pooling), not normalised; in its final output only.
	Embedding []float32
	Metrics   Metrics
}

// Stream delivers a request's outputs. The engine never blocks on it:
// deltas queue until read.
type Stream struct {
	mu     sync.Mutex
	items  []RequestOutput
	notify chan struct{} // cap 1: something was pushed
	done   bool          // the final item was pushed
}

func newStream() *Stream { return &Stream{notify: make(chan struct{}, 1)} }

func (s *Stream) push(o RequestOutput) {
	s.mu.Lock()
	s.items = append(s.items, o)
	s.done = s.done || o.Finished
	s.mu.Unlock()
	select {
	case s.notify <- struct{}{}:
	default:
	}
}

// Recv returns the next delta, waiting for it. After the final delta
// (Finished) it returns io.EOF; when ctx ends first, ctx.Err().
func (s *Stream) Recv(ctx context.Context) (RequestOutput, error) {
	for {
		s.mu.Lock()
		if len(s.items) > 0 {
			o := s.items[0]
			s.items[0] = RequestOutput{}
			s.items = s.items[1:]
			s.mu.Unlock()
			return o, nil
		}
		done := s.done
		s.mu.Unlock()
		if done {
			return RequestOutput{}, io.EOF
		}
		select {
		case <-s.notify:
		case <-ctx.Done():
			return RequestOutput{}, ctx.Err()
		}
	}
}

// Deltas yields the stream's deltas, as Recv returns them, up to the
// final one; when ctx ends first it yields ctx.Err() last.
func (s *Stream) Deltas(ctx context.Context) iter.Seq2[RequestOutput, error] {
	return func(yield func(RequestOutput, error) bool) {
		for {
			o, err := s.Recv(ctx)
			if err == io.EOF || !yield(o, err) || err != nil {
				return
			}
		}
	}
}

// Collect reads the stream to the end and merges its deltas into the whole
// output.
func (s *Stream) Collect(ctx context.Context) (RequestOutput, error) {
	var all RequestOutput
	for o, err := range s.Deltas(ctx) {
		if err != nil {
			return all, err
		}
		merge(&all, o)
	}
	return all, all.Err
}

func merge(all *RequestOutput, d RequestOutput) {
	outs := all.Outputs
	*all = RequestOutput{RequestID: d.RequestID, PromptTokenIDs: d.PromptTokenIDs,
		PromptLogprobs: append(all.PromptLogprobs, d.PromptLogprobs...), NumCachedTokens: d.NumCachedTokens,
		Finished: d.Finished, Err: d.Err, Metrics: d.Metrics, Outputs: outs, Embedding: d.Embedding}
	all.Outputs = MergeOutputs(all.Outputs, d.Outputs)
}

// MergeOutputs adds the output deltas d to the merged outputs (indexed by
// CompletionOutput.Index, grown as needed) and returns them: text, token
// ids and logprobs are appended, the cumulative logprob and the finish
// reason replaced. The one merge of deltas (Collect, the HTTP server).
func MergeOutputs(outs, d []CompletionOutput) []CompletionOutput {
	for _, c := range d {
		for len(outs) <= c.Index {
			outs = append(outs, CompletionOutput{Index: len(outs)})
		}
		a := &outs[c.Index]
		a.Text += c.Text
		a.TokenIDs = append(a.TokenIDs, c.TokenIDs...)
		a.Logprobs = append(a.Logprobs, c.Logprobs...)
		a.CumulativeLogprob = c.CumulativeLogprob
		a.FinishReason, a.StopReason = c.FinishReason, c.StopReason
	}
	return outs
}
