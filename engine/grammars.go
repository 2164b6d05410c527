package engine

import (
	"container/list"
	"context"
	"fmt"
	"runtime"
	"sync"

	"pagoda/grammar"
)

// Structured outputs: a request's grammar (built by the caller, e.g. the server from a JSON
// schema) is bound to the vocabulary before its first step, which computes the grammar's
// start state and its token mask (grammar.CompileWarm: bounded by grammar.MaxCompileWork).
// That runs on a compile worker, never on the engine loop: as vLLM's structured-output
// manager does (status WAITING_FOR_FSM), a request whose grammar is compiling is registered
// (it can be aborted, it counts as waiting) but is not given to the scheduler until its
// grammar is ready, while every other request keeps decoding. Compiled grammars are shared
// by the requests with the same *grammar.Grammar and kept in an LRU bounded in bytes.

// grammarCacheBytes bounds the compiled grammars kept for later requests (their rules,
// interned parse stacks, state cache and masks, as each estimates them). A grammar in use
// by a live request stays alive beyond the bound; it is only no longer shared.
const grammarCacheBytes = 128 << 20

// grammarEntry is one grammar being compiled or compiled. done is closed once c or err is
// set; waiters counts the requests waiting for it (a compile nobody waits for any more is
// skipped if it has not started).
type grammarEntry struct {
	g       *grammar.Grammar
	done    chan struct{}
	c       *grammar.Compiled
	err     error
	size    int64 // bytes charged to the cache (0 until compiled)
	waiters int   // guarded by grammarCache.mu
	elem    *list.Element
}

func (ent *grammarEntry) ready() bool {
	select {
	case <-ent.done:
		return true
	default:
		return false
	}
}

// grammarCache holds the grammar entries by grammar (safe for concurrent use). Compiles run
// on at most workers goroutines at a time (half the CPUs, at least one: compiles share the
// machine with the steps).
type grammarCache struct {
	mu      sync.Mutex
	limit   int64 // bytes
	bytes   int64
	byG     map[*grammar.Grammar]*grammarEntry
	lru     list.List // of *grammarEntry, the most recently used at the front
	sem     chan struct{}
	compile func(*grammar.Grammar) (*grammar.Compiled, error)
	notify  func(*grammarEntry) // called (on the worker) when an entry is done
}

func newGrammarCache(limit int64, compile func(*grammar.Grammar) (*grammar.Compiled, error), notify func(*grammarEntry)) *grammarCache {
	return &grammarCache{limit: limit, byG: map[*grammar.Grammar]*grammarEntry{},
		sem: make(chan struct{}, max(1, runtime.GOMAXPROCS(0)/2)), compile: compile, notify: notify}
}

// acquire returns g's entry and counts one more waiter: a compiled entry (ready), or one
// being compiled (a worker was started for it when it was created).
func (gc *grammarCache) acquire(g *grammar.Grammar) *grammarEntry {
	gc.mu.Lock()
	defer gc.mu.Unlock()
	ent, ok := gc.byG[g]
	if !ok {
		ent = &grammarEntry{g: g, done: make(chan struct{})}
		gc.byG[g] = ent
		ent.elem = gc.lru.PushFront(ent)
		go gc.run(ent)
	} else {
		gc.lru.MoveToFront(ent.elem)
	}
	ent.waiters++
	return ent
}

// release drops a waiter of ent (its request got its grammar, or ended).
func (gc *grammarCache) release(ent *grammarEntry) {
	gc.mu.Lock()
	ent.waiters--
	gc.mu.Unlock()
}

// run compiles ent on a worker, unless nobody waits for it any more when its turn comes;
// then it charges the cache and evicts the least recently used entries past the limit.
func (gc *grammarCache) run(ent *grammarEntry) {
	gc.sem <- struct{}{}
	gc.mu.Lock()
	skip := ent.waiters == 0
	gc.mu.Unlock()
	if skip {
		ent.err = errGrammarAbandoned
	} else {
		ent.c, ent.err = gc.compile(ent.g)
	}
	<-gc.sem
	gc.mu.Lock()
	if ent.err == errGrammarAbandoned {
		gc.remove(ent)
	}
	close(ent.done)
	gc.mu.Unlock()
	// a compile's error is cached too: work units, not time, decide it, so the same
	// grammar would fail the same way again
	gc.charge(ent)
	if gc.notify != nil {
		gc.notify(ent)
	}
}

// errGrammarAbandoned ends a compile that every waiting request left before it started.
var errGrammarAbandoned = fmt.Errorf("the grammar's compile was abandoned: every request waiting for it ended")

