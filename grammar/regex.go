package grammar

import (
	"fmt"
	"regexp/syntax"
	"unicode"
)

// FromRegex is the grammar of the texts the regular expression (Go's Perl syntax) matches
// whole. Anchors ^ and $ (and \A, \z) may stand only at the ends, where they change nothing;
// word boundaries are an error (Go's syntax has no backreferences or lookaround).
func FromRegex(pattern string) (*Grammar, error) {
	n, err := regexNode(pattern, false)
	if err != nil {
		return nil, err
	}
	return newGrammar([]rule{ruleOf("root", n)})
}

// regexNode translates pattern; when inJSON, into the content of a JSON string whose decoded
// value the pattern matches whole (characters that JSON must escape appear escaped).
func regexNode(pattern string, inJSON bool) (*node, error) {
	re, err := syntax.Parse(pattern, syntax.Perl)
	if err != nil {
		return nil, fmt.Errorf("grammar: regex %q: %w", pattern, err)
	}
	t := regexTranslator{inJSON: inJSON, pattern: pattern}
	return t.node(re, true, true)
}

type regexTranslator struct {
	inJSON  bool
	pattern string
}

func (t regexTranslator) unsupported(what string) error {
	return fmt.Errorf("grammar: regex %q: %s is not supported", t.pattern, what)
}

// node translates re; atStart and atEnd say whether re begins or ends the whole pattern (where
// anchors are allowed).
func (t regexTranslator) node(re *syntax.Regexp, atStart, atEnd bool) (*node, error) {
	switch re.Op {
	case syntax.OpNoMatch:
		return class(false), nil
	case syntax.OpEmptyMatch:
		return empty(), nil
	case syntax.OpLiteral:
		return t.literal(re), nil
	case syntax.OpCharClass:
		return t.class(class(false, re.Rune...)), nil
	case syntax.OpAnyCharNotNL:
		return t.class(class(true, '\n', '\n')), nil
	case syntax.OpAnyChar:
		return t.class(anyChar()), nil
	case syntax.OpBeginLine, syntax.OpBeginText:
		if !atStart {
			return nil, t.unsupported("an anchor ^ or \\A not at the start")
		}
		return empty(), nil
	case syntax.OpEndLine, syntax.OpEndText:
		if !atEnd {
			return nil, t.unsupported("an anchor $ or \\z not at the end")
		}
		return empty(), nil
	case syntax.OpWordBoundary, syntax.OpNoWordBoundary:
		return nil, t.unsupported(`a word boundary \b or \B`)
	case syntax.OpCapture:
		return t.node(re.Sub[0], atStart, atEnd)
	case syntax.OpStar, syntax.OpPlus, syntax.OpQuest, syntax.OpRepeat:
		return t.repeat(re)
	case syntax.OpConcat, syntax.OpAlternate:
		kids := make([]*node, len(re.Sub))
		for i, s := range re.Sub {
			st, en := atStart, atEnd
			if re.Op == syntax.OpConcat {
				st, en = atStart && i == 0, atEnd && i == len(re.Sub)-1
			}
			k, err := t.node(s, st, en)
			if err != nil {
				return nil, err
			}
			kids[i] = k
		}
		if re.Op == syntax.OpConcat {
			return seq(kids...), nil
		}
		return alt(kids...), nil
	}
	return nil, t.unsupported(re.Op.String())
}

// repeat translates a repetition. A repeated expression that can match the empty string
// (as in "(a*)*") is repeated without its empty match, which matches the same strings and
// keeps the grammar free of left recursion.
func (t regexTranslator) repeat(re *syntax.Regexp) (*node, error) {
	sub := re.Sub[0]
	lo, hi := repCounts(re)
	if nullableRe(sub) {
		sub, lo = nonEmptyRe(sub), 0
		if sub.Op == syntax.OpNoMatch || hi == 0 {
			return empty(), nil
		}
	}
	x, err := t.node(sub, false, false)
	if err != nil {
		return nil, err
	}
	if lo > maxRepeat || hi > maxRepeat {
		return nil, &LimitError{Limit: "regex repetition counts", Value: maxRepeat}
	}
	return rep(x, lo, hi), nil
}

func (t regexTranslator) literal(re *syntax.Regexp) *node {
	if re.Flags&syntax.FoldCase == 0 {
		if t.inJSON {
			return lit(jsonEscape(string(re.Rune)))
		}
		return lit(string(re.Rune))
	}
	kids := make([]*node, len(re.Rune))
	for i, r := range re.Rune {
		c := class(false, r, r)
		for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
			c.ranges = append(c.ranges, f, f)
		}
		kids[i] = t.class(c)
	}
	return seq(kids...)
}

// class is c as it is, or in a JSON string: the characters JSON allows raw, and the escapes
// of the others in c.
func (t regexTranslator) class(c *node) *node {
	if !t.inJSON {
		return c
	}
	return jsonClass(normalizeClass(c))
}

// jsonClass is the JSON string content of one character in the normalized ranges rs.
func jsonClass(rs []rune) *node {
	raw := class(false)
	var alts []*node
	for i := 0; i < len(rs); i += 2 {
		lo, hi := rs[i], rs[i+1]
		for c := lo; c <= hi && c < 0x20; c++ {
			alts = append(alts, lit(jsonEscape(string(c))))
		}
		for _, sp := range [...]rune{'"', '\\'} {
			if lo <= sp && sp <= hi {
				alts = append(alts, lit(jsonEscape(string(sp))))
			}
		}
		lo = max(lo, 0x20)
		for _, cut := range [...]rune{'"', '\\'} {
			if lo <= cut && cut <= hi {
				if lo < cut {
					raw.ranges = append(raw.ranges, lo, cut-1)
				}
				lo = cut + 1
			}
		}
		if lo <= hi {
			raw.ranges = append(raw.ranges, lo, hi)
		}
	}
	if len(raw.ranges) > 0 {
		alts = append([]*node{raw}, alts...)
	}
	switch len(alts) {
	case 0:
		return class(false)
	case 1:
		return alts[0]
	}
	return alt(alts...)
}
