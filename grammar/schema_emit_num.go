package grammar

import (
	"math/big"
	"slices"
	"strings"
)

// Numbers. Unconstrained, a number is the primitive rule (exponents allowed). With bounds
// or excluded values, the grammar spells exactly the decimals in range, without exponents
// (1e3 is refused; 1000 is written), at most 16 integral and 16 fraction digits, trailing
// fraction zeros allowed; integers are written without fraction. multipleOf 10^-e (0.01,
// 1, …) limits the fraction to e significant digits; another multipleOf is a divisibility
// automaton over the digits (no bounds), or the list of its multiples in range when there
// are at most maxEnum of them.

const (
	maxEnum   = 256
	maxDigits = 16
	maxModDFA = 4000 // states of a divisibility automaton
)

var tenTo16 = new(big.Rat).SetInt(new(big.Int).Exp(big.NewInt(10), big.NewInt(maxDigits), nil))

// interval is a range of numbers (nil bound: none).
type interval struct {
	lo, hi     *big.Rat
	loEx, hiEx bool
}

// intervals is n's range split at its excluded values.
func (n *numSch) intervals() []interval {
	out := []interval{{n.lo, n.hi, n.loEx, n.hiEx}}
	vals := slices.Clone(n.not)
	slices.SortFunc(vals, func(a, b *big.Rat) int { return a.Cmp(b) })
	for _, v := range vals {
		last := out[len(out)-1]
		if last.lo != nil && v.Cmp(last.lo) < 0 || last.hi != nil && v.Cmp(last.hi) > 0 {
			continue
		}
		out = append(out[:len(out)-1], interval{last.lo, v, last.loEx, true}, interval{v, last.hi, true, last.hiEx})
	}
	return out
}

func (e *emitter) number(n *numSch, hint string) (*node, error) {
	if x, ok := enumIntegers(n); ok {
		return x, nil
	}
	if len(n.notMult) > 0 {
		return e.notMultiples(n, hint)
	}
	if n.mult != nil && n.integer && n.mult.IsInt() && n.mult.Num().Cmp(big.NewInt(1)) == 0 {
		n = &numSch{integer: true, lo: n.lo, hi: n.hi, loEx: n.loEx, hiEx: n.hiEx, not: n.not}
	}
	sig := maxDigits
	if n.frac && n.mult != nil {
		return nil, schemaErr(hint, "multipleOf together with the complement of an integer type is not supported")
	}
	if n.mult != nil {
		m, exp := decimalParts(n.mult)
		if n.integer { // an integer is a multiple of p/q exactly when it is one of p
			m, exp = new(big.Int).Set(n.mult.Num()), 0
		}
		if m.Cmp(big.NewInt(1)) != 0 || exp < 0 {
			return e.multiples(n, m, exp, hint)
		}
		sig = min(exp, maxDigits)
	}
	if n.lo == nil && n.hi == nil && len(n.not) == 0 && !n.frac {
		switch {
		case n.integer:
			return ref("integer"), nil
		case sig >= maxDigits:
			return ref("number"), nil
		}
	}
	var alts []*node
	for _, iv := range n.intervals() {
		var x *node
		if n.integer || sig == 0 {
			x = intInterval(iv, sig == 0 && !n.integer)
		} else {
			x = decRange(iv, sig, n.frac)
		}
		if x != nil {
			alts = append(alts, x)
		}
	}
	if len(alts) == 0 {
		return class(false), nil
	}
	return seq(alt(alts...), ref("space")), nil
}

// enumIntegers lists the integers of a bounded range of at most maxEnum that n accepts,
// exact whatever else constrains them (ok false: n is not such a range).
func enumIntegers(n *numSch) (*node, bool) {
	if !n.integer || n.lo == nil || n.hi == nil {
		return nil, false
	}
	lo, hi := ceilRat(n.lo), floorRat(n.hi)
	if span := new(big.Rat).Sub(hi, lo); span.Cmp(big.NewRat(maxEnum, 1)) >= 0 {
		return nil, false
	}
	var alts []*node
	one := big.NewRat(1, 1)
	for x := lo; x.Cmp(hi) <= 0; x = new(big.Rat).Add(x, one) {
		if v := (&jvalue{kind: 'n', str: x.Num().String()}); evalNum(v, n) {
			alts = append(alts, lit(v.str))
		}
	}
	if len(alts) == 0 {
		return class(false), true
	}
	return seq(alt(alts...), ref("space")), true
}

