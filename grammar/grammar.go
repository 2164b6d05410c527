package grammar

import (
	"fmt"
	"slices"
	"sync"
)

// Grammar is a compiled grammar: immutable, safe for concurrent use.
type Grammar struct {
	rules []rule
	prog  *program
	work  int64 // the work units spent building it

	astBytes int // the expression trees' memory (see MemoryBytes)
}

// newGrammar compiles rules; the start rule is "root".
func newGrammar(rules []rule) (*Grammar, error) {
	return newGrammarMeter(rules, newMeter(MaxCompileWork, compileWork))
}

// newGrammarMeter compiles rules, charging m (whose limit it reports as a *LimitError).
func newGrammarMeter(rules []rule, m *meter) (g *Grammar, err error) {
	defer catchLimit(&err)
	p, nodes, err := compileRulesCount(rules, m)
	if err != nil {
		return nil, err
	}
	return &Grammar{rules: rules, prog: p, work: m.used(), astBytes: astBytes(rules, nodes)}, nil
}

// Work is the work units building g took (see MaxCompileWork).
func (g *Grammar) Work() int64 { return g.work }

// MemoryBytes estimates the memory g holds: its rules as parsed and as compiled.
func (g *Grammar) MemoryBytes() int {
	p := g.prog
	n := 8*len(p.elems) + 24*len(p.alts) + 32*len(p.sets) + 16*len(p.counts)
	for _, a := range p.alts {
		n += 4 * cap(a)
	}
	for _, s := range p.names {
		n += 16 + len(s)
	}
	return n + g.astBytes + 128
}

// astBytes estimates the memory of the rules' expression trees (shared nodes once); nodes
// is about how many there are (the map of those seen is made that big at once).
func astBytes(rules []rule, nodes int) int {
	seen := make(map[*node]struct{}, nodes)
	n := 0
	var walk func(x *node)
	walk = func(x *node) {
		if _, ok := seen[x]; ok {
			return
		}
		seen[x] = struct{}{}
		n += 96 + len(x.s) + 4*len(x.ranges) + 8*len(x.kids)
		for _, k := range x.kids {
			walk(k)
		}
	}
	for _, r := range rules {
		n += 40 + len(r.name)
		walk(r.body)
	}
	return n
}

// String is the grammar in GBNF (for debugging; ParseGBNF reads it back).
func (g *Grammar) String() string { return formatRules(g.rules) }

// FromChoice is the grammar whose sentences are exactly the given strings.
func FromChoice(choices []string) (*Grammar, error) {
	if len(choices) == 0 {
		return nil, fmt.Errorf("grammar: choice needs at least one string")
	}
	if len(choices) > MaxChoices {
		return nil, &LimitError{Limit: "choices", Value: MaxChoices}
	}
	total := 0
	for _, s := range choices {
		total += len(s)
	}
	if total > MaxChoiceBytes {
		return nil, &LimitError{Limit: "bytes of the choices", Value: MaxChoiceBytes}
	}
	alts := make([]*node, len(choices))
	for i, s := range choices {
		alts[i] = lit(s)
	}
	body := alts[0]
	if len(alts) > 1 {
		body = alt(alts...)
	}
	return newGrammar([]rule{ruleOf("root", body)})
}

var jsonObject = sync.OnceValue(func() *Grammar {
	g, err := newGrammar(append([]rule{ruleOf("root", ref("object"))}, jsonPrimitives()...))
	if err != nil {
		panic("grammar: the built-in JSON grammar does not compile: " + err.Error())
	}
	return g
})

// JSONObject is the grammar of any JSON object (OpenAI's json_object mode), with the
// limited white space of FromJSONSchema.
func JSONObject() *Grammar { return jsonObject() }

// prune drops the alternatives that cannot match any finite string (they hold a byte set
// that is empty, or call a rule that matches nothing), so that every parse stack can be
// completed: the mask of a reachable state is never empty. It fails when root matches nothing.
func (p *program) prune() error {
	productive := p.fixpoint(func(e elem) (dead bool, dep int32) {
		switch e.kind {
		case kTerm:
			return p.sets[e.arg].empty(), -1
		case kRef:
			return false, e.arg
		case kCount:
			if cs := p.counts[e.arg]; cs.min > 0 {
				return false, cs.unit
			}
		}
		return false, -1
	})
	ok := func(a int32) bool {
		for pos := a; ; pos++ {
			switch e := p.elems[pos]; e.kind {
			case kEnd:
				return true
			case kTerm:
				if p.sets[e.arg].empty() {
					return false
				}
			case kRef:
				if !productive[e.arg] {
					return false
				}
			case kCount:
				if cs := p.counts[e.arg]; cs.min > 0 && !productive[cs.unit] {
					return false
				}
			}
		}
	}
	if !productive[p.root] {
		return fmt.Errorf("grammar: matches no string (every alternative of root needs an empty class or an endless rule)")
	}
	for r, alts := range p.alts {
		p.alts[r] = slices.DeleteFunc(alts, func(a int32) bool { return !ok(a) })
	}
	return nil
}

