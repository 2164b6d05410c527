package engine

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"pagoda/grammar"
	"pagoda/internal/testmodel"
)

// heavyChoice is a grammar of the largest choice allowed: compiling it (its start state and
// first mask) is the most a choice costs.
func heavyChoice(t *testing.T) (*grammar.Grammar, []string) {
	t.Helper()
	cs := make([]string, grammar.MaxChoices)
	for i := range cs {
		cs[i] = fmt.Sprintf("answer %05d", i)
	}
	g, err := grammar.FromChoice(cs)
	if err != nil {
		t.Fatal(err)
	}
	return g, cs
}

// gateCompiles makes e's grammar compiles wait for the returned function to be called.
func gateCompiles(e *Engine) (release func()) {
	gate := make(chan struct{})
	compile := e.grammars.compile
	e.grammars.compile = func(g *grammar.Grammar) (*grammar.Compiled, error) {
		<-gate
		return compile(g)
	}
	return func() { close(gate) }
}

// stepUntil steps e (no loop runs) until done reports true, and returns the steps taken.
func stepUntil(t *testing.T, e *Engine, done func() bool) int {
	t.Helper()
	n := 0
	for !done() {
		if n++; n > 10000 {
			t.Fatal("the engine did not finish")
		}
		if err := e.Step(); err != nil {
			t.Fatal(err)
		}
	}
	return n
}

// A request whose grammar is compiling waits in its own state (not scheduled, counted as
// waiting) while a bystander's greedy request runs with its usual number of steps and its
// usual tokens; once compiled, the request runs and its output is one of the choices.
func TestGrammarCompilesOffTheLoop(t *testing.T) {
	ref := readReference(t, testmodel.SmolReference(t))
	c := ref.Cases[0]
	e := newTestEngine(t, testmodel.Default(t), nil)
	by := GreedyParams(16)
	by.IgnoreEOS = true
	live := func(id string) func() bool { // done: admitted and finished
		return func() bool { _, ok := e.reqs[id]; return !ok && e.inboxLen() == 0 }
	}

	s, err := e.AddRequest(Request{ID: "alone", PromptTokens: c.PromptTokens, Params: by})
	if err != nil {
		t.Fatal(err)
	}
	usual := stepUntil(t, e, live("alone"))
	alone, _ := s.Collect(context.Background())

	release := gateCompiles(e)
	g, choices := heavyChoice(t)
	p := GreedyParams(16)
	p.Grammar = g
	gs, err := e.AddRequest(Request{ID: "constrained", PromptTokens: c.PromptTokens, Params: p})
	if err != nil {
		t.Fatal(err)
	}
	s, err = e.AddRequest(Request{ID: "bystander", PromptTokens: c.PromptTokens, Params: by})
	if err != nil {
		t.Fatal(err)
	}
	steps := stepUntil(t, e, live("bystander"))
	if len(e.fsmWait) != 1 || e.Stats().Waiting != 1 || e.sched.HasUnfinished() {
		t.Fatalf("the constrained request is not waiting for its grammar: %d waiting, stats %+v", len(e.fsmWait), e.Stats())
	}
	beside, _ := s.Collect(context.Background())
	if steps != usual || !slices.Equal(beside.Outputs[0].TokenIDs, alone.Outputs[0].TokenIDs) {
		t.Fatalf("beside a compiling grammar: %d steps, %v; alone: %d steps, %v", steps, beside.Outputs[0].TokenIDs, usual, alone.Outputs[0].TokenIDs)
	}
	if o, err := gs.Recv(expired()); err == nil {
		t.Fatalf("the waiting request produced %+v", o)
	}

	release()
	stepUntil(t, e, live("constrained")) // Step waits for the compile, then runs it
	out, err := gs.Collect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if got := out.Outputs[0]; !slices.Contains(choices, got.Text) || got.FinishReason != FinishStop {
		t.Fatalf("constrained output %q (%s), want one of the choices", got.Text, got.FinishReason)
	}
	if out.Metrics.FirstScheduled.IsZero() || out.Metrics.FirstScheduled.Before(beside.Metrics.Finished) {
		t.Fatalf("scheduled at %v, before its grammar was ready (the bystander finished at %v)", out.Metrics.FirstScheduled, beside.Metrics.Finished)
	}
	checkNoLeaks(t, e)
}

// expired is a context that has already ended (a non-blocking Recv).
func expired() context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return ctx
}

// A client that leaves while its grammar waits to compile costs nothing: the request ends at
// once, nothing leaks, and the compile nobody waits for any more is skipped.
func TestGrammarAbortWhileCompiling(t *testing.T) {
	e := newTestEngine(t, testmodel.Stories(t), nil)
	for range cap(e.grammars.sem) { // every compile worker busy
		e.grammars.sem <- struct{}{}
	}
	g, _ := heavyChoice(t)
	p := GreedyParams(8)
	p.Grammar = g
	s, err := e.AddRequest(Request{ID: "leaves", PromptTokens: []int32{1, 2, 3}, Params: p})
	if err != nil {
		t.Fatal(err)
	}
	e.drain()
	if len(e.fsmWait) != 1 || e.QueuedSeqs() != 1 {
		t.Fatalf("%d waiting for a grammar, %d queued", len(e.fsmWait), e.QueuedSeqs())
	}
	e.Abort("leaves")
	e.drain()
	out, err := s.Collect(context.Background())
	if err != nil || !out.Finished || out.Outputs[0].FinishReason != FinishAbort {
		t.Fatalf("%+v, %v", out, err)
	}
	if len(e.fsmWait) != 0 || len(e.reqs) != 0 || e.QueuedSeqs() != 0 {
		t.Fatalf("after the abort: %d waiting, %d live, %d queued", len(e.fsmWait), len(e.reqs), e.QueuedSeqs())
	}
	e.grammars.mu.Lock()
	ent := e.grammars.byG[g]
	e.grammars.mu.Unlock()
	for range cap(e.grammars.sem) {
		<-e.grammars.sem
	}
	<-ent.done
	if ent.err != errGrammarAbandoned || ent.c != nil {
		t.Fatalf("the abandoned compile ran: %v", ent.err)
	}
	if n, _ := e.grammars.stats(); n != 0 {
		t.Fatalf("%d grammars cached after an abandoned compile", n)
	}
	e.drain() // the compile's notice finds nobody waiting
	checkNoLeaks(t, e)
}