// decimalParts writes a positive decimal x as m·10^-exp with the smallest exp ≥ 0 (exp −1:
// not a finite decimal within 400 digits).
func decimalParts(x *big.Rat) (*big.Int, int) {
	t := new(big.Rat).Set(x)
	ten := big.NewRat(10, 1)
	for exp := 0; exp <= 400; exp++ {
		if t.IsInt() {
			return new(big.Int).Set(t.Num()), exp
		}
		t.Mul(t, ten)
	}
	return nil, -1
}

// intInterval is the integers in iv (nil when none), each optionally followed by ".0…"
// when zeros (a number that must be a multiple of 1).
func intInterval(iv interval, zeros bool) *node {
	lo, hasLo, hi, hasHi := intBounds(iv)
	if hasLo && hasHi && lo > hi {
		return nil
	}
	x := intRangeNode(lo, hi, hasLo, hasHi)
	if x == nil {
		return nil
	}
	if zeros {
		x = seq(x, opt(seq(lit("."), rep(lit("0"), 1, maxDigits))))
	}
	return x
}

// intBounds rounds iv inward to integers of at most 16 digits (a bound beyond them is
// dropped, or leaves no integer).
func intBounds(iv interval) (lo int64, hasLo bool, hi int64, hasHi bool) {
	limit := new(big.Rat).Sub(tenTo16, big.NewRat(1, 1))
	negLimit := new(big.Rat).Neg(limit)
	if iv.lo != nil {
		r := ceilRat(iv.lo)
		if iv.loEx && iv.lo.IsInt() {
			r.Add(r, big.NewRat(1, 1))
		}
		switch {
		case r.Cmp(limit) > 0:
			return 1, true, 0, true // empty
		case r.Cmp(negLimit) >= 0:
			lo, hasLo = r.Num().Int64(), true
		}
	}
	if iv.hi != nil {
		r := floorRat(iv.hi)
		if iv.hiEx && iv.hi.IsInt() {
			r.Sub(r, big.NewRat(1, 1))
		}
		switch {
		case r.Cmp(negLimit) < 0:
			return 1, true, 0, true
		case r.Cmp(limit) <= 0:
			hi, hasHi = r.Num().Int64(), true
		}
	}
	return lo, hasLo, hi, hasHi
}

func floorRat(x *big.Rat) *big.Rat {
	q := new(big.Int).Div(x.Num(), x.Denom()) // Euclidean: floors for a positive divisor
	return new(big.Rat).SetInt(q)
}

func ceilRat(x *big.Rat) *big.Rat {
	f := floorRat(x)
	if f.Cmp(x) != 0 {
		f.Add(f, big.NewRat(1, 1))
	}
	return f
}

// decRange is the decimals in iv with at most sig significant fraction digits (nil: none),
// with a fraction that is not zero when frac.
func decRange(iv interval, sig int, frac bool) *node {
	zero := new(big.Rat)
	var alts []*node
	if iv.hi == nil || iv.hi.Sign() > 0 || iv.hi.Sign() == 0 && !iv.hiEx {
		lower, lowerEx := zero, false
		if iv.lo != nil && iv.lo.Sign() >= 0 {
			lower, lowerEx = iv.lo, iv.loEx
		}
		if x := posRange(lower, lowerEx, iv.hi, iv.hiEx, sig, frac); x != nil {
			alts = append(alts, x)
		}
	}
	if iv.lo == nil || iv.lo.Sign() < 0 {
		lower, lowerEx := zero, true
		if iv.hi != nil && iv.hi.Sign() < 0 {
			lower, lowerEx = new(big.Rat).Neg(iv.hi), iv.hiEx
		}
		var upper *big.Rat
		if iv.lo != nil {
			upper = new(big.Rat).Neg(iv.lo)
		}
		if x := posRange(lower, lowerEx, upper, iv.loEx, sig, frac); x != nil {
			alts = append(alts, seq(lit("-"), x))
		}
	}
	switch len(alts) {
	case 0:
		return nil
	case 1:
		return alts[0]
	}
	return alt(alts...)
}

// splitDecimal is x ≥ 0 as its integral part and its fraction digits without trailing
// zeros.
func splitDecimal(x *big.Rat) (*big.Int, string) {
	ip := new(big.Int).Quo(x.Num(), x.Denom())
	frac := new(big.Rat).Sub(x, new(big.Rat).SetInt(ip))
	if frac.Sign() == 0 {
		return ip, ""
	}
	_, exp := decimalParts(frac)
	if exp < 0 {
		exp = 400
	}
	s := frac.FloatString(exp)
	return ip, strings.TrimRight(s[strings.IndexByte(s, '.')+1:], "0")
}