// checkLeftRecursion fails when a rule can call itself before consuming a byte: expansion
// would not terminate (a repetition of something that matches the empty string is one case).
func (p *program) checkLeftRecursion() error {
	nullable := p.fixpoint(func(e elem) (dead bool, dep int32) {
		switch e.kind {
		case kTerm:
			return true, -1
		case kRef:
			return false, e.arg
		case kCount:
			if cs := p.counts[e.arg]; cs.min > 0 {
				return false, cs.unit
			}
		}
		return false, -1
	})
	const (
		white = iota
		grey
		black
	)
	color := make([]uint8, len(p.alts))
	for _, cs := range p.counts {
		if nullable[cs.unit] {
			return fmt.Errorf("grammar: rule %q is repeated more than %d times but can match the empty string", p.names[cs.unit], countThreshold)
		}
	}
	var visit func(r int32) error
	visit = func(r int32) error {
		color[r] = grey
		for _, a := range p.alts[r] {
			for pos := a; p.elems[pos].kind == kRef || p.elems[pos].kind == kCount; pos++ {
				s := p.elems[pos].arg
				if p.elems[pos].kind == kCount {
					s = p.counts[s].unit
				}
				if color[s] == grey {
					return fmt.Errorf("grammar: rule %q is left-recursive (it can reach itself without consuming input; a repetition of an expression that matches the empty string does this)", p.names[s])
				}
				if color[s] == white {
					if err := visit(s); err != nil {
						return err
					}
				}
				if !nullable[s] && !(p.elems[pos].kind == kCount && p.counts[p.elems[pos].arg].min == 0) {
					break
				}
			}
		}
		color[r] = black
		return nil
	}
	for r := range p.alts {
		if color[r] == white {
			if err := visit(int32(r)); err != nil {
				return err
			}
		}
	}
	return nil
}

// nullablePrefix returns -1 when the alternative at a matches the empty string, else the
// position of its first element that cannot.
func (p *program) nullablePrefix(a int32, nullable []bool) int32 {
	for pos := a; ; pos++ {
		switch e := p.elems[pos]; e.kind {
		case kEnd:
			return -1
		case kTerm:
			return pos
		case kRef:
			if !nullable[e.arg] {
				return pos
			}
		case kCount:
			if cs := p.counts[e.arg]; cs.min > 0 && !nullable[cs.unit] {
				return pos
			}
		}
	}
}

// fixpoint is the least set of rules that have an alternative whose every element holds,
// where elem says of an element whether it never holds (dead) or holds when rule dep does
// (dep < 0: it holds). A worklist keeps it linear in the program's size (a chain of n rules
// would take n passes over the program by iterating to the fixpoint).
func (p *program) fixpoint(elemOf func(e elem) (dead bool, dep int32)) []bool {
	in := make([]bool, len(p.alts))
	var altRule, pending []int32
	users := make([][]int32, len(p.alts)) // per rule: the alternatives waiting for it (once per occurrence)
	var queue []int32
	for r, alts := range p.alts {
		for _, a := range alts {
			i := int32(len(altRule))
			altRule = append(altRule, int32(r))
			n := int32(0)
			for pos := a; p.elems[pos].kind != kEnd; pos++ {
				dead, dep := elemOf(p.elems[pos])
				if dead {
					n = -1
					break
				}
				if dep >= 0 {
					n++
					users[dep] = append(users[dep], i)
				}
			}
			pending = append(pending, n)
			if n == 0 {
				queue = append(queue, int32(r))
			}
		}
	}
	for len(queue) > 0 {
		r := queue[len(queue)-1]
		queue = queue[:len(queue)-1]
		if in[r] {
			continue
		}
		in[r] = true
		for _, i := range users[r] {
			if pending[i] > 0 {
				if pending[i]--; pending[i] == 0 {
					queue = append(queue, altRule[i])
				}
			}
		}
	}
	return in
}