// Compiled grammars are cached within a bound in bytes (the least recently used dropped
// first); a grammar over the compile limit is refused with a LimitError, before any step
// for a request that asks for it, and the refusal is cached (work units decide it).
func TestGrammarCacheAndLimits(t *testing.T) {
	e := newTestEngine(t, testmodel.Stories(t), nil)
	const limit = 100_000
	e.grammars.limit = limit
	largest := int64(0)
	for i := range 60 {
		g, err := grammar.FromRegex(fmt.Sprintf("(%d|[a-z]{1,%d})+ end", i, 3+i%5))
		if err != nil {
			t.Fatal(err)
		}
		if err := e.PrepareGrammar(context.Background(), g); err != nil {
			t.Fatal(err)
		}
		e.grammars.mu.Lock()
		if ent := e.grammars.byG[g]; ent != nil {
			largest = max(largest, ent.size)
		}
		e.grammars.mu.Unlock()
	}
	n, bytes := e.grammars.stats()
	if bytes > limit+largest || n >= 60 || n == 0 {
		t.Fatalf("%d grammars cached in %d bytes (limit %d, largest %d)", n, bytes, limit, largest)
	}

	var b strings.Builder
	b.WriteString("root ::= r12\nr0 ::= \"a\" | \"b\"\n")
	for i := 1; i <= 12; i++ {
		fmt.Fprintf(&b, "r%d ::= r%d | r%d \"x\" | r%d r%d\n", i, i-1, i-1, i-1, i-1)
	}
	g, err := grammar.ParseGBNF(b.String())
	if err != nil {
		t.Fatal(err)
	}
	err = e.PrepareGrammar(context.Background(), g)
	if !grammar.IsLimit(err) || !strings.Contains(err.Error(), fmt.Sprint(grammar.MaxCompileWork)) {
		t.Fatalf("exponential GBNF: %v, want the compile work limit", err)
	}
	p := GreedyParams(4)
	p.Grammar = g
	if _, err := e.AddRequest(Request{PromptTokens: []int32{1, 2}, Params: p}); !grammar.IsLimit(err) {
		t.Fatalf("AddRequest with a refused grammar: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Millisecond)
	defer cancel()
	if err := e.PrepareGrammar(ctx, g); !grammar.IsLimit(err) {
		t.Fatalf("the refusal is not cached: %v", err)
	}
}

// A sequence whose token mask would exceed grammar.MaxStepWork on a step is finished with an
// error naming the limit, and the other requests of the batch go on.
func TestGrammarStepLimitFinishesTheSequence(t *testing.T) {
	ref := readReference(t, testmodel.SmolReference(t))
	c := ref.Cases[0]
	e := newTestEngine(t, testmodel.Default(t), nil)
	var b strings.Builder
	b.WriteString("root ::= \"\\x7f\\x7f\\x7f\\x7f\" r14\nr0 ::= \"a\" | \"b\"\n")
	for i := 1; i <= 14; i++ {
		fmt.Fprintf(&b, "r%d ::= r%d | r%d \"x\" | r%d r%d\n", i, i-1, i-1, i-1, i-1)
	}
	g, err := grammar.ParseGBNF(b.String())
	if err != nil {
		t.Fatal(err)
	}
	p := GreedyParams(16)
	p.Grammar = g
	by := GreedyParams(12)
	by.IgnoreEOS = true
	alone := runAll(t, e, []Request{{PromptTokens: c.PromptTokens, Params: by}})[0].Outputs[0].TokenIDs
	sc, err := e.AddRequest(Request{PromptTokens: c.PromptTokens, Params: p})
	if err != nil {
		t.Fatal(err)
	}
	sb, err := e.AddRequest(Request{PromptTokens: c.PromptTokens, Params: by})
	if err != nil {
		t.Fatal(err)
	}
	stepUntil(t, e, func() bool { return !e.HasUnfinished() })
	out, err := sc.Collect(context.Background())
	if !grammar.IsLimit(err) || !strings.Contains(err.Error(), "work units of one step") || !out.Finished {
		t.Fatalf("constrained: %v (%+v), want the step work limit", err, out)
	}
	bo, err := sb.Collect(context.Background())
	if got := bo.Outputs[0].TokenIDs; err != nil || !slices.Equal(got, alone) {
		t.Fatalf("bystander: %v %v, want %v as alone", got, err, alone)
	}
	checkNoLeaks(t, e)
}
