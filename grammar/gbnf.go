package grammar

import (
	"fmt"
	"strconv"
	"unicode/utf8"
)

// maxRepeat bounds the counts of {m,n} (large ones compile to counted repetitions).
const maxRepeat = MaxRegexRepeat

// SyntaxError is a GBNF error at a line and column (both from 1; the column counts bytes).
type SyntaxError struct {
	Line, Col int
	Msg       string
}

func (e *SyntaxError) Error() string { return fmt.Sprintf("grammar: %d:%d: %s", e.Line, e.Col, e.Msg) }

// ParseGBNF parses a grammar in llama.cpp's GBNF and compiles it; the start rule is "root".
// Rules are `name ::= alternatives`; a rule ends where the next `name ::=` begins, so rules
// may span lines. Comments run from # to the end of the line.
func ParseGBNF(src string) (*Grammar, error) {
	p := &gbnfParser{src: src}
	rules, err := p.parse()
	if err != nil {
		return nil, err
	}
	return newGrammar(rules)
}

type gbnfParser struct {
	src string
	pos int
}

func (p *gbnfParser) errAt(pos int, format string, args ...any) error {
	line, col := 1, 1
	for i := 0; i < pos && i < len(p.src); i++ {
		if p.src[i] == '\n' {
			line, col = line+1, 1
		} else {
			col++
		}
	}
	return &SyntaxError{Line: line, Col: col, Msg: fmt.Sprintf(format, args...)}
}

func (p *gbnfParser) parse() ([]rule, error) {
	var rules []rule
	seen := map[string]int{}
	for p.skip(); p.pos < len(p.src); p.skip() {
		start := p.pos
		name := p.name()
		if name == "" {
			return nil, p.errAt(p.pos, "expected a rule name, found %s", p.describe())
		}
		p.skip()
		if !p.eat("::=") {
			return nil, p.errAt(p.pos, "expected ::= after rule name %q, found %s", name, p.describe())
		}
		if _, dup := seen[name]; dup {
			return nil, p.errAt(start, "rule %q defined twice", name)
		}
		body, err := p.alternatives(0)
		if err != nil {
			return nil, err
		}
		if p.skip(); p.pos < len(p.src) && p.src[p.pos] == ')' {
			return nil, p.errAt(p.pos, "unexpected ')' without a matching (")
		}
		seen[name] = start
		rules = append(rules, ruleOf(name, body))
	}
	if len(rules) == 0 {
		return nil, p.errAt(0, "empty grammar: no rules")
	}
	return rules, nil
}

// skip skips white space (newlines included) and comments.
func (p *gbnfParser) skip() {
	for p.pos < len(p.src) {
		switch c := p.src[p.pos]; {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			p.pos++
		case c == '#':
			for p.pos < len(p.src) && p.src[p.pos] != '\n' {
				p.pos++
			}
		default:
			return
		}
	}
}

func (p *gbnfParser) eat(s string) bool {
	if len(p.src)-p.pos >= len(s) && p.src[p.pos:p.pos+len(s)] == s {
		p.pos += len(s)
		return true
	}
	return false
}

func isNameByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_'
}

func (p *gbnfParser) name() string {
	start := p.pos
	for p.pos < len(p.src) && isNameByte(p.src[p.pos]) {
		p.pos++
	}
	return p.src[start:p.pos]
}

func (p *gbnfParser) describe() string {
	if p.pos >= len(p.src) {
		return "end of input"
	}
	r, _ := utf8.DecodeRuneInString(p.src[p.pos:])
	return strconv.QuoteRune(r)
}

// atRuleStart reports whether the input continues with `name ::=`: the end of the current rule.
func (p *gbnfParser) atRuleStart() bool {
	save := p.pos
	defer func() { p.pos = save }()
	if p.name() == "" {
		return false
	}
	p.skip()
	return p.eat("::=")
}

