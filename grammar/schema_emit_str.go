package grammar

import (
	"regexp/syntax"
	"slices"
	"strconv"
	"unicode/utf8"
)

// str emits a string atom. Without patterns or formats: characters minLength..maxLength
// (a counted repetition, so large bounds cost no states). One pattern or format: its
// grammar (a pattern matches anywhere unless anchored, so unanchored ends get ".*"),
// narrowed to the length limits. Several, or any exclusion (notPatterns from not/oneOf,
// excluded values): one automaton, their intersection. Excluded values alone: a trie of
// the values that leaves each as soon as the string differs.
func (e *emitter) str(s *strSch, hint string) (*node, error) {
	c := e.c
	quoted := func(content *node) *node { return seq(lit(`"`), content, lit(`"`), ref("space")) }
	hi := s.maxLen
	if hi < 0 {
		hi = lenInf
	}
	if len(s.patterns) == 0 && len(s.formats) == 0 && len(s.notPatterns) == 0 {
		if len(s.notIn) > 0 {
			return quoted(e.notInNode(s.notIn, s.minLen, hi, ref("char"))), nil
		}
		if s.minLen == 0 && hi == lenInf {
			return ref("string"), nil
		}
		return quoted(rep(ref("char"), s.minLen, hi)), nil
	}
	var pos []*syntax.Regexp
	for _, p := range s.patterns {
		t, err := c.rx.parse(p)
		if err != nil {
			return nil, schemaErr(hint, "%v", err)
		}
		pos = append(pos, searchWrap(t))
	}
	for _, f := range s.formats {
		pos = append(pos, c.rx.format(f))
	}
	// maxLength narrows the expressions (an approximation unless their matches are short
	// enough already); minLength is one more expression for the automaton, exact (or,
	// beyond 256, narrowing too)
	needMin := false
	for i, t := range pos {
		lo := 0
		if s.minLen > 256 {
			lo = s.minLen
		}
		capped, exact := capLength(t, lo, hi)
		if !exact && capped.Op != syntax.OpNoMatch {
			if err := c.approx(hint, "minLength/maxLength with pattern or format", "the length budget is shared among the pattern's parts"); err != nil {
				return nil, err
			}
		}
		pos[i] = capped
		if least, _ := lenRange(capped); least < s.minLen {
			needMin = true
		}
	}
	if needMin && s.minLen <= 256 {
		pos = append(pos, anyString(s.minLen, lenInf))
	}
	if len(pos) == 1 && len(s.notPatterns) == 0 && len(s.notIn) == 0 {
		// a pattern that matches anywhere is a search: its automaton (minimized) ends in one
		// state that takes everything, which masks cheaply; other expressions translate
		// directly
		if search := len(s.patterns) == 1 && len(s.formats) == 0 && pos[0] != nil && searchy(pos[0]); search {
			if d, err := dfaOf(pos[0]); err == nil {
				return quoted(e.dfaNode(d, hint)), nil
			}
		}
		n, err := regexTranslator{inJSON: true}.node(pos[0], true, true)
		if err == nil {
			return quoted(n), nil
		}
	}
	if len(pos) == 0 {
		pos = append(pos, anyString(s.minLen, hi))
	}
	d, err := dfaOf(pos[0])
	if err != nil {
		return nil, schemaErr(hint, "string constraints: %v", err)
	}
	for _, t := range pos[1:] {
		if d, err = andTree(d, t, false); err != nil {
			return nil, schemaErr(hint, "string constraints: %v", err)
		}
	}
	for _, p := range s.notPatterns {
		t, err := c.rx.parse(p)
		if err != nil {
			return nil, schemaErr(hint, "%v", err)
		}
		if d, err = andTree(d, searchWrap(t), true); err != nil {
			return nil, schemaErr(hint, "string constraints: %v", err)
		}
	}
	if len(s.notIn) > 0 {
		l, err := literalsDFA(s.notIn)
		if err == nil {
			d, err = d.and(l.complement())
		}
		if err != nil {
			return nil, schemaErr(hint, "string constraints: %v", err)
		}
	}
	return quoted(e.dfaNode(d, hint)), nil
}

// searchy reports whether t begins or ends with the ".*" of searchWrap.
func searchy(t *syntax.Regexp) bool {
	return t.Op == syntax.OpConcat && len(t.Sub) > 1 && (t.Sub[0] == anyRunes || t.Sub[len(t.Sub)-1] == anyRunes)
}

// andTree intersects d with the strings t matches (does not match, when negated).
func andTree(d *rxDFA, t *syntax.Regexp, negated bool) (*rxDFA, error) {
	x, err := dfaOf(t)
	if err != nil {
		return nil, err
	}
	if negated {
		x = x.complement()
	}
	return d.and(x)
}

var anyRunes = &syntax.Regexp{Op: syntax.OpStar, Sub: []*syntax.Regexp{{Op: syntax.OpCharClass, Rune: []rune{0, utf8.MaxRune}}}}

