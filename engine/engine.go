// Package engine is pagoda's LLM engine (vLLM's LLMEngine): it takes
// requests, runs the schedule → execute → process loop, and streams each
// request's outputs.
//
// One goroutine owns all engine state (scheduler, block manager, runner,
// requests): the loop started by Start, or the caller of Step when no loop
// runs. AddRequest and Abort are safe from any goroutine: they queue a
// command in the inbox, which the owner drains at the start of every step.
package engine

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"pagoda/gguf"
	"pagoda/grammar"
	"pagoda/kvcache"
	"pagoda/model"
	"pagoda/runner"
	"pagoda/sample"
	"pagoda/sched"
	"pagoda/tokenizer"
)

// Engine serves requests for one model.
type Engine struct {
	cfg    Config
	model  model.Model
	file   *gguf.File
	tok    *tokenizer.Tokenizer
	blocks *kvcache.Manager
	sched  *sched.Scheduler
	runner *runner.Runner
	wire   []byte // the step's wire form, broadcast to the other ranks

	mu      sync.Mutex
	inbox   []command
	closed  bool          // the loop stopped: no command is taken any more
	wake    chan struct{} // cap 1: the inbox changed
	nextID  atomic.Int64
	queued  atomic.Int64 // sequences of requests added but not yet scheduled
	started atomic.Bool
	stopped chan struct{} // closed when the loop returns

	vocabOnce sync.Once
	vocab     *grammar.Vocab // the tokenizer's vocabulary for grammar masks, built on first use
	grammars  *grammarCache  // grammars bound to vocab, compiled on workers (grammars.go)

	// Owned by the loop.
	reqs    map[string]*request
	fsmWait map[*request]struct{} // admitted requests waiting for their grammar's compile
	scratch sample.Scratch
	mask    []uint64  // (vocab/64) a grammar's token mask, refilled before each constrained draw
	masks   maskTimes // this step's mask computations
	stats   Stats
	snap    atomic.Pointer[Stats]
	spec    proposer  // speculative decoding's proposer; nil: off
	draft   []int32   // scratch: one sequence's proposals
	jobs    []specJob // scratch: the sequences a draft model proposes for
	onStep  func(StepInfo)

	fail failure // failure.go
}

type command struct {
	add      *request
	abort    string
	compiled *grammarEntry // a grammar's compile ended
}

// New loads the model and tokenizer and sizes the KV cache.
func New(cfg Config) (*Engine, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	e, err := load(cfg)
	if err != nil {
		if cfg.tpRanks() > 1 {
			cfg.TensorParallel.Broadcast(nil) // best effort: the other ranks stop waiting for the cache layout
		}
		return nil, err
	}
	return e, nil
}

func load(cfg Config) (*Engine, error) {
	m, f, err := model.Load(cfg.Model, cfg.loadOptions())
	if err != nil {
		return nil, err
	}
	e, err := newEngine(cfg, m, f)
	if err == nil {
		if err = e.sendLayout(e.NumBlocks()); err != nil {
			e.closeDraft()
		}
	}
	if err != nil {
		m.Close()
		return nil, err
	}
	return e, nil
}

func newEngine(cfg Config, m model.Model, f *gguf.File) (*Engine, error) {
	tok, err := tokenizer.FromGGUF(f)
	if err != nil {
		return nil, err
	}
	mc := m.Config()
	if cfg.MaxModelLen == 0 {
		cfg.MaxModelLen = mc.ContextLen
	}
	if cfg.MaxModelLen > mc.ContextLen {
		return nil, fmt.Errorf("--max-model-len %d exceeds the model's context length %d", cfg.MaxModelLen, mc.ContextLen)
	}
	if err := cfg.resolvePrefillThreshold(); err != nil {
		return nil, err
	}
	shard := mc
	shard.KVHeads /= cfg.tpRanks() // each rank holds its KV heads' cache
	numBlocks, numHost, err := cfg.cacheSizes(shard)
	if err != nil {
		return nil, err
	}
	blocks, err := kvcache.New(kvcache.Config{BlockSize: cfg.BlockSize, NumBlocks: numBlocks,
		NumHostBlocks: numHost, EnablePrefixCaching: cfg.EnablePrefixCaching, Windows: mc.KVLayout().Windows})
	if err != nil {
		return nil, err
	}
	s, err := sched.New(cfg.schedConfig(), blocks)
	if err != nil {
		return nil, err
	}
	ce, err := runner.NewCacheEngine(m, numBlocks, numHost, cfg.BlockSize, cfg.KVCacheType)
	if err != nil {
		return nil, err
	}
	table, err := cfg.bucketTable(numBlocks)
	if err != nil {
		return nil, err
	}
	e := &Engine{cfg: cfg, model: m, file: f, tok: tok, blocks: blocks, sched: s,
		runner: runner.New(m, ce, runner.Options{Buckets: table, MaxNumSeqs: cfg.MaxNumSeqs}), wake: make(chan struct{}, 1),
		stopped: make(chan struct{}), reqs: map[string]*request{}, mask: make([]uint64, (mc.VocabSize+63)/64),
		fsmWait: map[*request]struct{}{}}
	e.grammars = newGrammarCache(grammarCacheBytes, e.compileGrammar, func(ent *grammarEntry) { e.send(command{compiled: ent}) })
	switch sc := cfg.Speculative; {
	case sc == nil:
	case sc.Method == "ngram":
		e.spec = ngramProposer{min: sc.PromptLookupMin, max: sc.PromptLookupMax}
	case sc.Method == "suffix":
		e.spec = newSuffixProposer(sc)
	case sc.Method == "draft_model":
		d, err := newDraftProposer(&e.cfg, m, f, numBlocks)
		if err != nil {
			return nil, err
		}
		e.spec = d
	}
	e.publishStats()
	return e, nil
}

