package engine

import (
	"fmt"
	"slices"
	"time"

	"pagoda/grammar"
	"pagoda/runner"
	"pagoda/sample"
	"pagoda/sched"
)

// process applies a step's logits: prompt logprobs, sampling, stop checks,
// detokenization, and one output delta per request that changed.
// It returns the requests with news; Step emits their deltas after the
// step's statistics are published, so a client that sees its output also
// sees the statistics that include it.
func (e *Engine) process(out *sched.Output, logits, hidden []float32, rows []runner.Rows) []*request {
	vocab, dim := e.model.Config().VocabSize, e.model.Config().Dim
	now := time.Now()
	var touched []*request
	for i, sq := range out.Seqs {
		r, ok := e.reqs[sq.Group.RequestID]
		if !ok {
			continue // finished earlier in this step (a failed fork)
		}
		rw := rows[i]
		if r.embed != nil {
			if rw.Count > 0 && e.pool(r, sq, hidden[rw.First*dim:(rw.First+rw.Count)*dim], dim) {
				touched = append(touched, r)
			}
			continue
		}
		if r.group.AllLogits && sq.NumSpec == 0 && rw.Count > 0 {
			e.promptLogprobs(r, sq, logits[rw.First*vocab:(rw.First+rw.Count)*vocab], vocab)
		}
		if !sq.Sample || rw.Count == 0 {
			continue
		}
		row := logits[(rw.First+rw.Count-1)*vocab : (rw.First+rw.Count)*vocab]
		if len(touched) == 0 || touched[len(touched)-1] != r {
			touched = append(touched, r)
		}
		if sq.NumSpec > 0 {
			e.verify(r, sq, logits[rw.First*vocab:(rw.First+rw.Count)*vocab], vocab)
			continue
		}
		if r.beam != nil {
			st := r.seqs[sq.Seq]
			st.row = append(st.row[:0], row...)
			st.hasRow = true
			continue
		}
		e.sample(r, sq.Seq, row)
	}
	e.stats.Steps++
	for _, r := range touched {
		if r.metrics.FirstToken.IsZero() {
			r.metrics.FirstToken = now
			e.stats.PromptTokens += int64(len(r.prompt)) // as vLLM counts: the whole prompt, cached or not, once
		}
		r.metrics.LastToken = now
		if r.beam != nil {
			e.beamStep(r)
		}
		if r.allFinished() {
			e.sched.Remove(r.group) // out of the running count before stats are published
		}
	}
	return touched
}

// emitAll pushes the deltas of the requests a step touched.
func (e *Engine) emitAll(touched []*request) {
	for _, r := range touched {
		e.emit(r, r.allFinished(), nil)
	}
}

// markScheduled stamps requests scheduled for the first time and records
// how much of their prompt the prefix cache served.
func (e *Engine) markScheduled(out *sched.Output) {
	now := time.Now()
	for _, sq := range out.Seqs {
		if r := e.reqs[sq.Group.RequestID]; r.metrics.FirstScheduled.IsZero() {
			r.metrics.FirstScheduled, r.cached = now, sq.Start
			e.dequeue(r)
		}
	}
}

// sample draws q's next token from row. At a request's first sample with
// best_of > 1, the other sequences are forked first: they share the
// prompt's blocks and each draws from the same row with its own seed.
func (e *Engine) sample(r *request, q *sched.Sequence, row []float32) {
	if !r.forked && r.params.bestOf() > 1 {
		r.forked = true
		for i := 1; i < r.params.bestOf(); i++ {
			c, err := e.sched.Fork(r.group, q)
			if err != nil {
				e.finishRequest(r, FinishAbort, err)
				return
			}
			r.seqs[c] = e.newOutputState(r, i)
			e.sampleOne(r, c, row)
			if _, live := e.reqs[r.id]; !live {
				return // a grammar limit ended the request
			}
		}
	}
	e.sampleOne(r, q, row)
}

