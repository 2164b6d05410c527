package server

import (
	"context"
	"fmt"
	"net/http"

	"pagoda/engine"
)

// submit validates p and adds one engine request per prompt, with ids id
// (one prompt) or id-i. Every sequence counts against --max-queue (each
// prompt × max(n, best_of)): a request that could never fit gets a 400, one
// that does not fit now a 503. On error it aborts the requests already added.
func (b *backend) submit(id string, prompts []promptInput, p engine.SamplingParams, priority int) ([]*tracker, *apiError) {
	if aerr := b.prepare(&p); aerr != nil {
		return nil, aerr
	}
	if aerr := validate(&p, b.e.ModelConfig().VocabSize); aerr != nil {
		return nil, aerr
	}
	if aerr := b.admit(len(prompts) * max(p.N, p.BestOf)); aerr != nil {
		return nil, aerr
	}
	ts := make([]*tracker, 0, len(prompts))
	for i, pr := range prompts {
		rid := id
		if len(prompts) > 1 {
			rid = fmt.Sprintf("%s-%d", id, i)
		}
		rid = b.claimID(rid)
		s, err := b.e.AddRequest(engine.Request{ID: rid, PromptTokens: pr.ids, Params: p, Priority: priority})
		if err != nil {
			b.releaseID(rid)
			b.abort(ts)
			ae := engineError(err)
			if len(prompts) > 1 {
				ae.Message = fmt.Sprintf("prompt %d: %s", i, ae.Message)
			}
			return nil, ae
		}
		b.logRequest(rid, pr.ids, p)
		ts = append(ts, &tracker{id: rid, stream: s, prompt: pr.ids, m: b.m, n: p.N,
			maxTokens: b.resolvedMaxTokens(p, len(pr.ids))})
	}
	return ts, nil
}

// admit checks that seqs more sequences fit in the queue (--max-queue).
// Concurrent handlers may each pass before either's requests are counted,
// so the queue can exceed the limit by what those handlers carry.
func (b *backend) admit(seqs int) *apiError {
	if b.maxQueue <= 0 {
		return nil
	}
	if seqs > b.maxQueue {
		return badRequest("n", "the request needs %d sequences (prompts × max(n, best_of)), more than the queue holds (--max-queue %d)",
			seqs, b.maxQueue)
	}
	if q := b.e.QueuedSeqs(); q+int64(seqs) > int64(b.maxQueue) {
		return unavailable(1, "%d sequences are waiting and this request adds %d, over the limit of %d (--max-queue); retry later",
			q, seqs, b.maxQueue)
	}
	return nil
}

// requestRun is a completions or chat request being answered.
type requestRun interface {
	// stream sends the outputs of ts as server-sent events.
	stream(ctx context.Context, out *sse, ts []*tracker)
	// response is the whole answer once every request of ts has finished.
	response(ts []*tracker) any
}

// answer submits prompts with p as request id and answers through run: streamed when
// f.Stream, else one JSON response once every sequence has finished.
// Requests still running when it returns (the client left) are aborted.
func (b *backend) answer(w http.ResponseWriter, r *http.Request, id string, run requestRun, prompts []promptInput, p engine.SamplingParams, f *samplingFields) error {
	if f.Stream && p.Grammar != nil {
		// A stream's status is sent with its first byte: the grammar is compiled (on the
		// engine's compile worker, not its loop) before, so that a grammar over a limit is
		// a 400. A response waits for it in the engine instead (WAITING_FOR_FSM).
		if err := b.e.PrepareGrammar(r.Context(), p.Grammar); err != nil {
			if r.Context().Err() != nil {
				return b.aborted()
			}
			return engineError(err)
		}
	}
	ts, aerr := b.submit(id, prompts, p, f.Priority)
	if aerr != nil {
		return aerr
	}
	defer b.abort(ts)
	if f.Stream {
		run.stream(r.Context(), newSSE(w), ts)
		return nil
	}
	if aerr := b.collectAll(r.Context(), ts); aerr != nil {
		return aerr
	}
	writeJSON(w, http.StatusOK, run.response(ts))
	return nil
}

// abort aborts the requests of ts that have not finished (the client left,
// the server is stopping, or the response failed); the engine frees their
// blocks at its next step. It releases every request's id.
func (b *backend) abort(ts []*tracker) {
	for _, t := range ts {
		if !t.finished {
			b.e.Abort(t.id)
			t.finished = true
			b.m.success.WithLabelValues(engine.FinishAbort).Inc()
		}
		if !t.released {
			b.releaseID(t.id)
			t.released = true
		}
	}
}

// collectAll reads every request to its end. A context error means the
// client left or the server is stopping.
func (b *backend) collectAll(ctx context.Context, ts []*tracker) *apiError {
	for _, t := range ts {
		if err := t.collect(ctx); err != nil {
			if ctx.Err() != nil {
				return b.aborted()
			}
			return engineError(err)
		}
	}
	return nil
}
