package grammar

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// nodeKind is the kind of a grammar expression.
type nodeKind uint8

const (
	nLit   nodeKind = iota // the bytes of s (UTF-8 text)
	nClass                 // one code point in ranges (or not in them when neg)
	nRef                   // the rule named s
	nSeq                   // kids one after another (empty: ε)
	nAlt                   // one of kids
	nRep                   // kids[0] repeated min..max times (max < 0: unbounded)
)

// node is an expression of a rule body. ranges of a class are pairs lo, hi (inclusive), in any
// order; a negated class with no ranges is any code point (GBNF's `.`).
type node struct {
	kind     nodeKind
	s        string
	neg      bool
	ranges   []rune
	kids     []*node
	min, max int
}

// rule is a named rule of a grammar.
type rule struct {
	name string
	body *node
}

func lit(s string) *node               { return &node{kind: nLit, s: s} }
func ref(name string) *node            { return &node{kind: nRef, s: name} }
func seq(kids ...*node) *node          { return &node{kind: nSeq, kids: kids} }
func alt(kids ...*node) *node          { return &node{kind: nAlt, kids: kids} }
func rep(x *node, min, max int) *node  { return &node{kind: nRep, kids: []*node{x}, min: min, max: max} }
func opt(x *node) *node                { return rep(x, 0, 1) }
func star(x *node) *node               { return rep(x, 0, -1) }
func class(neg bool, r ...rune) *node  { return &node{kind: nClass, neg: neg, ranges: r} }
func anyChar() *node                   { return &node{kind: nClass, neg: true} }
func charSet(s string) *node           { return &node{kind: nClass, ranges: pairsOf(s)} }
func nonEmpty(n *node) bool            { return !(n.kind == nSeq && len(n.kids) == 0) }
func ruleOf(name string, b *node) rule { return rule{name: name, body: b} }
func empty() *node                     { return seq() }
func pairsOf(s string) (r []rune) {
	for _, c := range s {
		r = append(r, c, c)
	}
	return r
}

// formatRules writes rules in GBNF, one a line.
func formatRules(rules []rule) string {
	var b strings.Builder
	for _, r := range rules {
		b.WriteString(r.name)
		b.WriteString(" ::= ")
		writeNode(&b, r.body, 0)
		b.WriteByte('\n')
	}
	return b.String()
}

// writeNode writes n in GBNF; prec is the binding of the context (0 alternation, 1 sequence,
// 2 repetition operand), which decides the parentheses.
func writeNode(b *strings.Builder, n *node, prec int) {
	switch n.kind {
	case nLit:
		b.WriteByte('"')
		for _, c := range n.s {
			writeEscaped(b, c, '"')
		}
		b.WriteByte('"')
	case nClass:
		writeClass(b, n)
	case nRef:
		b.WriteString(n.s)
	case nSeq:
		if len(n.kids) == 0 {
			b.WriteString(`""`)
			return
		}
		writeJoined(b, n.kids, " ", 1, prec > 1 && len(n.kids) > 1)
	case nAlt:
		writeJoined(b, n.kids, " | ", 0, prec > 0)
	case nRep:
		writeNode(b, n.kids[0], 2)
		writeCount(b, n.min, n.max)
	}
}

func writeClass(b *strings.Builder, n *node) {
	if n.neg && len(n.ranges) == 0 {
		b.WriteByte('.')
		return
	}
	b.WriteByte('[')
	if n.neg {
		b.WriteByte('^')
	}
	for i := 0; i+1 < len(n.ranges); i += 2 {
		writeEscaped(b, n.ranges[i], ']')
		if n.ranges[i+1] != n.ranges[i] {
			b.WriteByte('-')
			writeEscaped(b, n.ranges[i+1], ']')
		}
	}
	b.WriteByte(']')
}

func writeCount(b *strings.Builder, min, max int) {
	switch {
	case min == 0 && max == 1:
		b.WriteByte('?')
	case min == 0 && max < 0:
		b.WriteByte('*')
	case min == 1 && max < 0:
		b.WriteByte('+')
	case max < 0:
		fmt.Fprintf(b, "{%d,}", min)
	case min == max:
		fmt.Fprintf(b, "{%d}", min)
	default:
		fmt.Fprintf(b, "{%d,%d}", min, max)
	}
}

// writeJoined writes kids at precedence prec separated by sep, in
// parentheses when paren.
func writeJoined(b *strings.Builder, kids []*node, sep string, prec int, paren bool) {
	if paren {
		b.WriteByte('(')
	}
	for i, k := range kids {
		if i > 0 {
			b.WriteString(sep)
		}
		writeNode(b, k, prec)
	}
	if paren {
		b.WriteByte(')')
	}
}

// writeEscaped writes c as GBNF escapes it inside a literal (quote '"') or a class (quote ']').
func writeEscaped(b *strings.Builder, c rune, quote rune) {
	switch {
	case c == '\n':
		b.WriteString(`\n`)
	case c == '\t':
		b.WriteString(`\t`)
	case c == '\r':
		b.WriteString(`\r`)
	case c == '\\' || c == quote || (quote == ']' && (c == '-' || c == '^' || c == '[')):
		b.WriteByte('\\')
		b.WriteRune(c)
	case c < 0x20 || c == 0x7f:
		fmt.Fprintf(b, `\x%02X`, c)
	case c > utf8.MaxRune || (c >= 0xD800 && c <= 0xDFFF):
		fmt.Fprintf(b, `\U%08X`, c)
	default:
		b.WriteRune(c)
	}
}