// grammarVocab returns the vocabulary structured outputs mask (built once,
// on first use; safe from any goroutine): every token's bytes, with the
// special tokens excluded, and the end-of-generation ids.
func (e *Engine) grammarVocab() *grammar.Vocab {
	e.vocabOnce.Do(func() {
		n := e.model.Config().VocabSize
		pieces := make([]string, n)
		for id := range min(n, e.tok.VocabSize()) {
			if !e.tok.IsSpecial(int32(id)) {
				pieces[id] = e.tok.Piece(int32(id))
			}
		}
		e.vocab = grammar.NewVocab(pieces, e.tok.EOGs())
	})
	return e.vocab
}

// Warmup captures the runner's step plans (nothing with EnforceEager).
// Call it before Start; progress, if set, is called after each run.
func (e *Engine) Warmup(progress func(done, total int)) (runner.WarmupStats, error) {
	if e.cfg.tpRanks() > 1 && e.runner.Buckets() != nil {
		return runner.WarmupStats{}, errors.New("engine: warm-up (captured plans) is not implemented with tensor parallelism; run eager")
	}
	return e.runner.Warmup(progress)
}

// Runner returns the model runner, for its plans and statistics. Only the
// owner of the engine state may use it.
func (e *Engine) Runner() *runner.Runner { return e.runner }

// Config returns the validated configuration (MaxModelLen resolved).
func (e *Engine) Config() Config { return e.cfg }

// ModelConfig returns the model's shape.
func (e *Engine) ModelConfig() model.Config { return e.model.Config() }

// Tokenizer returns the model's tokenizer (safe for concurrent use).
func (e *Engine) Tokenizer() *tokenizer.Tokenizer { return e.tok }

// NumBlocks returns the device and host KV block counts.
func (e *Engine) NumBlocks() (device, host int) {
	return e.blocks.Device().NumBlocks(), e.blocks.Host().NumBlocks()
}

// Request is one generation request.
type Request struct {
	ID           string // unique among live requests; "" assigns one
	PromptTokens []int32
	Params       SamplingParams
	Priority     int // lower runs first
	// Pooling, when set, makes it an embedding request (embed.go): its
	// prompt is pooled into RequestOutput.Embedding and nothing is
	// generated; Params are ignored.
	Pooling Pooling
}

// AddRequest validates r and queues it. The stream delivers its outputs;
// errors here are the caller's (bad parameters, prompt too long).
func (e *Engine) AddRequest(r Request) (*Stream, error) {
	if err := e.Failed(); err != nil {
		return nil, err // refused at once, also before the loop has stopped
	}
	req, err := e.newRequest(r)
	if err != nil {
		return nil, err
	}
	req.queued = int64(req.params.bestOf())
	e.queued.Add(req.queued)
	if !e.send(command{add: req}) {
		e.queued.Add(-req.queued)
		if req.fsm != nil {
			e.grammars.release(req.fsm)
		}
		if err := e.Failed(); err != nil {
			return nil, err
		}
		return nil, ErrEngineStopped
	}
	return req.stream, nil
}

// QueuedSeqs is the number of sequences (each of n/best_of counts) of the
// requests added but not yet scheduled, counted from the moment AddRequest
// returns: what an admission limit such as --max-queue bounds. Safe from
// any goroutine.
func (e *Engine) QueuedSeqs() int64 { return e.queued.Load() }

// dequeue stops counting r's sequences as queued (it was scheduled, or it
// finished before).
func (e *Engine) dequeue(r *request) {
	e.queued.Add(-r.queued)
	r.queued = 0
}

// Abort finishes the request with reason "abort" and frees its blocks. It
// does nothing for an unknown or finished request.
func (e *Engine) Abort(id string) { e.send(command{abort: id}) }

func (e *Engine) send(c command) bool {
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		return false
	}
	e.inbox = append(e.inbox, c)
	e.mu.Unlock()
	select {
	case e.wake <- struct{}{}:
	default:
	}
	return true
}

