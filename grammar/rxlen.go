package grammar

import (
	"regexp/syntax"
	"unicode/utf8"
)

// Length limits beside a pattern or format (minLength/maxLength with pattern, or a
// format's maxLength) are met by narrowing the regular expression: capLength lowers the
// repetition counts so that no match is longer than the maximum, and raises them so that
// none is shorter than the minimum. The result matches a subset of what the expression
// matched, all of it within the limits (checked on the result), so the translation never
// accepts an invalid string; it refuses the valid strings whose length is spent
// differently than the budget was shared (an approximation, unless the expression's own
// lengths already lie within the limits).

const lenInf = -1

// lenRange is the least and greatest number of code points t matches (max lenInf: none).
func lenRange(t *syntax.Regexp) (lo, hi int) {
	add := func(a, b int) int {
		if a == lenInf || b == lenInf {
			return lenInf
		}
		return min(a+b, maxCount+1)
	}
	mul := func(a, n int) int {
		if a == lenInf || n == lenInf {
			if a == 0 {
				return 0
			}
			return lenInf
		}
		return min(a*n, maxCount+1)
	}
	switch t.Op {
	case syntax.OpLiteral:
		return len(t.Rune), len(t.Rune)
	case syntax.OpCharClass, syntax.OpAnyChar, syntax.OpAnyCharNotNL:
		return 1, 1
	case syntax.OpCapture:
		return lenRange(t.Sub[0])
	case syntax.OpConcat:
		for _, s := range t.Sub {
			a, b := lenRange(s)
			lo, hi = min(lo+a, maxCount+1), add(hi, b)
		}
		return lo, hi
	case syntax.OpAlternate:
		lo = maxCount + 1
		for _, s := range t.Sub {
			a, b := lenRange(s)
			lo = min(lo, a)
			if hi != lenInf && (b == lenInf || b > hi) {
				hi = b
			}
		}
		return lo, hi
	case syntax.OpStar, syntax.OpPlus, syntax.OpQuest, syntax.OpRepeat:
		a, b := lenRange(t.Sub[0])
		cmin, cmax := repCounts(t)
		return min(a*cmin, maxCount+1), mul(b, cmax)
	}
	return 0, 0 // empty match, anchors, no match
}

// repCounts are a repetition's counts (max lenInf: none).
func repCounts(t *syntax.Regexp) (int, int) {
	switch t.Op {
	case syntax.OpStar:
		return 0, lenInf
	case syntax.OpPlus:
		return 1, lenInf
	case syntax.OpQuest:
		return 0, 1
	}
	return t.Min, t.Max
}

var noMatch = &syntax.Regexp{Op: syntax.OpNoMatch}

func repeat(x *syntax.Regexp, lo, hi int) *syntax.Regexp {
	return &syntax.Regexp{Op: syntax.OpRepeat, Min: lo, Max: hi, Sub: []*syntax.Regexp{x}}
}

// capLength narrows t to matches of lo..hi code points (hi lenInf: no maximum); exact
// reports whether nothing was lost (t's lengths were within the limits already).
func capLength(t *syntax.Regexp, lo, hi int) (*syntax.Regexp, bool) {
	a, b := lenRange(t)
	if a >= lo && (hi == lenInf || b != lenInf && b <= hi) {
		return t, true
	}
	if hi != lenInf {
		t = capMax(t, hi)
	}
	if lo > 0 {
		t = raiseMin(t, lo)
	}
	a, b = lenRange(t)
	if t.Op == syntax.OpNoMatch || a < lo || hi != lenInf && (b == lenInf || b > hi) {
		return noMatch, false
	}
	return t, false
}

// capMax is a part of t whose matches have at most budget code points.
func capMax(t *syntax.Regexp, budget int) *syntax.Regexp {
	a, b := lenRange(t)
	switch {
	case b != lenInf && b <= budget:
		return t
	case a > budget:
		return noMatch
	}
	switch t.Op {
	case syntax.OpCapture:
		return capMax(t.Sub[0], budget)
	case syntax.OpAlternate:
		var subs []*syntax.Regexp
		for _, s := range t.Sub {
			if c := capMax(s, budget); c.Op != syntax.OpNoMatch {
				subs = append(subs, c)
			}
		}
		return alternate(subs)
	case syntax.OpConcat:
		return capConcat(t.Sub, budget)
	case syntax.OpStar, syntax.OpPlus, syntax.OpQuest, syntax.OpRepeat:
		x := t.Sub[0]
		cmin, cmax := repCounts(t)
		xmin, xmax := lenRange(x)
		if xmax != lenInf && xmax > 0 && budget/xmax >= cmin {
			n := budget / xmax
			if cmax != lenInf {
				n = min(n, cmax)
			}
			return repeat(x, cmin, n)
		}
		n := max(cmin, 1, isqrt(budget/max(xmin, 1))) // a few iterations, each of a fair size

		if cmax != lenInf {
			n = min(n, cmax)
		}
		if n == 0 {
			return &syntax.Regexp{Op: syntax.OpEmptyMatch}
		}
		cx := capMax(x, budget/n)
		if cx.Op == syntax.OpNoMatch {
			if cmin == 0 {
				return &syntax.Regexp{Op: syntax.OpEmptyMatch}
			}
			return noMatch
		}
		return repeat(cx, cmin, n)
	}
	return noMatch
}