// charge re-measures the compiled entries (their caches grow as masks are computed) and
// evicts the least recently used ones past the limit; ent itself is kept, even alone over
// the limit, until a newer entry pushes it out.
func (gc *grammarCache) charge(ent *grammarEntry) {
	gc.mu.Lock()
	var done []*grammarEntry
	for e := gc.lru.Front(); e != nil; e = e.Next() {
		if x := e.Value.(*grammarEntry); x.ready() {
			done = append(done, x)
		}
	}
	gc.mu.Unlock()
	sizes := make([]int64, len(done)) // measured without gc.mu: MemoryBytes takes each grammar's lock
	for i, x := range done {
		sizes[i] = entryBytes(x)
	}
	gc.mu.Lock()
	defer gc.mu.Unlock()
	for i, x := range done {
		if x.elem != nil {
			gc.bytes += sizes[i] - x.size
			x.size = sizes[i]
		}
	}
	for e := gc.lru.Back(); e != nil && gc.bytes > gc.limit; {
		prev := e.Prev()
		if x := e.Value.(*grammarEntry); x != ent && x.ready() {
			gc.remove(x)
		}
		e = prev
	}
}

// entryBytes estimates what a compiled entry holds: its grammar's rules, its interned
// stacks and its cache of states and masks.
func entryBytes(x *grammarEntry) int64 {
	n := int64(x.g.MemoryBytes()) + 256
	if x.c != nil {
		n += int64(x.c.MemoryBytes())
	}
	return n
}

// remove drops ent from the cache (gc.mu held); its requests keep using it.
func (gc *grammarCache) remove(ent *grammarEntry) {
	if ent.elem == nil {
		return
	}
	gc.lru.Remove(ent.elem)
	ent.elem = nil
	if gc.byG[ent.g] == ent {
		delete(gc.byG, ent.g)
	}
	gc.bytes -= ent.size
}

// stats are the cache's entries and bytes (tests).
func (gc *grammarCache) stats() (entries int, bytes int64) {
	gc.mu.Lock()
	defer gc.mu.Unlock()
	return gc.lru.Len(), gc.bytes
}

// compileGrammar is the compile workers' job: g bound to the engine's vocabulary, its start
// state's mask computed, within grammar.MaxCompileWork.
func (e *Engine) compileGrammar(g *grammar.Grammar) (*grammar.Compiled, error) {
	c, err := grammar.CompileWarm(g, e.grammarVocab())
	if err != nil {
		return nil, fmt.Errorf("structured output: %w", err)
	}
	return c, nil
}

// PrepareGrammar compiles g for this engine's vocabulary on a compile worker (or finds it
// compiled) and waits for it; it returns the compile's error (a grammar over a limit), or
// ctx's when ctx ends first (the compile goes on for the others waiting, and is skipped if
// nobody waits any more when its turn comes). A request added afterwards with g finds it
// ready, unless the cache dropped it meanwhile (then it waits for it again). Any goroutine.
func (e *Engine) PrepareGrammar(ctx context.Context, g *grammar.Grammar) error {
	ent := e.grammars.acquire(g)
	defer e.grammars.release(ent)
	select {
	case <-ent.done:
		return ent.err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// bindGrammar gives a new request its compiled grammar when it is ready, else the entry it
// will wait for (newRequest; any goroutine).
func (e *Engine) bindGrammar(r *request) error {
	ent := e.grammars.acquire(r.params.Grammar)
	if ent.ready() {
		e.grammars.release(ent)
		r.grammar = ent.c
		return ent.err
	}
	r.fsm = ent
	return nil
}

// waitGrammar parks an admitted request until its grammar is compiled (the loop).
func (e *Engine) waitGrammar(r *request) {
	if r.fsm.ready() { // compiled between AddRequest and now
		e.grammarReady(r)
		return
	}
	e.fsmWait[r] = struct{}{}
}

// grammarDone starts the requests waiting for ent (the loop; the compile worker sent it).
func (e *Engine) grammarDone(ent *grammarEntry) {
	for r := range e.fsmWait {
		if r.fsm == ent {
			delete(e.fsmWait, r)
			e.grammarReady(r)
		}
	}
}

// grammarReady hands r to the scheduler with its matchers, or ends it with the compile's
// error.
func (e *Engine) grammarReady(r *request) {
	ent := r.fsm
	r.fsm = nil
	e.grammars.release(ent)
	if ent.err != nil {
		e.dequeue(r)
		e.finishRequest(r, FinishAbort, ent.err)
		return
	}
	r.grammar = ent.c
	for _, st := range r.seqs {
		if !st.thinking {
			st.matcher = r.grammar.NewMatcher()
		}
	}
	e.sched.Add(r.group)
}

// unwaitGrammar forgets a request that ends while it waits for its grammar.
func (e *Engine) unwaitGrammar(r *request) {
	if r.fsm == nil {
		return
	}
	delete(e.fsmWait, r)
	e.grammars.release(r.fsm)
	r.fsm = nil
}

// onlyWaiting reports whether every live request waits for its grammar (none to schedule).
func (e *Engine) onlyWaiting() bool { return len(e.fsmWait) > 0 && len(e.reqs) == len(e.fsmWait) }