func (e *Engine) sampleOne(r *request, q *sched.Sequence, row []float32) {
	st := r.seqs[q]
	if st.finish != "" {
		return
	}
	if st.matcher != nil {
		t0 := time.Now()
		err := st.matcher.TryFillMask(e.mask) // bounded: grammar.MaxStepWork
		e.masks.add(time.Since(t0))
		if err != nil {
			e.finishRequest(r, FinishAbort, fmt.Errorf("structured output: the token mask of step %d: %w", len(q.Output())+1, err))
			return
		}
		st.sampler.Allow(e.mask)
	} else if id, ok := st.think.force(&r.params); ok {
		e.forceMask(id)
		st.sampler.Allow(e.mask)
		defer st.sampler.Allow(nil)
	}
	res := st.sampler.SampleWith(&e.scratch, row)
	e.appendToken(r, q, st, res.ID, res.Logprob, res.Top)
}

// appendToken adds a token to q, records it in the delta and applies the
// stop conditions.
func (e *Engine) appendToken(r *request, q *sched.Sequence, st *outputState, id int32, lp float32, top []sample.TokenLogprob) {
	q.Append(id)
	st.sampler.Accept(id)
	st.cum += float64(lp)
	st.delta.TokenIDs = append(st.delta.TokenIDs, id)
	if r.params.ReturnLogprobs {
		st.delta.Logprobs = append(st.delta.Logprobs, Logprob{ID: id, Logprob: lp, Top: slices.Clone(top)})
	}
	st.hasDelta = true
	e.stats.GenerationTokens++
	n := len(q.Output())
	if st.matcher == nil {
		st.think.accept(&r.params, q.Output())
	}
	if n == r.params.MinTokens {
		st.sampler.Suppress(nil)
	}
	if st.matcher != nil {
		if err := st.matcher.Accept(id); err != nil {
			if grammar.IsLimit(err) {
				e.finishRequest(r, FinishAbort, fmt.Errorf("structured output: token %d: %w", id, err))
				return
			}
			e.finishSeq(r, q, st, FinishAbort, nil) // the grammar has no continuation in this vocabulary
			return
		}
	} else if st.thinking {
		startGrammar(r, q, st)
	}
	if reason, why := e.checkStop(r, q, st, id, n); reason != "" {
		e.finishSeq(r, q, st, reason, why)
	} else if st.matcher != nil && st.matcher.Terminated() {
		e.finishSeq(r, q, st, FinishStop, nil)
	}
}

// startGrammar starts the grammar of a sequence whose reasoning just ended:
// its output ends with ReasoningEnd. Every token up to here was drawn
// unconstrained; the matcher constrains the next one on.
func startGrammar(r *request, q *sched.Sequence, st *outputState) {
	out, end := q.Output(), r.params.ReasoningEnd
	if len(out) >= len(end) && slices.Equal(out[len(out)-len(end):], end) {
		st.thinking, st.matcher = false, r.grammar.NewMatcher()
	}
}

// checkStop detokenizes id and returns the finish reason, if any, in vLLM's
// order: EOS, stop token, stop string, length.
func (e *Engine) checkStop(r *request, q *sched.Sequence, st *outputState, id int32, n int) (string, any) {
	p := &r.params
	minOK := n >= p.MinTokens
	if minOK && !p.IgnoreEOS && e.tok.IsEOG(id) {
		return FinishStop, nil
	}
	if minOK && slices.Contains(p.StopTokenIDs, id) {
		if p.IncludeStopStrInOutput {
			st.delta.Text += st.detok.Add(id)
		}
		return FinishStop, id
	}
	text := st.detok.Add(id)
	if !minOK || len(p.Stop) == 0 {
		st.delta.Text += text
	} else {
		released, stopped := st.stop.Push(text)
		st.delta.Text += released
		if stopped {
			m, _ := st.stop.Match()
			return FinishStop, m.Stop
		}
	}
	if n >= p.MaxTokens || q.NumTokens() >= e.cfg.MaxModelLen {
		return FinishLength, nil
	}
	return "", nil
}

// finishSeq ends q: releases held-back text (unless a stop string matched),
// records the reason and frees q's blocks.
func (e *Engine) finishSeq(r *request, q *sched.Sequence, st *outputState, reason string, why any) {
	if _, matched := st.stop.Match(); !matched {
		released, _ := st.stop.Push(st.detok.Flush())
		st.delta.Text += released + st.stop.Flush()
	}
	st.finish, st.reason = reason, why
	st.delta.FinishReason, st.delta.StopReason = reason, why
	st.hasDelta = true
	e.sched.FinishSeq(q)
	if e.spec != nil {
		e.spec.finished(q.ID, q.Tokens, q.NumPromptTokens)
	}
}

