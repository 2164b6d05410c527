package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"

	"pagoda/engine"
)

// sse writes a Server-Sent Events response: one "data: <json>" event per
// chunk, flushed at once, and "data: [DONE]" at the end. After a failed
// write (the client went away) every later write is skipped.
type sse struct {
	w   http.ResponseWriter
	rc  *http.ResponseController
	err error
	// sink, when set, receives the events instead of a client: the APIs
	// built on chat completions (responses, messages) turn a chat stream's
	// chunks into their own events (newSinkSSE).
	sink eventSink
}

// eventSink takes the events of a stream written for another protocol:
// event gets each chunk (or errorBody), done the end of the stream; each
// reports whether the client still listens.
type eventSink interface {
	event(v any) bool
	done() bool
}

// errClientGone marks a sink's stream whose client stopped listening.
var errClientGone = errors.New("the client stopped listening")

// newSinkSSE is a stream whose events go to sink.
func newSinkSSE(sink eventSink) *sse { return &sse{sink: sink} }

func newSSE(w http.ResponseWriter) *sse {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	s := &sse{w: w, rc: http.NewResponseController(w)}
	s.err = s.rc.Flush()
	return s
}

// send writes one event; it reports whether the client still listens.
func (s *sse) send(v any) bool {
	if s.sink != nil {
		if s.err == nil && !s.sink.event(v) {
			s.err = errClientGone
		}
		return s.err == nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		b, _ = json.Marshal(errorBody{Error: errorDetail{Message: err.Error(), Type: "server_error"}})
	}
	return s.write(b)
}

func (s *sse) write(data []byte) bool {
	if s.err != nil {
		return false
	}
	if _, s.err = fmt.Fprintf(s.w, "data: %s\n\n", data); s.err == nil {
		s.err = s.rc.Flush()
	}
	return s.err == nil
}

// fail sends an error event (OpenAI's error shape) and ends the stream.
func (s *sse) fail(ae *apiError) {
	s.send(ae.body())
	s.done()
}

// done ends the stream.
func (s *sse) done() {
	if s.sink != nil {
		if s.err == nil && !s.sink.done() {
			s.err = errClientGone
		}
		return
	}
	s.write([]byte("[DONE]"))
}

// source yields the deltas of a request's engine requests. One request is
// read directly; several through merge's goroutines.
type source struct {
	ts []*tracker
	ch <-chan event
}

func newSource(ctx context.Context, ts []*tracker) *source {
	s := &source{ts: ts}
	if len(ts) > 1 {
		s.ch = merge(ctx, ts)
	}
	return s
}

// next returns the next event; err is io.EOF after a request's last delta,
// or ctx.Err().
func (s *source) next(ctx context.Context) event {
	if s.ch == nil {
		d, err := s.ts[0].stream.Recv(ctx)
		return event{out: d, err: err}
	}
	select {
	case ev := <-s.ch:
		return ev
	case <-ctx.Done():
		return event{err: ctx.Err()}
	}
}

// relay streams every delta of ts to out until all requests end: chunk
// builds the event of one output delta of prompt (nil skips it). It reports
// false when the stream ended early: the client left, the server is
// stopping, or a request failed. A stream that ends early ends with an
// error event and [DONE] (written only if the client still listens), never
// silently: a 200 stream without [DONE] means the connection broke.
func (b *backend) relay(ctx context.Context, out *sse, ts []*tracker, chunk func(prompt int, c engine.CompletionOutput) any) bool {
	src := newSource(ctx, ts)
	for left := len(ts); left > 0; {
		ev := src.next(ctx)
		if ev.err == io.EOF {
			left--
			continue
		}
		if ev.err != nil {
			out.fail(b.aborted())
			return false
		}
		ts[ev.prompt].add(ev.out)
		if ev.out.Err != nil {
			out.fail(engineError(ev.out.Err))
			return false
		}
		for _, c := range ev.out.Outputs {
			if v := chunk(ev.prompt, c); v != nil && !out.send(v) {
				return false
			}
		}
	}
	return true
}

// totalUsage sums the usage of the requests.
func totalUsage(ts []*tracker) *usage {
	prompt, completion, cached := 0, 0, 0
	for _, t := range ts {
		prompt += len(t.prompt)
		completion += t.completionTokens()
		cached += t.cached
	}
	return newUsage(prompt, completion, cached)
}

// finishOf is how o's sequence finished, if it has.
func finishOf(o engine.CompletionOutput) finish {
	if o.FinishReason == "" {
		return finish{StopReason: o.StopReason}
	}
	r := o.FinishReason
	return finish{FinishReason: &r, StopReason: o.StopReason}
}
