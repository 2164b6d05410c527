package grammar

import (
	"math/big"
)

// posRange is the decimals y ≥ 0 with lower ≤ y (< when lowerEx) and y ≤ upper (< when
// upperEx; upper nil: none), written with an integral part of at most 16 digits and an
// optional fraction of at most 16 digits of which the first sig may be non-zero (nil:
// none), and with a non-zero fraction when frac. By integral part I: I = A (the lower
// bound's) needs a fraction at least the bound's, A < I < B any fraction, I = B a fraction
// at most the bound's.
func posRange(lower *big.Rat, lowerEx bool, upper *big.Rat, upperEx bool, sig int, frac bool) *node {
	limit := new(big.Int).Exp(big.NewInt(10), big.NewInt(maxDigits), nil) // first 17-digit integer
	a, aFrac := splitDecimal(lower)
	if a.Cmp(limit) >= 0 {
		return nil
	}
	loB := fracBound{digits: aFrac, strict: lowerEx, active: true}
	var b *big.Int
	var hiB fracBound
	if upper != nil {
		if c := lower.Cmp(upper); c > 0 || c == 0 && (lowerEx || upperEx) {
			return nil
		}
		var bFrac string
		b, bFrac = splitDecimal(upper)
		if b.Cmp(limit) >= 0 {
			b = nil // beyond every integral part written
		} else {
			hiB = fracBound{digits: bFrac, strict: upperEx, active: true}
		}
	}
	var alts []*node
	add := func(ip *node, lo, hi fracBound) {
		if f := fraction(lo, hi, sig, frac); f != nil {
			alts = append(alts, cat(ip, f))
		}
	}
	if b != nil && a.Cmp(b) == 0 {
		add(lit(a.String()), loB, hiB)
		return altOrNil(alts)
	}
	add(lit(a.String()), loB, fracBound{})
	from := new(big.Int).Add(a, big.NewInt(1))
	switch {
	case b == nil:
		if from.Cmp(limit) < 0 {
			add(uintAtLeast(from.Int64()), fracBound{}, fracBound{})
		}
	default:
		if to := new(big.Int).Sub(b, big.NewInt(1)); from.Cmp(to) <= 0 {
			add(uintRange(from.Int64(), to.Int64()), fracBound{}, fracBound{})
		}
		add(lit(b.String()), fracBound{}, hiB)
	}
	return altOrNil(alts)
}

func altOrNil(alts []*node) *node {
	switch len(alts) {
	case 0:
		return nil
	case 1:
		return alts[0]
	}
	return alt(alts...)
}

// fracBound is a bound on the fraction still to be written: the bound's remaining
// fraction digits (no trailing zeros), whether it is exclusive, and whether it still
// applies (the digits so far equal the bound's).
type fracBound struct {
	digits string
	strict bool
	active bool
}

// fraction is the optional fraction part (".digits" or nothing) whose value lies within
// the bounds (nil: none does): the empty fraction when it does, else "." and one or
// more digits; when nz, a digit must be non-zero.
func fraction(lo, hi fracBound, sig int, nz bool) *node {
	rest, emptyOK := fracRest(lo, hi, 0, sig, nz)
	var alts []*node
	if emptyOK {
		alts = append(alts, empty())
	}
	if rest != nil {
		alts = append(alts, seq(lit("."), rest))
	}
	return altOrNil(alts)
}

// fracRest are the non-empty digit strings from fraction position i that keep the value
// within the bounds (nil: none), and whether stopping here does; nz: a non-zero digit is
// still needed.
func fracRest(lo, hi fracBound, i, sig int, nz bool) (*node, bool) {
	emptyOK := !nz && (!lo.active || lo.digits == "" && !lo.strict) && (!hi.active || hi.digits != "" || !hi.strict)
	if i >= maxDigits {
		return nil, emptyOK
	}
	if !lo.active && !hi.active {
		if nz {
			return nonZeroFraction(i, sig), false
		}
		return anyFraction(i, sig), true
	}
	top := 9
	if i >= sig {
		top = 0
	}
	first := func(b fracBound) int {
		if b.digits == "" {
			return 0
		}
		return int(b.digits[0] - '0')
	}
	step := func(b fracBound, d int, low bool) (fracBound, bool) {
		if !b.active {
			return b, true
		}
		f := first(b)
		switch {
		case d == f:
			rest := ""
			if b.digits != "" {
				rest = b.digits[1:]
			}
			return fracBound{digits: rest, strict: b.strict, active: true}, true
		case d > f == low:
			return fracBound{}, true
		}
		return fracBound{}, false
	}
	var alts []*node
	for d := 0; d <= top; {
		nlo, ok1 := step(lo, d, true)
		nhi, ok2 := step(hi, d, false)
		e := d + 1
		for e <= top {
			a, okA := step(lo, e, true)
			b, okB := step(hi, e, false)
			if okA != ok1 || okB != ok2 || a != nlo || b != nhi {
				break
			}
			e++
		}
		if ok1 && ok2 {
			var sub *node
			var subEmpty bool
			if nz && d == 0 { // a zero keeps the need; the digits d..e-1 are split below
				sub, subEmpty = fracRest(nlo, nhi, i+1, sig, true)
				c0 := class(false, '0', '0')
				switch {
				case sub != nil && subEmpty:
					alts = append(alts, seq(c0, opt(sub)))
				case sub != nil:
					alts = append(alts, seq(c0, sub))
				case subEmpty:
					alts = append(alts, c0)
				}
				if d++; d == e {
					continue
				}
			}
			sub, subEmpty = fracRest(nlo, nhi, i+1, sig, false)
			c := class(false, rune('0'+d), rune('0'+e-1))
			switch {
			case sub != nil && subEmpty:
				alts = append(alts, seq(c, opt(sub)))
			case sub != nil:
				alts = append(alts, seq(c, sub))
			case subEmpty:
				alts = append(alts, c)
			}
		}
		d = e
	}
	return altOrNil(alts), emptyOK
}

// nonZeroFraction is the non-empty digit strings from position i with a non-zero digit
// before position sig, 16 digits in all.
func nonZeroFraction(i, sig int) *node {
	if i >= sig {
		return nil
	}
	first := seq(class(false, '1', '9'))
	if i+1 < maxDigits {
		first = seq(class(false, '1', '9'), opt(anyFraction(i+1, sig)))
	}
	if more := nonZeroFraction(i+1, sig); more != nil {
		return alt(first, seq(lit("0"), more))
	}
	return first
}

// anyFraction is every non-empty digit string from position i: digits up to position
// sig, zeros after it, 16 in all.
func anyFraction(i, sig int) *node {
	free := max(sig-i, 0)
	zeros := maxDigits - max(sig, i)
	if free == 0 {
		return rep(lit("0"), 1, zeros)
	}
	return seq(class(false, '0', '9'), rep(class(false, '0', '9'), 0, free-1), rep(lit("0"), 0, zeros))
}