func (r *request) allFinished() bool {
	for _, st := range r.seqs {
		if st.finish == "" {
			return false
		}
	}
	return true
}

// promptLogprobs records the logprob of each prompt token that rows (the
// logits of the chunk's positions) predict. Only the first sequence
// computes the prompt; recomputation after preemption records nothing twice.
func (e *Engine) promptLogprobs(r *request, sq sched.ScheduledSeq, rows []float32, vocab int) {
	if sq.Seq != r.group.Seqs[0] {
		return
	}
	if len(r.promptLP) == 0 {
		r.promptLP = append(r.promptLP, Logprob{ID: r.prompt[0]})
	}
	first := sq.Start + sq.NumTokens - len(rows)/vocab
	for j := range len(rows) / vocab {
		next := first + j + 1
		if next != len(r.promptLP) || next >= len(r.prompt) {
			continue
		}
		res := sample.Logprobs(rows[j*vocab:(j+1)*vocab], r.prompt[next], r.params.PromptLogprobs, nil)
		r.promptLP = append(r.promptLP, Logprob{ID: r.prompt[next], Logprob: res.Logprob, Rank: res.Rank, Top: res.Top})
	}
	if len(r.promptLP) >= len(r.prompt) {
		r.group.AllLogits = false
	}
}

// emit pushes the request's new output. Requests whose outputs are chosen
// at the end (best_of > n, beam search) stream nothing until done.
func (e *Engine) emit(r *request, done bool, err error) {
	if _, live := e.reqs[r.id]; !live {
		return
	}
	o := RequestOutput{RequestID: r.id, PromptTokenIDs: r.prompt, NumCachedTokens: r.cached,
		PromptLogprobs: r.promptLP[r.sentLP:], Finished: done, Err: err}
	r.sentLP = len(r.promptLP)
	if done && r.embed != nil {
		o.Embedding = r.embed.vec
	}
	streaming := r.beam == nil && r.params.bestOf() == r.params.N
	switch {
	case streaming:
		for _, st := range r.ordered() {
			if st.hasDelta {
				st.delta.CumulativeLogprob = st.cum
				o.Outputs = append(o.Outputs, st.delta)
				st.delta, st.hasDelta = CompletionOutput{Index: st.index}, false
			}
		}
	case done && r.beam != nil:
		o.Outputs = e.beamOutputs(r)
	case done:
		o.Outputs = r.bestOutputs()
	}
	if done {
		e.dequeue(r)
		r.metrics.Finished = time.Now()
		delete(e.reqs, r.id)
		e.sched.Remove(r.group)
	}
	o.Metrics = r.metrics
	if len(o.Outputs) > 0 || len(o.PromptLogprobs) > 0 || done {
		r.stream.push(o)
	}
}

// ordered returns the sequence states by index.
func (r *request) ordered() []*outputState {
	sts := make([]*outputState, 0, len(r.seqs))
	for _, st := range r.seqs {
		sts = append(sts, st)
	}
	slices.SortFunc(sts, func(a, b *outputState) int { return a.index - b.index })
	return sts
}

// bestOutputs returns the n sequences with the highest cumulative logprob
// (all of them when best_of = n), indexed 0..n-1. A request that ended
// before its sequences were forked (aborted while waiting or mid-prefill)
// has fewer than n: all of them are returned.
func (r *request) bestOutputs() []CompletionOutput {
	sts := r.ordered()
	if len(sts) > r.params.N {
		slices.SortStableFunc(sts, func(a, b *outputState) int { return byCumDesc(a.cum, b.cum) })
		sts = sts[:r.params.N] // len(sts) > N: never out of range
	}
	outs := make([]CompletionOutput, len(sts))
	for i, st := range sts {
		outs[i] = st.delta
		outs[i].Index, outs[i].CumulativeLogprob = i, st.cum
	}
	return outs
}