// alternatives parses `seq | seq | ...` up to a `)` (depth > 0) or the next rule (depth 0).
func (p *gbnfParser) alternatives(depth int) (*node, error) {
	var alts []*node
	for {
		s, err := p.sequence(depth)
		if err != nil {
			return nil, err
		}
		alts = append(alts, s)
		p.skip()
		if !p.eat("|") {
			break
		}
	}
	if len(alts) == 1 {
		return alts[0], nil
	}
	return alt(alts...), nil
}

func (p *gbnfParser) sequence(depth int) (*node, error) {
	var items []*node
	for {
		p.skip()
		if p.pos >= len(p.src) {
			break
		}
		c := p.src[p.pos]
		if c == '|' || c == ')' || (isNameByte(c) && p.atRuleStart()) {
			break
		}
		x, err := p.primary(depth)
		if err != nil {
			return nil, err
		}
		if x, err = p.postfix(x); err != nil {
			return nil, err
		}
		items = append(items, x)
	}
	if len(items) == 1 {
		return items[0], nil
	}
	return seq(items...), nil
}

func (p *gbnfParser) primary(depth int) (*node, error) {
	start := p.pos
	switch c := p.src[p.pos]; {
	case c == '"':
		p.pos++
		return p.literal(start)
	case c == '[':
		p.pos++
		return p.charClass(start)
	case c == '.':
		p.pos++
		return anyChar(), nil
	case c == '(':
		p.pos++
		x, err := p.alternatives(depth + 1)
		if err != nil {
			return nil, err
		}
		p.skip()
		if !p.eat(")") {
			return nil, p.errAt(p.pos, "expected ) to close the ( at %s, found %s", p.where(start), p.describe())
		}
		return x, nil
	case isNameByte(c):
		return ref(p.name()), nil
	}
	return nil, p.errAt(p.pos, "unexpected %s", p.describe())
}

func (p *gbnfParser) where(pos int) string {
	e := p.errAt(pos, "").(*SyntaxError)
	return fmt.Sprintf("%d:%d", e.Line, e.Col)
}

func (p *gbnfParser) postfix(x *node) (*node, error) {
	for p.pos < len(p.src) {
		switch p.src[p.pos] {
		case '*':
			x = star(x)
		case '+':
			x = rep(x, 1, -1)
		case '?':
			x = opt(x)
		case '{':
			start := p.pos
			p.pos++
			lo, hi, err := p.counts(start)
			if err != nil {
				return nil, err
			}
			x = rep(x, lo, hi)
			continue
		default:
			return x, nil
		}
		p.pos++
	}
	return x, nil
}

// counts parses the rest of {m}, {m,}, {m,n} or {,n}.
func (p *gbnfParser) counts(start int) (lo, hi int, err error) {
	p.skip()
	lo, okLo := p.number()
	p.skip()
	hi = lo
	if p.eat(",") {
		p.skip()
		var okHi bool
		if hi, okHi = p.number(); !okHi {
			hi = -1
		}
		if !okLo {
			lo = 0
		}
		okLo = okLo || okHi
	}
	p.skip()
	if !okLo || !p.eat("}") {
		return 0, 0, p.errAt(p.pos, "bad repetition count at %s: want {m}, {m,}, {m,n} or {,n}", p.where(start))
	}
	if hi >= 0 && hi < lo {
		return 0, 0, p.errAt(start, "repetition {%d,%d}: maximum below minimum", lo, hi)
	}
	if lo > maxRepeat || hi > maxRepeat {
		return 0, 0, p.errAt(start, "repetition count above the limit of %d", maxRepeat)
	}
	return lo, hi, nil
}

func (p *gbnfParser) number() (int, bool) {
	start := p.pos
	for p.pos < len(p.src) && p.src[p.pos] >= '0' && p.src[p.pos] <= '9' && p.pos-start < 9 {
		p.pos++
	}
	if p.pos == start {
		return 0, false
	}
	n, _ := strconv.Atoi(p.src[start:p.pos])
	return n, true
}
