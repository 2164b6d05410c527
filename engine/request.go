package engine

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"pagoda/grammar"
	"pagoda/sample"
	"pagoda/sched"
	"pagoda/tokenizer"
)

// request is the engine's state of one request; owned by the loop.
type request struct {
	id       string
	params   SamplingParams
	prompt   []int32
	stream   *Stream
	group    *sched.Group
	seqs     map[*sched.Sequence]*outputState
	maxLen   int  // prompt + max tokens
	forked   bool // parallel samples were forked from the first sequence
	beam     *beamSearch
	metrics  Metrics
	cached   int
	promptLP []Logprob          // prompt logprobs computed so far (entry 0 empty)
	sentLP   int                // prompt logprobs already streamed
	suppress []int32            // EOS and stop tokens, suppressed before min_tokens
	stops    *tokenizer.StopSet // the stop strings' automaton, shared by the sequences
	queued   int64              // sequences counted in Engine.queued (0 once scheduled or finished)
	grammar  *grammar.Compiled  // the output constraint bound to the vocabulary; nil: none (or still compiling)
	fsm      *grammarEntry      // the grammar being compiled, which the request waits for (grammars.go); nil: none
	embed    *embedState        // an embedding request (embed.go); nil: generation
}

// outputState is one sequence's sampling, grammar and detokenization state: what turns its
// logits into tokens and its tokens into text (the block table is kvcache's).
type outputState struct {
	index    int
	sampler  *sample.Sampler
	detok    *tokenizer.Detokenizer
	stop     *tokenizer.StopMatcher
	cum      float64
	finish   string
	reason   any
	row      []float32 // last logits row, kept for beam search until all beams have one
	hasRow   bool
	text     strings.Builder  // all released text (for non-streamed outputs)
	matcher  *grammar.Matcher // the sequence's position in the request's grammar; nil: none (or not started)
	thinking bool             // the grammar waits for the output to end with params.ReasoningEnd
	think    thinkingBudget   // the count against params.ThinkingBudget
	delta    CompletionOutput
	hasDelta bool
	prop     proposerState // speculative decoding's state of the sequence
}

// ErrPromptTooLong refuses a prompt that leaves no room within the model length.
var ErrPromptTooLong = errors.New("prompt too long")

func (e *Engine) newID() string { return "req-" + strconv.FormatInt(e.nextID.Add(1), 10) }

// newRequest validates r; it reads only immutable engine state.
func (e *Engine) newRequest(r Request) (*request, error) {
	if r.Pooling != "" {
		return e.newEmbedRequest(r)
	}
	if e.model.Config().Embedding {
		return nil, ErrEmbeddingModel
	}
	vocab := e.model.Config().VocabSize
	p := r.Params
	if err := p.Validate(vocab); err != nil {
		return nil, err
	}
	if len(r.PromptTokens) == 0 {
		return nil, fmt.Errorf("prompt must contain at least one token")
	}
	for _, id := range r.PromptTokens {
		if id < 0 || int(id) >= vocab {
			return nil, fmt.Errorf("prompt token id %d is out of range [0, %d)", id, vocab)
		}
	}
	n, limit := len(r.PromptTokens), e.cfg.MaxModelLen
	if p.MaxTokens == 0 {
		if n >= limit {
			return nil, fmt.Errorf("%w: the prompt has %d tokens and the model's maximum length is %d", ErrPromptTooLong, n, limit)
		}
		p.MaxTokens = limit - n
	} else if p.MaxTokens > limit-n { // not n+MaxTokens: it overflows for huge max_tokens
		return nil, fmt.Errorf("%w: prompt (%d tokens) + max_tokens (%d) exceeds the model's maximum length %d",
			ErrPromptTooLong, n, p.MaxTokens, limit)
	}
	id := r.ID
	if id == "" {
		id = e.newID()
	}
	req := &request{id: id, params: p, prompt: slices.Clone(r.PromptTokens), stream: newStream(),
		seqs: map[*sched.Sequence]*outputState{}, maxLen: n + p.MaxTokens, stops: tokenizer.NewStopSet(p.Stop)}
	req.metrics.Arrival = time.Now()
	if !p.IgnoreEOS {
		req.suppress = append(req.suppress, e.tok.EOGs()...)
	}
	req.suppress = append(req.suppress, p.StopTokenIDs...)
	seq := &sched.Sequence{Tokens: slices.Clone(r.PromptTokens), NumPromptTokens: n}
	req.group = &sched.Group{RequestID: id, Priority: r.Priority, Seqs: []*sched.Sequence{seq},
		MaxSeqs: p.bestOf(), AllLogits: p.PromptLogprobs >= 0}
	if p.UseBeamSearch {
		req.beam = &beamSearch{width: p.bestOf()}
	}
	if p.Grammar != nil {
		if err := e.bindGrammar(req); err != nil {
			return nil, err
		}
	}
	req.seqs[seq] = e.newOutputState(req, 0)
	return req, nil
}