// capConcat shares budget among a sequence: each part its minimum, then the slack in
// equal shares among the parts that can grow (the remainder to the first ones).
func capConcat(subs []*syntax.Regexp, budget int) *syntax.Regexp {
	mins := make([]int, len(subs))
	grow := make([]int, len(subs)) // how much more each can take (lenInf: unbounded)
	total, variable := 0, 0
	for i, s := range subs {
		a, b := lenRange(s)
		mins[i], total = a, total+a
		if b == lenInf {
			grow[i] = lenInf
		} else {
			grow[i] = b - a
		}
		if grow[i] != 0 {
			variable++
		}
	}
	slack := budget - total
	if slack < 0 {
		return noMatch
	}
	extra := make([]int, len(subs))
	for variable > 0 && slack > 0 {
		share := max(slack/variable, 1)
		variable = 0
		for i := range subs {
			if slack == 0 {
				break
			}
			room := grow[i]
			if room != lenInf {
				room -= extra[i]
			}
			if room == 0 {
				continue
			}
			give := share
			if room != lenInf {
				give = min(give, room)
			}
			give = min(give, slack)
			extra[i] += give
			slack -= give
			if room == lenInf || room > give {
				variable++
			}
		}
	}
	out := make([]*syntax.Regexp, len(subs))
	for i, s := range subs {
		if out[i] = capMax(s, mins[i]+extra[i]); out[i].Op == syntax.OpNoMatch {
			return noMatch
		}
	}
	return &syntax.Regexp{Op: syntax.OpConcat, Sub: out}
}

// raiseMin is a part of t whose matches have at least need code points.
func raiseMin(t *syntax.Regexp, need int) *syntax.Regexp {
	a, b := lenRange(t)
	switch {
	case a >= need:
		return t
	case b != lenInf && b < need:
		return noMatch
	}
	switch t.Op {
	case syntax.OpCapture:
		return raiseMin(t.Sub[0], need)
	case syntax.OpAlternate:
		var subs []*syntax.Regexp
		for _, s := range t.Sub {
			if r := raiseMin(s, need); r.Op != syntax.OpNoMatch {
				subs = append(subs, r)
			}
		}
		return alternate(subs)
	case syntax.OpConcat:
		out := append([]*syntax.Regexp(nil), t.Sub...)
		deficit := need - a
		for i := len(out) - 1; i >= 0 && deficit > 0; i-- {
			lo, hi := lenRange(out[i])
			take := deficit
			if hi != lenInf {
				take = min(take, hi-lo)
			}
			if take > 0 {
				out[i] = raiseMin(out[i], lo+take)
				deficit -= take
			}
		}
		if deficit > 0 {
			return noMatch
		}
		return &syntax.Regexp{Op: syntax.OpConcat, Sub: out}
	case syntax.OpStar, syntax.OpPlus, syntax.OpQuest, syntax.OpRepeat:
		x := t.Sub[0]
		cmin, cmax := repCounts(t)
		xmin, _ := lenRange(x)
		if xmin == 0 {
			if x = raiseMin(x, 1); x.Op == syntax.OpNoMatch {
				return noMatch
			}
			xmin = 1
		}
		n := max(cmin, (need+xmin-1)/xmin)
		if cmax == lenInf || n <= cmax {
			return repeat(x, n, cmax)
		}
		if x = raiseMin(x, (need+cmax-1)/cmax); x.Op == syntax.OpNoMatch {
			return noMatch
		}
		return repeat(x, cmax, cmax)
	}
	return noMatch
}

func isqrt(x int) int {
	r := 0
	for (r+1)*(r+1) <= x {
		r++
	}
	return r
}

func alternate(subs []*syntax.Regexp) *syntax.Regexp {
	switch len(subs) {
	case 0:
		return noMatch
	case 1:
		return subs[0]
	}
	return &syntax.Regexp{Op: syntax.OpAlternate, Sub: subs}
}

// anyString is the expression of every string (of code points) of lo..hi code points.
func anyString(lo, hi int) *syntax.Regexp {
	return repeat(&syntax.Regexp{Op: syntax.OpCharClass, Rune: []rune{0, utf8.MaxRune}}, lo, hi)
}

// nullableRe reports whether t matches the empty string.
func nullableRe(t *syntax.Regexp) bool {
	lo, _ := lenRange(t)
	return lo == 0 && t.Op != syntax.OpNoMatch
}

// nonEmptyRe is t without its empty match: the same non-empty strings.
func nonEmptyRe(t *syntax.Regexp) *syntax.Regexp {
	if !nullableRe(t) {
		return t
	}
	switch t.Op {
	case syntax.OpCapture:
		return nonEmptyRe(t.Sub[0])
	case syntax.OpAlternate:
		var subs []*syntax.Regexp
		for _, s := range t.Sub {
			if n := nonEmptyRe(s); n.Op != syntax.OpNoMatch {
				subs = append(subs, n)
			}
		}
		return alternate(subs)
	case syntax.OpConcat: // every part is nullable: the first non-empty one, then the rest
		var alts []*syntax.Regexp
		for i, s := range t.Sub {
			n := nonEmptyRe(s)
			if n.Op == syntax.OpNoMatch {
				continue
			}
			parts := append([]*syntax.Regexp{n}, t.Sub[i+1:]...)
			alts = append(alts, &syntax.Regexp{Op: syntax.OpConcat, Sub: parts})
		}
		return alternate(alts)
	case syntax.OpStar, syntax.OpPlus, syntax.OpQuest, syntax.OpRepeat:
		_, hi := repCounts(t)
		n := nonEmptyRe(t.Sub[0])
		if n.Op == syntax.OpNoMatch || hi == 0 {
			return noMatch
		}
		if hi == lenInf {
			return &syntax.Regexp{Op: syntax.OpPlus, Sub: []*syntax.Regexp{n}}
		}
		return repeat(n, 1, hi)
	}
	return noMatch // the empty match, anchors
}