// shutdown ends the loop: it closes the inbox (later commands are refused),
// applies what was queued and ends every request with ErrEngineStopped.
func (e *Engine) shutdown() {
	e.mu.Lock()
	e.closed = true
	e.mu.Unlock()
	e.drain()
	e.stopAll()
	e.publishStats()
}

// drain applies the queued commands.
func (e *Engine) drain() {
	e.mu.Lock()
	cmds := e.inbox
	e.inbox = nil
	e.mu.Unlock()
	for _, c := range cmds {
		if c.add != nil {
			e.admit(c.add)
		} else if c.compiled != nil {
			e.grammarDone(c.compiled)
		} else {
			e.abort(c.abort)
		}
	}
}

// HasUnfinished reports whether requests are queued or running. Only the
// owner of the engine state may call it.
func (e *Engine) HasUnfinished() bool { return len(e.reqs) > 0 || e.inboxLen() > 0 }

func (e *Engine) inboxLen() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.inbox)
}

// Step runs one iteration: schedule, execute, process. Only the owner of the
// engine state may call it (not while Start's loop runs).
func (e *Engine) Step() error {
	start := time.Now()
	e.drain()
	for !e.started.Load() && e.onlyWaiting() { // the caller steps: wait for a compile to end
		<-e.wake
		e.drain()
	}
	out, err := e.schedule()
	if err != nil {
		return e.failAll(err)
	}
	bcast, err := e.broadcastStep(&out.Step)
	if err != nil {
		return e.failAll(e.fatal(err))
	}
	res, err := e.runner.Execute(&out.Step)
	if err != nil {
		return e.failAll(e.fatal(err))
	}
	touched := e.process(out, res.Logits, res.Hidden, res.Rows)
	e.publish(out, res.Stats, bcast, start)
	e.emitAll(touched)
	return nil
}

// schedule builds the next step and applies its bookkeeping: groups that
// can never run are finished, first schedulings stamped.
func (e *Engine) schedule() (*sched.Output, error) {
	e.masks = maskTimes{}
	e.propose()
	out, err := e.sched.Schedule()
	if err != nil {
		return nil, err
	}
	e.finishIgnored(out.Ignored)
	e.markScheduled(out)
	return out, nil
}

// Start runs the engine loop in a goroutine until ctx ends; then it aborts
// what is left. After Start, only the loop calls Step.
func (e *Engine) Start(ctx context.Context) {
	if !e.started.CompareAndSwap(false, true) {
		return
	}
	go e.loop(ctx)
}

func (e *Engine) loop(ctx context.Context) {
	defer close(e.stopped)
	var keepalive <-chan time.Time // idle heartbeats with the other tensor-parallel ranks
	if e.cfg.tpRanks() > 1 {
		t := time.NewTicker(e.cfg.tpHeartbeat())
		defer t.Stop()
		keepalive = t.C
	}
	for {
		if e.Failed() != nil {
			e.stopFailed()
			return
		}
		e.drain()
		if len(e.reqs) == len(e.fsmWait) { // idle, or every request waits for its grammar
			e.publishStats() // aborts while idle change the gauges too
			select {
			case <-e.wake:
				continue
			case <-keepalive:
				e.pingRanks()
				continue
			case <-ctx.Done():
				e.shutdown()
				return
			}
		}
		if ctx.Err() != nil {
			e.shutdown()
			return
		}
		_ = e.Step() // errors fail the affected requests
	}
}

// Close stops using the model. Call it after the loop's context ended (it
// waits for the loop) or when no loop was started.
func (e *Engine) Close() error {
	if e.started.Load() {
		<-e.stopped
	}
	err := e.stopRanks()
	return errors.Join(err, e.closeDraft(), e.model.Close())
}

// Generate runs prompts to completion with the same parameters, like vLLM's
// LLM.generate, and returns the outputs in prompt order. It starts the loop
// if no loop runs yet.
func (e *Engine) Generate(ctx context.Context, prompts [][]int32, p SamplingParams) ([]RequestOutput, error) {
	e.Start(ctx)
	streams := make([]*Stream, len(prompts))
	ids := make([]string, len(prompts))
	for i, pr := range prompts {
		ids[i] = e.newID()
		s, err := e.AddRequest(Request{ID: ids[i], PromptTokens: pr, Params: p})
		if err != nil {
			for _, id := range ids[:i] {
				e.Abort(id)
			}
			return nil, fmt.Errorf("prompt %d: %w", i, err)
		}
		streams[i] = s
	}
	outs := make([]RequestOutput, len(prompts))
	for i, s := range streams {
		o, err := s.Collect(ctx)
		if err != nil {
			return outs, fmt.Errorf("prompt %d: %w", i, err)
		}
		outs[i] = o
	}
	return outs, nil
}
