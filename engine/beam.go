package engine

import (
	"math"
	"slices"

	"pagoda/sample"
	"pagoda/sched"
)

// beamSearch is a request's beam state (vLLM's legacy beam search, run in
// the engine with forks): each step every live beam proposes its 2·width
// best continuations; the width best non-EOS candidates become the next
// beams (a beam with several survivors is forked, sharing its blocks
// copy-on-write; a beam with none is freed), and EOS candidates ranked
// within the width are set aside as finished hypotheses.
type beamSearch struct {
	width int
	hyps  []hypothesis
	top   []sample.TokenLogprob // scratch
	cands []beamCand            // scratch
}

type hypothesis struct {
	tokens   []int32 // generated tokens
	logprobs []Logprob
	cum      float64
	finish   string
}

type beamCand struct {
	parent *sched.Sequence
	id     int32
	lp     float32
	cum    float64
}

// beamStep advances the beams once every live beam has its logits row.
func (e *Engine) beamStep(r *request) {
	b := r.beam
	live := r.liveSeqs()
	for _, q := range live {
		if !r.seqs[q].hasRow {
			return // wait for the other beams (they were scheduled apart)
		}
	}
	b.cands = b.cands[:0]
	for _, q := range live {
		st := r.seqs[q]
		b.top = sample.TopLogprobs(b.top[:0], st.row, 2*b.width)
		for _, t := range b.top {
			b.cands = append(b.cands, beamCand{parent: q, id: t.ID, lp: t.Logprob, cum: st.cum + float64(t.Logprob)})
		}
		st.hasRow = false
	}
	slices.SortStableFunc(b.cands, func(x, y beamCand) int { return byCumDesc(x.cum, y.cum) })
	next := b.cands[:0:0]
	for rank, c := range b.cands {
		n := len(c.parent.Output()) + 1
		if !r.params.IgnoreEOS && e.tok.IsEOG(c.id) && n >= r.params.MinTokens {
			if rank < b.width {
				h := r.hypothesisOf(c.parent)
				h.tokens, h.cum, h.finish = append(h.tokens, c.id), c.cum, FinishStop
				h.logprobs = r.withLogprob(h.logprobs, c)
				b.hyps = append(b.hyps, h)
			}
			continue
		}
		if next = append(next, c); len(next) == b.width {
			break
		}
	}
	e.applyBeams(r, live, next)
	if b.done(r) {
		for _, q := range r.liveSeqs() {
			e.finishSeq(r, q, r.seqs[q], FinishLength, nil)
		}
	}
}

// applyBeams turns the chosen candidates into the next beams.
func (e *Engine) applyBeams(r *request, live []*sched.Sequence, next []beamCand) {
	for _, q := range live {
		var kids []beamCand
		for _, c := range next {
			if c.parent == q {
				kids = append(kids, c)
			}
		}
		st := r.seqs[q]
		if len(kids) == 0 {
			st.finish = "pruned"
			e.sched.FinishSeq(q)
			continue
		}
		for _, c := range kids[1:] {
			child, err := e.sched.Fork(r.group, q)
			if err != nil {
				e.finishRequest(r, FinishAbort, err)
				return
			}
			cs := &outputState{index: len(r.seqs), sampler: st.sampler.Clone(), stop: st.stop, detok: st.detok,
				delta: CompletionOutput{Logprobs: slices.Clone(st.delta.Logprobs)}}
			r.seqs[child] = cs
			e.beamAppend(r, child, cs, c)
		}
		e.beamAppend(r, q, st, kids[0])
	}
}

func (e *Engine) beamAppend(r *request, q *sched.Sequence, st *outputState, c beamCand) {
	q.Append(c.id)
	st.sampler.Accept(c.id)
	st.cum = c.cum
	st.delta.Logprobs = r.withLogprob(st.delta.Logprobs, c)
	e.stats.GenerationTokens++
	if len(q.Output()) >= r.params.MaxTokens || q.NumTokens() >= e.cfg.MaxModelLen {
		h := r.hypothesisOf(q)
		h.finish = FinishLength
		r.beam.hyps = append(r.beam.hyps, h)
		st.finish = FinishLength
		e.sched.FinishSeq(q)
	}
}

func (r *request) withLogprob(lps []Logprob, c beamCand) []Logprob {
	if !r.params.ReturnLogprobs {
		return lps
	}
	return append(lps, Logprob{ID: c.id, Logprob: c.lp})
}

func (r *request) hypothesisOf(q *sched.Sequence) hypothesis {
	st := r.seqs[q]
	return hypothesis{tokens: slices.Clone(q.Output()), logprobs: slices.Clone(st.delta.Logprobs), cum: st.cum}
}

// liveSeqs returns the unfinished beams in index order.
func (r *request) liveSeqs() []*sched.Sequence {
	var live []*sched.Sequence
	for _, q := range r.group.Seqs {
		if st := r.seqs[q]; st != nil && st.finish == "" {
			live = append(live, q)
		}
	}
	return live
}

// score is vLLM's beam score: cumulative logprob / length^penalty, the
// length counting the prompt and the output without a final EOS.
func (r *request) score(h hypothesis, eos bool) float64 {
	n := len(r.prompt) + len(h.tokens)
	if eos {
		n--
	}
	return h.cum / math.Pow(float64(n), r.params.LengthPenalty)
}

// done reports whether the search is over: no live beam, or width finished
// hypotheses and (early stopping, or no live beam can still beat the worst
// of the best width hypotheses at its current length).
func (b *beamSearch) done(r *request) bool {
	live := r.liveSeqs()
	if len(live) == 0 {
		return true
	}
	if len(b.hyps) < b.width {
		return false
	}
	if r.params.EarlyStopping {
		return true
	}
	scores := make([]float64, len(b.hyps))
	for i, h := range b.hyps {
		scores[i] = r.score(h, h.finish == FinishStop)
	}
	slices.Sort(scores)
	worst := scores[len(scores)-b.width]
	best := math.Inf(-1)
	for _, q := range live {
		best = max(best, r.score(hypothesis{tokens: q.Output(), cum: r.seqs[q].cum}, false))
	}
	return best <= worst
}

// beamOutputs returns the n best hypotheses by score, indexed 0..n-1. Live
// beams cut short by the end of the search are candidates too (finish length).
func (e *Engine) beamOutputs(r *request) []CompletionOutput {
	hyps := r.beam.hyps
	slices.SortStableFunc(hyps, func(a, b hypothesis) int {
		return byCumDesc(r.score(a, a.finish == FinishStop), r.score(b, b.finish == FinishStop))
	})
	n := min(r.params.N, len(hyps))
	outs := make([]CompletionOutput, n)
	for i, h := range hyps[:n] {
		ids := h.tokens
		if h.finish == FinishStop {
			ids = ids[:len(ids)-1]
		}
		text := e.tok.Decode(ids)
		if r.params.SkipSpecialTokens {
			text = e.tok.DecodeSkipSpecial(ids)
		}
		outs[i] = CompletionOutput{Index: i, Text: text, TokenIDs: h.tokens, Logprobs: h.logprobs,
			CumulativeLogprob: h.cum, FinishReason: h.finish}
	}
	return outs
}

// byCumDesc orders cumulative logprobs (or beam scores) highest first,
// equal ones (and NaN) as equal, for a stable sort.
func byCumDesc(a, b float64) int {
	switch {
	case a > b:
		return -1
	case a < b:
		return 1
	}
	return 0
}