// searchWrap is the whole-string expression of a pattern that may match anywhere: ".*"
// before it unless it begins with ^, after it unless it ends with $.
func searchWrap(t *syntax.Regexp) *syntax.Regexp {
	parts := []*syntax.Regexp{}
	if !anchored(t, syntax.OpBeginText) {
		parts = append(parts, anyRunes)
	}
	parts = append(parts, t)
	if !anchored(t, syntax.OpEndText) {
		parts = append(parts, anyRunes)
	}
	if len(parts) == 1 {
		return t
	}
	return &syntax.Regexp{Op: syntax.OpConcat, Sub: parts}
}

// anchored reports whether every match of t begins (op OpBeginText) or ends (OpEndText)
// with the anchor.
func anchored(t *syntax.Regexp, op syntax.Op) bool {
	switch t.Op {
	case op:
		return true
	case syntax.OpCapture:
		return anchored(t.Sub[0], op)
	case syntax.OpConcat:
		if len(t.Sub) == 0 {
			return false
		}
		if op == syntax.OpBeginText {
			return anchored(t.Sub[0], op)
		}
		return anchored(t.Sub[len(t.Sub)-1], op)
	case syntax.OpAlternate:
		for _, s := range t.Sub {
			if !anchored(s, op) {
				return false
			}
		}
		return len(t.Sub) > 0
	}
	return false
}

// dfaNode is the content of a JSON string the automaton accepts: a rule per state of the
// minimized automaton, its edges as JSON character classes (escaping what JSON must
// escape); a state that takes everything is any characters.
func (e *emitter) dfaNode(d *rxDFA, hint string) *node {
	d = d.minimize()
	live := d.live()
	if !live[0] {
		return class(false)
	}
	names := make([]string, len(d.states))
	for i := range d.states {
		if live[i] {
			names[i] = e.uniqueName(hint + "-s" + strconv.Itoa(i))
		}
	}
	for i, st := range d.states {
		if !live[i] {
			continue
		}
		if d.universal(int32(i)) {
			e.rules = append(e.rules, ruleOf(names[i], star(ref("char"))))
			continue
		}
		var alts []*node
		var targets []int32
		for _, ed := range st.edges {
			if live[ed.to] && !slices.Contains(targets, ed.to) {
				targets = append(targets, ed.to)
			}
		}
		for _, t := range targets {
			var rs []rune
			for _, ed := range st.edges {
				if ed.to == t {
					rs = append(rs, ed.lo, ed.hi)
				}
			}
			alts = append(alts, seq(jsonClass(normalizeClass(class(false, rs...))), ref(names[t])))
		}
		if st.accept {
			alts = append(alts, empty())
		}
		e.rules = append(e.rules, ruleOf(names[i], alt(alts...)))
	}
	return ref(names[0])
}

// notInNode is the content of a JSON string of lo..hi characters (hi lenInf: no bound)
// that is none of words: it follows the words' trie while the characters match one (raw
// characters only, so that an escape cannot spell a word), and once they differ, free
// characters follow.
func (e *emitter) notInNode(words []string, lo, hi int, free *node) *node {
	type trie struct {
		end  bool
		kids map[rune]*trie
		keys []rune
	}
	root := &trie{kids: map[rune]*trie{}}
	for _, w := range words {
		t := root
		for _, r := range w {
			k, ok := t.kids[r]
			if !ok {
				k = &trie{kids: map[rune]*trie{}}
				t.kids[r], t.keys = k, append(t.keys, r)
			}
			t = k
		}
		t.end = true
	}
	var restAny *node // the free rest when unbounded: one rule, shared
	if hi == lenInf && lo == 0 {
		restAny = ref(e.uniqueName("free"))
		e.rules = append(e.rules, ruleOf(restAny.s, star(free)))
	}
	var walk func(t *trie, depth int) *node
	walk = func(t *trie, depth int) *node {
		if hi != lenInf && depth > hi {
			return class(false)
		}
		var alts []*node
		if !t.end && depth >= lo {
			alts = append(alts, empty())
		}
		other := class(true, '"', '"', '\\', '\\', 0, 0x1f)
		for _, r := range t.keys {
			if r == '"' || r == '\\' || r < 0x20 {
				continue // a raw character cannot be it, so the string differs from the word
			}
			alts = append(alts, seq(lit(string(r)), walk(t.kids[r], depth+1)))
			other.ranges = append(other.ranges, r, r)
		}
		rest := hi
		if hi != lenInf {
			rest = hi - depth - 1
		}
		switch {
		case restAny != nil:
			alts = append(alts, seq(other, restAny))
		case hi == lenInf || rest >= 0:
			alts = append(alts, seq(other, rep(free, max(lo-depth-1, 0), rest)))
		}
		return alt(alts...)
	}
	return walk(root, 0)
}
