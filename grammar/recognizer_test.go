package grammar

import (
	"slices"
	"strings"
	"unicode/utf8"
)

// recognizer is a memoizing backtracking recognizer over a grammar's rules (the parsed AST, not
// the compiled program): independent of the matcher, for the tests.
type recognizer struct {
	rules map[string]*node
	s     string
	memo  map[memoKey][]int
}

type memoKey struct {
	rule string
	pos  int
}

// fullMatch reports whether s is a sentence of rules (start rule root).
func fullMatch(rules []rule, s string) bool {
	r := &recognizer{rules: map[string]*node{}, s: s, memo: map[memoKey][]int{}}
	for _, x := range rules {
		r.rules[x.name] = x.body
	}
	return slices.Contains(r.match(ref("root"), 0), len(s))
}

// match returns the sorted positions where n can end when it starts at pos.
func (r *recognizer) match(n *node, pos int) []int {
	switch n.kind {
	case nLit:
		if strings.HasPrefix(r.s[pos:], n.s) {
			return []int{pos + len(n.s)}
		}
	case nClass:
		c, size := utf8.DecodeRuneInString(r.s[pos:])
		if size == 0 || (c == utf8.RuneError && size == 1) {
			return nil
		}
		in := false
		for i := 0; i+1 < len(n.ranges); i += 2 {
			in = in || (n.ranges[i] <= c && c <= n.ranges[i+1])
		}
		if in != n.neg {
			return []int{pos + size}
		}
	case nRef:
		key := memoKey{n.s, pos}
		if ends, ok := r.memo[key]; ok {
			return ends
		}
		ends := r.match(r.rules[n.s], pos)
		r.memo[key] = ends
		return ends
	case nSeq:
		cur := []int{pos}
		for _, k := range n.kids {
			cur = r.matchAll(k, cur)
		}
		return cur
	case nAlt:
		var ends []int
		for _, k := range n.kids {
			ends = append(ends, r.match(k, pos)...)
		}
		return uniq(ends)
	case nRep:
		var ends []int
		cur := []int{pos}
		for k := 0; len(cur) > 0 && (n.max < 0 || k <= n.max); k++ {
			if k >= n.min {
				ends = append(ends, cur...)
			}
			cur = r.matchAll(n.kids[0], cur) // x is not nullable when unbounded (else left recursion)
		}
		return uniq(ends)
	}
	return nil
}

func (r *recognizer) matchAll(n *node, starts []int) []int {
	var ends []int
	for _, p := range starts {
		ends = append(ends, r.match(n, p)...)
	}
	return uniq(ends)
}

func uniq(x []int) []int {
	slices.Sort(x)
	return slices.Compact(x)
}
