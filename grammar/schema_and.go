package grammar

import (
	"math/big"
	"slices"
)

// and is the intersection of a and b (allOf; siblings of anyOf, oneOf and $ref): unions
// distribute, references are expanded (at most maxRefDepth deep, so a schema that needs
// itself to be expanded forever is an error), literals keep the values the other side
// accepts, atoms of one type merge their constraints, atoms of different types meet in
// nothing. Property order: a's properties first, then b's new ones.
func (c *conv) and(a, b *sch) (*sch, error) {
	if err := c.spend(1); err != nil {
		return nil, err
	}
	switch {
	case a.kind == sAny:
		return b, nil
	case b.kind == sAny:
		return a, nil
	case a.kind == sNone || b.kind == sNone:
		return noneSch, nil
	case a.kind == sRef || b.kind == sRef:
		if a == b {
			return a, nil
		}
		c.depth++
		defer func() { c.depth-- }()
		r := a
		if r.kind != sRef {
			r = b
		}
		if r.def.state == 1 { // being built: intersect once it is
			if r == a {
				return c.deferAnd(r.def, b, false), nil
			}
			return c.deferAnd(r.def, a, true), nil
		}
		if c.depth > maxRefDepth {
			return nil, schemaErr(r.def.path, "references nested more than %d deep inside allOf or beside other keywords", maxRefDepth)
		}
		t, err := c.expand(r.def)
		if err != nil {
			return nil, err
		}
		if r == a {
			return c.and(t, b)
		}
		return c.and(a, t)
	case a.kind == sUnion || b.kind == sUnion:
		var out []*sch
		if a.kind == sUnion {
			for _, x := range a.alts {
				y, err := c.and(x, b)
				if err != nil {
					return nil, err
				}
				out = append(out, y)
			}
		} else {
			for _, x := range b.alts {
				y, err := c.and(a, x)
				if err != nil {
					return nil, err
				}
				out = append(out, y)
			}
		}
		return c.checkUnion(union(out...), "allOf")
	case a.kind == sLit || b.kind == sLit:
		if a.kind != sLit {
			a, b = b, a
		}
		var keep []*jvalue
		for _, v := range a.lits {
			ok, err := c.eval(v, b)
			if err != nil {
				return nil, err
			}
			if ok {
				keep = append(keep, v)
			}
		}
		return litSch(keep), nil
	case a.kind != b.kind:
		return noneSch, nil
	}
	switch a.kind {
	case sNum:
		return andNum(a.num, b.num), nil
	case sStr:
		return andStr(a.str, b.str), nil
	case sArr:
		return c.andArr(a.arr, b.arr)
	case sObj:
		return c.andObj(a.obj, b.obj)
	}
	return a, nil // null, boolean
}

func andNum(a, b *numSch) *sch {
	n := &numSch{integer: a.integer || b.integer, frac: a.frac || b.frac, lo: a.lo, hi: a.hi, loEx: a.loEx, hiEx: a.hiEx}
	if b.lo != nil {
		n.tightenLo(b.lo, b.loEx)
	}
	if b.hi != nil {
		n.tightenHi(b.hi, b.hiEx)
	}
	n.mult = lcmRat(a.mult, b.mult)
	n.notMult = append(slices.Clone(a.notMult), b.notMult...)
	n.not = append(slices.Clone(a.not), b.not...)
	return n.normalize()
}

// normalize is n's atom, or sNone when its bounds leave no value.
func (n *numSch) normalize() *sch {
	if n.integer && n.frac {
		return noneSch
	}
	if n.lo != nil && n.hi != nil {
		switch n.lo.Cmp(n.hi) {
		case 1:
			return noneSch
		case 0:
			if n.loEx || n.hiEx {
				return noneSch
			}
		}
	}
	return numAtom(n)
}

// lcmRat is the least common multiple of two positive rationals (nil: none): lcm of the
// numerators over gcd of the denominators, both in lowest terms.
func lcmRat(a, b *big.Rat) *big.Rat {
	if a == nil {
		return b
	}
	if b == nil {
		return a
	}
	g := new(big.Int).GCD(nil, nil, a.Num(), b.Num())
	num := new(big.Int).Mul(a.Num(), b.Num())
	num.Quo(num, g)
	den := new(big.Int).GCD(nil, nil, a.Denom(), b.Denom())
	return new(big.Rat).SetFrac(num, den)
}

func andStr(a, b *strSch) *sch {
	s := &strSch{
		minLen:      max(a.minLen, b.minLen),
		maxLen:      minBound(a.maxLen, b.maxLen),
		patterns:    appendNew(a.patterns, b.patterns),
		formats:     appendNew(a.formats, b.formats),
		notPatterns: appendNew(a.notPatterns, b.notPatterns),
		notIn:       appendNew(a.notIn, b.notIn),
	}
	if s.maxLen >= 0 && s.minLen > s.maxLen {
		return noneSch
	}
	return strAtom(s)
}

// minBound is the tighter of two upper bounds (negative: none).
func minBound(a, b int) int {
	switch {
	case a < 0:
		return b
	case b < 0:
		return a
	}
	return min(a, b)
}

func appendNew(a, b []string) []string {
	out := slices.Clone(a)
	for _, x := range b {
		if !slices.Contains(out, x) {
			out = append(out, x)
		}
	}
	return out
}

