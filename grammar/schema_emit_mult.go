package grammar

import (
	"fmt"
	"math/big"
)

// notMultiples emits a number that must not be a multiple of an integer m (a negated
// multipleOf), without bounds: for integers, the divisibility automaton with the remainders
// other than 0 accepted; other numbers also every number with a fraction. Other cases are
// left out (an approximation).
func (e *emitter) notMultiples(n *numSch, hint string) (*node, error) {
	if n.mult != nil || n.lo != nil || n.hi != nil || len(n.not) > 0 || len(n.notMult) > 1 ||
		!n.notMult[0].IsInt() || !n.notMult[0].Num().IsInt64() || n.notMult[0].Num().Int64() > maxModDFA {
		if err := e.c.approx(hint, "not multipleOf", "supported alone, of an integer, or on integers in a range of at most 256"); err != nil {
			return nil, err
		}
		return class(false), nil
	}
	if n.frac { // a number with a fraction is no integer's multiple
		return seq(decRange(interval{}, maxDigits, true), ref("space")), nil
	}
	m := int(n.notMult[0].Num().Int64())
	ints := e.modDFA(m, 0, true, hint, func(r int) bool { return r != 0 })
	if n.integer {
		return seq(ints, ref("space")), nil
	}
	return seq(alt(ints, decRange(interval{}, maxDigits, true)), ref("space")), nil
}

// multiples emits a number that must be a multiple of m·10^-exp (m > 1, or exp < 0):
// the list of multiples in range when short, else (no bounds, no exclusions) the
// divisibility automaton, else the multiples nearest the bound (an approximation).
func (e *emitter) multiples(n *numSch, m *big.Int, exp int, hint string) (*node, error) {
	if exp < 0 {
		return nil, schemaErr(hint, "multipleOf %s is not a finite decimal", n.mult.RatString())
	}
	if n.lo == nil && n.hi == nil && len(n.not) == 0 {
		if m.IsInt64() && int(m.Int64())*(exp+1) <= maxModDFA {
			return seq(e.modDFA(int(m.Int64()), exp, n.integer, hint, func(r int) bool { return r == 0 }), ref("space")), nil
		}
		return nil, schemaErr(hint, "multipleOf %s needs a divisibility automaton of more than %d states", n.mult.RatString(), maxModDFA)
	}
	step := n.mult
	if n.integer {
		step = new(big.Rat).SetInt(m)
	}
	var first *big.Rat
	dir := big.NewRat(1, 1)
	switch {
	case n.lo != nil:
		first = new(big.Rat).Mul(ceilRat(new(big.Rat).Quo(n.lo, step)), step)
	default:
		first = new(big.Rat).Mul(floorRat(new(big.Rat).Quo(n.hi, step)), step)
		dir.Neg(dir)
	}
	var vals []*jvalue
	x := first
	exact := false
	for i := 0; i < maxEnum+1; i++ {
		if !evalNum(&jvalue{kind: 'n', str: x.RatString()}, n) && (n.lo != nil && x.Cmp(n.lo) == 0 || n.hi != nil && x.Cmp(n.hi) == 0) {
			x = new(big.Rat).Add(x, new(big.Rat).Mul(dir, step))
			continue // an excluded bound
		}
		if n.hi != nil && x.Cmp(n.hi) > 0 || n.lo != nil && x.Cmp(n.lo) < 0 {
			exact = true
			break
		}
		if s := ratString(x); s != "" && len(vals) < maxEnum && evalNum(&jvalue{kind: 'n', str: s}, n) {
			vals = append(vals, &jvalue{kind: 'n', str: s})
		}
		x = new(big.Rat).Add(x, new(big.Rat).Mul(dir, step))
	}
	if !exact {
		if err := e.c.approx(hint, "multipleOf", "more than 256 multiples in range: the 256 nearest the bound are allowed"); err != nil {
			return nil, err
		}
	}
	if len(vals) == 0 {
		return class(false), nil
	}
	alts := make([]*node, len(vals))
	for i, v := range vals {
		alts[i] = lit(v.str)
	}
	return seq(alt(alts...), ref("space")), nil
}

// modDFA is the decimals (integers when integer) that are multiples of m·10^-exp (more
// generally: whose value·10^exp has a remainder modulo m that accept takes): a remainder
// is carried along the integral digits and the first exp fraction digits; further
// fraction digits must be 0. Any number of integral digits.
func (e *emitter) modDFA(m, exp int, integer bool, hint string, accept func(r int) bool) *node {
	names := make([][]string, exp+1) // names[j][r]: after j fraction digits, remainder r
	for j := range names {
		names[j] = make([]string, m)
		for r := range names[j] {
			names[j][r] = e.uniqueName(fmt.Sprintf("%s-mod%d-%d", hint, j, r))
		}
	}
	pow := make([]int, exp+1) // pow[k] = 10^k mod m
	pow[0] = 1 % m
	for k := 1; k <= exp; k++ {
		pow[k] = pow[k-1] * 10 % m
	}
	// digits are the digits from remainder r, each to state (j, (10r+d) mod m), grouped.
	digits := func(r, j int, skipZero bool) []*node {
		var alts []*node
		for d := 0; d <= 9; d++ {
			if d == 0 && skipZero {
				continue
			}
			to := (10*r + d) % m
			if k := len(alts) - 1; k >= 0 && alts[k].kids[1].s == names[j][to] {
				alts[k].kids[0].ranges[1] = rune('0' + d)
				continue
			}
			alts = append(alts, seq(class(false, rune('0'+d), rune('0'+d)), ref(names[j][to])))
		}
		return alts
	}
	zeros := rep(lit("0"), 1, maxDigits)
	fraction := func(r int) *node { // "." and the fraction, from integral remainder r
		if exp == 0 {
			if !accept(r) {
				return nil
			}
			return seq(lit("."), zeros)
		}
		return seq(lit("."), alt(digits(r, 1, false)...))
	}
	for j := 0; j <= exp; j++ {
		for r := 0; r < m; r++ {
			var alts []*node
			switch {
			case j == 0:
				alts = digits(r, 0, false)
				if f := fraction(r); f != nil && !integer {
					alts = append(alts, f)
				}
			case j < exp:
				alts = digits(r, j+1, false)
			case accept(r):
				alts = append(alts, zeros)
			}
			if accept(r * pow[exp-j] % m) {
				alts = append(alts, empty())
			}
			if len(alts) == 0 {
				alts = append(alts, class(false))
			}
			e.rules = append(e.rules, ruleOf(names[j][r], alt(alts...)))
		}
	}
	zero := empty() // "0" is followed by a fraction or nothing, never more digits
	if f := fraction(0); f != nil && !integer {
		zero = opt(f)
	}
	return seq(opt(lit("-")), alt(append(digits(0, 0, true), seq(lit("0"), zero))...))
}
