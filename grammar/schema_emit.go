package grammar

import (
	"strconv"
	"strings"
)

// emitter turns normalized schemas into grammar rules. Every value rule ends with space
// (white space after each JSON token, see jsonPrimitives). A reference becomes one rule,
// emitted once (after the schema that first met it), so recursive schemas are recursive
// rules.
type emitter struct {
	c     *conv
	rules []rule
	names map[string]bool
	next  map[string]int // per hint: the next suffix to try
	queue []*schDef
}

func newEmitter(c *conv) *emitter {
	e := &emitter{c: c, names: map[string]bool{}, next: map[string]int{}}
	for _, r := range jsonPrimitives() {
		e.names[r.name] = true
	}
	return e
}

// program emits root as the rule root, then the references it needs.
func (e *emitter) program(root *sch) ([]rule, error) {
	e.names["root"] = true
	body, err := e.emit(root, "root")
	if err != nil {
		return nil, err
	}
	rules := []rule{ruleOf("root", body)}
	for i := 0; i < len(e.queue); i++ {
		d := e.queue[i]
		s, err := e.c.expand(d)
		if err != nil {
			return nil, err
		}
		b, err := e.emit(s, d.rule)
		if err != nil {
			return nil, err
		}
		e.rules = append(e.rules, ruleOf(d.rule, b))
	}
	return append(append(rules, e.rules...), jsonPrimitives()...), nil
}

// newRule adds a rule named after hint (made unique) and returns a reference to it.
func (e *emitter) newRule(hint string, body *node) *node {
	name := e.uniqueName(hint)
	e.rules = append(e.rules, ruleOf(name, body))
	return ref(name)
}

func (e *emitter) uniqueName(hint string) string {
	if len(hint) > 60 {
		hint = hint[:60]
	}
	b := []byte(hint)
	for i, ch := range b {
		if !isNameByte(ch) || ch == '_' {
			b[i] = '-'
		}
	}
	base := string(b)
	name := base
	for e.names[name] {
		e.next[base]++
		name = base + strconv.Itoa(e.next[base])
	}
	e.names[name] = true
	return name
}

// emit is the grammar of the values s accepts (hint names the rules it makes).
func (e *emitter) emit(s *sch, hint string) (*node, error) {
	if err := e.c.spend(1); err != nil {
		return nil, err
	}
	switch s.kind {
	case sAny:
		return ref("value"), nil
	case sNone:
		return class(false), nil
	case sNull:
		return ref("null"), nil
	case sBool:
		return ref("boolean"), nil
	case sLit:
		alts := make([]*node, len(s.lits))
		for i, v := range s.lits {
			alts[i] = literal(v)
		}
		if len(alts) == 1 {
			return alts[0], nil
		}
		return alt(alts...), nil
	case sUnion:
		alts := make([]*node, 0, len(s.alts))
		for i, a := range s.alts {
			n, err := e.emit(a, hint+"-"+strconv.Itoa(i))
			if err != nil {
				return nil, err
			}
			alts = append(alts, n)
		}
		return alt(alts...), nil
	case sRef:
		d := s.def
		if d.rule == "" {
			d.rule = e.uniqueName(refHint(d.path))
			e.queue = append(e.queue, d)
		}
		return ref(d.rule), nil
	case sNum:
		return e.number(s.num, hint)
	case sStr:
		return e.str(s.str, hint)
	case sArr:
		return e.array(s.arr, hint)
	case sObj:
		return e.object(s.obj, hint)
	}
	return ref("value"), nil
}

// refHint names a reference's rule after the last part of its path.
func refHint(path string) string {
	if i := strings.LastIndexAny(path, "/#"); i >= 0 && i+1 < len(path) {
		return "ref-" + path[i+1:]
	}
	return "ref"
}

// literal is the grammar of the JSON value v with white space where JSON allows it (an
// object's keys in v's order); numbers are spelled as given or in their shortest decimal
// form with trailing fraction zeros allowed (1, 1.0 and 1.00 are the same number).
func literal(v *jvalue) *node {
	switch v.kind {
	case 'o':
		parts := []*node{lit("{"), ref("space")}
		for i, k := range v.keys {
			if i > 0 {
				parts = append(parts, lit(","), ref("space"))
			}
			parts = append(parts, lit(jsonQuote(k)), ref("space"), lit(":"), ref("space"), literal(v.vals[i]))
		}
		return seq(append(parts, lit("}"), ref("space"))...)
	case 'a':
		parts := []*node{lit("["), ref("space")}
		for i, x := range v.vals {
			if i > 0 {
				parts = append(parts, lit(","), ref("space"))
			}
			parts = append(parts, literal(x))
		}
		return seq(append(parts, lit("]"), ref("space"))...)
	case 'n':
		spell := lit(v.str)
		if r, ok := ratOf(v); ok {
			if canon := ratString(r); canon != "" && len(canon) <= 40 {
				zeros := rep(lit("0"), 0, maxDigits)
				if r.IsInt() {
					zeros = opt(seq(lit("."), rep(lit("0"), 1, maxDigits)))
				}
				spell = alt(spell, seq(lit(canon), zeros))
			}
		}
		return seq(spell, ref("space"))
	}
	return seq(lit(v.String()), ref("space"))
}
