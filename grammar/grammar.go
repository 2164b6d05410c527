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
}

// newGrammar compiles rules; the start rule is "root".
func newGrammar(rules []rule) (*Grammar, error) {
	p, err := compileRules(rules)
	if err != nil {
		return nil, err
	}
	return &Grammar{rules: rules, prog: p}, nil
}

// String is the grammar in GBNF (for debugging; ParseGBNF reads it back).
func (g *Grammar) String() string { return formatRules(g.rules) }

// FromChoice is the grammar whose sentences are exactly the given strings.
func FromChoice(choices []string) (*Grammar, error) {
	if len(choices) == 0 {
		return nil, fmt.Errorf("grammar: choice needs at least one string")
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
	productive := make([]bool, len(p.alts))
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
	for changed := true; changed; {
		changed = false
		for r, alts := range p.alts {
			if !productive[r] && slices.ContainsFunc(alts, ok) {
				productive[r], changed = true, true
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
	nullable := make([]bool, len(p.alts))
	for changed := true; changed; {
		changed = false
		for r, alts := range p.alts {
			if nullable[r] {
				continue
			}
			for _, a := range alts {
				if p.nullablePrefix(a, nullable) < 0 {
					nullable[r], changed = true, true
					break
				}
			}
		}
	}
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