func (c *conv) andArr(a, b *arrSch) (*sch, error) {
	r := &arrSch{
		minItems: max(a.minItems, b.minItems),
		maxItems: minBound(a.maxItems, b.maxItems),
		contains: append(slices.Clone(a.contains), b.contains...),
		unique:   a.unique || b.unique,
	}
	if r.maxItems >= 0 && r.minItems > r.maxItems {
		return noneSch, nil
	}
	item := func(x *arrSch, i int) *sch {
		if i < len(x.prefix) {
			return x.prefix[i]
		}
		if x.items == nil {
			return anySch
		}
		return x.items
	}
	for i := 0; i < max(len(a.prefix), len(b.prefix)); i++ {
		s, err := c.and(item(a, i), item(b, i))
		if err != nil {
			return nil, err
		}
		r.prefix = append(r.prefix, s)
		r.prefixNeg = append(r.prefixNeg, a.negAt(i) && b.negAt(i))
	}
	r.itemsNeg = (a.items == nil || a.itemsNeg) && (b.items == nil || b.itemsNeg)
	switch {
	case a.items == nil:
		r.items = b.items
	case b.items == nil:
		r.items = a.items
	default:
		s, err := c.and(a.items, b.items)
		if err != nil {
			return nil, err
		}
		r.items = s
	}
	return arrAtom(r).simplifyArr(), nil
}

// negAt reports whether item i of a has no schema that evaluates it (none, or one from a
// negation).
func (a *arrSch) negAt(i int) bool {
	if i < len(a.prefix) {
		return i < len(a.prefixNeg) && a.prefixNeg[i]
	}
	return a.items == nil || a.itemsNeg
}

// simplifyArr is sNone when the array cannot reach minItems (a required prefix item or
// the items after it match nothing).
func (s *sch) simplifyArr() *sch {
	a := s.arr
	for i := 0; i < a.minItems; i++ {
		if i < len(a.prefix) {
			if a.prefix[i].kind == sNone {
				return noneSch
			}
		} else {
			if a.items != nil && a.items.kind == sNone {
				return noneSch
			}
			break
		}
	}
	return s
}

func (c *conv) andObj(a, b *objSch) (*sch, error) {
	o := &objSch{
		required: appendNew(a.required, b.required),
		minProps: max(a.minProps, b.minProps),
		maxProps: minBound(a.maxProps, b.maxProps),
	}
	if o.maxProps >= 0 && o.minProps > o.maxProps {
		return noneSch, nil
	}
	for _, p := range a.props {
		other, err := c.propValue(b, p.name)
		if err != nil {
			return nil, err
		}
		s, err := c.and(p.s, other)
		if err != nil {
			return nil, err
		}
		o.props = append(o.props, propSch{p.name, s, p.neg && b.negDecl(p.name)})
	}
	for _, p := range b.props {
		if a.declares(p.name) {
			continue
		}
		other, err := c.propValue(a, p.name)
		if err != nil {
			return nil, err
		}
		s, err := c.and(other, p.s)
		if err != nil {
			return nil, err
		}
		o.props = append(o.props, propSch{p.name, s, p.neg})
	}
	// A name matching a pattern of one side and declared by neither is, on the other side,
	// additional or matching its patterns: giving the pattern the other side's
	// additionalProperties too is exact for the first case and stricter for the second.
	var err error
	if o.patterns, err = c.crossPatterns(a.patterns, b.additional, nil); err != nil {
		return nil, err
	}
	if o.patterns, err = c.crossPatterns(b.patterns, a.additional, o.patterns); err != nil {
		return nil, err
	}
	if o.additional, err = c.andOpt(a.additional, b.additional); err != nil {
		return nil, err
	}
	if o.names, err = c.andOpt(a.names, b.names); err != nil {
		return nil, err
	}
	return objAtom(o).simplifyObj(), nil
}

func (c *conv) crossPatterns(ps []propSch, other *sch, out []propSch) ([]propSch, error) {
	for _, p := range ps {
		s := p.s
		if other != nil {
			var err error
			if s, err = c.and(s, other); err != nil {
				return nil, err
			}
		}
		out = append(out, propSch{name: p.name, s: s})
	}
	return out, nil
}

// andOpt intersects optional schemas (nil: absent).
func (c *conv) andOpt(a, b *sch) (*sch, error) {
	switch {
	case a == nil:
		return b, nil
	case b == nil:
		return a, nil
	}
	return c.and(a, b)
}

// negDecl reports whether o has no declaration of name that evaluates it (none, or one from
// a negation).
func (o *objSch) negDecl(name string) bool {
	for _, p := range o.props {
		if p.name == name {
			return p.neg
		}
	}
	return true
}

func (o *objSch) declares(name string) bool {
	return slices.ContainsFunc(o.props, func(p propSch) bool { return p.name == name })
}

// simplifyObj is sNone when a required property can have no value.
func (s *sch) simplifyObj() *sch {
	o := s.obj
	for _, r := range o.required {
		for _, p := range o.props {
			if p.name == r && p.s.kind == sNone {
				return noneSch
			}
		}
	}
	if o.maxProps >= 0 && len(o.required) > o.maxProps {
		return noneSch
	}
	return s
}