func (e *Engine) newOutputState(r *request, index int) *outputState {
	p := r.params
	st := &outputState{index: index, sampler: sample.New(p.Params.Child(index), r.prompt),
		detok: e.tok.NewDetokenizer(tokenizer.DetokenizerOptions{SkipSpecial: p.SkipSpecialTokens, Prompt: r.prompt}),
		stop:  r.stops.Matcher(p.IncludeStopStrInOutput)}
	st.delta.Index = index
	st.think = newThinkingBudget(&p)
	switch {
	case p.Grammar != nil && len(p.ReasoningEnd) > 0:
		st.thinking = true // startGrammar creates the matcher after the reasoning
	case r.grammar != nil:
		st.matcher = r.grammar.NewMatcher()
	}
	if !p.needsScores() {
		st.sampler.SkipScores()
	}
	if p.MinTokens > 0 {
		st.sampler.Suppress(r.suppress)
	}
	return st
}

// admit hands a new request to the scheduler (or refuses a duplicate id).
func (e *Engine) admit(r *request) {
	if _, dup := e.reqs[r.id]; dup {
		e.dequeue(r)
		r.stream.push(RequestOutput{RequestID: r.id, Finished: true,
			Err: fmt.Errorf("request id %q is already in use", r.id)})
		return
	}
	e.reqs[r.id] = r
	if r.fsm != nil {
		e.waitGrammar(r) // scheduled once its grammar is compiled
		return
	}
	e.sched.Add(r.group)
}

func (e *Engine) abort(id string) {
	r, ok := e.reqs[id]
	if !ok {
		return
	}
	e.sched.Abort(id)
	e.finishRequest(r, FinishAbort, nil)
}

// ErrEngineStopped ends the requests still live when the engine loop stops
// (shutdown), and refuses requests added after it stopped.
var ErrEngineStopped = errors.New("the engine stopped (the server is shutting down)")

// stopAll ends every live request with ErrEngineStopped.
func (e *Engine) stopAll() {
	for id, r := range e.reqs {
		e.sched.Abort(id)
		e.finishRequest(r, FinishAbort, ErrEngineStopped)
	}
}

// finishIgnored ends groups the scheduler dropped because they cannot fit.
func (e *Engine) finishIgnored(groups []*sched.Group) {
	for _, g := range groups {
		if r, ok := e.reqs[g.RequestID]; ok {
			e.finishRequest(r, FinishAbort, fmt.Errorf("%w (%d blocks of %d tokens)", sched.ErrCacheTooSmall,
				e.blocks.Device().NumBlocks(), e.cfg.BlockSize))
		}
	}
}

// failAll ends every request with err after a step failed, freeing their
// blocks, and returns err. The step's blocks were registered in the prefix
// cache but never computed, so the cache is reset.
func (e *Engine) failAll(err error) error {
	for id, r := range e.reqs {
		e.sched.Abort(id)
		if errors.Is(err, ErrEngineFailed) { // already says what failed
			e.finishRequest(r, FinishAbort, err)
			continue
		}
		e.finishRequest(r, FinishAbort, fmt.Errorf("engine step failed: %w", err))
	}
	e.blocks.ResetPrefixCache()
	return err
}

// finishRequest marks every unfinished sequence finished with reason and
// pushes the final output. The scheduler must already have released (or
// be about to release) the group's blocks.
func (e *Engine) finishRequest(r *request, reason string, err error) {
	e.unwaitGrammar(r)
	for q, st := range r.seqs {
		if st.finish == "" {
			e.finishSeq(r, q, st, reason, nil)
		}
	}
	e.emit(r, true, err)
}
