package grammar

import (
	"math/big"
)

// neg is the complement of s (not), or a part of it when the complement has no exact
// form here (exact false): a negation is used only where a subset of it is safe (oneOf,
// if/then/else) or refused (not). The complement of an atom of type T is the other types,
// plus T with one of its constraints negated: ¬(x ≥ lo) is x < lo, ¬minLength is a
// maxLength, ¬pattern a notPattern, ¬required a property that must be absent, ¬multipleOf
// a notMult, and so on. Constraints without an exact complement here (uniqueItems,
// additionalProperties, patternProperties, propertyNames, contains beyond one item)
// contribute nothing.
func (c *conv) neg(s *sch) (*sch, bool, error) {
	if err := c.spend(1); err != nil {
		return nil, false, err
	}
	switch s.kind {
	case sAny:
		return noneSch, true, nil
	case sNone:
		return anySch, true, nil
	case sRef:
		c.depth++
		defer func() { c.depth-- }()
		if c.depth > maxRefDepth {
			return nil, false, schemaErr(s.def.path, "references nested more than %d deep inside not, oneOf or if", maxRefDepth)
		}
		t, err := c.expand(s.def)
		if err != nil {
			return nil, false, err
		}
		return c.neg(t)
	case sUnion:
		acc, exact := anySch, true
		for _, a := range s.alts {
			n, ex, err := c.neg(a)
			if err != nil {
				return nil, false, err
			}
			exact = exact && ex
			if acc, err = c.and(acc, n); err != nil {
				return nil, false, err
			}
		}
		return acc, exact, nil
	case sLit:
		return negLits(s.lits)
	}
	parts := otherTypes(s.kind)
	exact := true
	var more []*sch
	switch s.kind {
	case sNum:
		more, exact = negNum(s.num)
	case sStr:
		more = negStr(s.str)
	case sArr:
		var err error
		if more, exact, err = c.negArr(s.arr); err != nil {
			return nil, false, err
		}
	case sObj:
		var err error
		if more, exact, err = c.negObj(s.obj); err != nil {
			return nil, false, err
		}
	}
	return union(append(parts, more...)...), exact, nil
}

// otherTypes are the unconstrained atoms of every type but k.
func otherTypes(k schKind) []*sch {
	var out []*sch
	for _, t := range []string{"null", "boolean", "number", "string", "array", "object"} {
		if a := typeAtom(t); a.kind != k {
			out = append(out, a)
		}
	}
	return out
}

// negLits is every value but the literals: strings and numbers excluded one by one,
// booleans and null by type; objects and arrays other than given ones have no exact form
// (all objects or arrays are left out then).
func negLits(lits []*jvalue) (*sch, bool, error) {
	str := &strSch{maxLen: -1}
	num := &numSch{}
	seen := map[schKind]bool{}
	var bools []bool
	exact := true
	for _, l := range lits {
		k := kindOfValue(l)
		seen[k] = true
		switch k {
		case sStr:
			str.notIn = append(str.notIn, l.str)
		case sNum:
			if r, ok := ratOf(l); ok {
				num.not = append(num.not, r)
			}
		case sBool:
			bools = append(bools, l.b)
		case sArr, sObj:
			exact = false
		}
	}
	var alts []*sch
	if !seen[sNull] {
		alts = append(alts, nullSch)
	}
	switch {
	case !seen[sBool]:
		alts = append(alts, boolSch)
	case len(bools) == 1:
		alts = append(alts, litSch([]*jvalue{{kind: 'b', b: !bools[0]}}))
	}
	alts = append(alts, numAtom(num), strAtom(str))
	if !seen[sArr] {
		alts = append(alts, typeAtom("array"))
	}
	if !seen[sObj] {
		alts = append(alts, typeAtom("object"))
	}
	return union(alts...), exact, nil
}

func negNum(n *numSch) ([]*sch, bool) {
	var out []*sch
	if n.mult != nil {
		out = append(out, numAtom(&numSch{notMult: []*big.Rat{n.mult}}))
	}
	for _, m := range n.notMult {
		out = append(out, numAtom(&numSch{mult: m}))
	}
	if n.integer {
		out = append(out, numAtom(&numSch{frac: true}))
	}
	if n.frac {
		out = append(out, numAtom(&numSch{integer: true}))
	}
	if n.lo != nil {
		out = append(out, numAtom(&numSch{hi: n.lo, hiEx: !n.loEx}))
	}
	if n.hi != nil {
		out = append(out, numAtom(&numSch{lo: n.hi, loEx: !n.hiEx}))
	}
	var vals []*jvalue
	for _, x := range n.not {
		if str := ratString(x); str != "" {
			vals = append(vals, &jvalue{kind: 'n', str: str})
		}
	}
	if len(vals) > 0 {
		out = append(out, litSch(vals))
	}
	return out, true
}

// ratString is x written as a JSON number in plain decimal (no exponent), or "" when that
// needs more than 60 fraction digits.
func ratString(x *big.Rat) string {
	if x.IsInt() {
		return x.Num().String()
	}
	t := new(big.Rat).Set(x)
	ten := big.NewRat(10, 1)
	for k := 1; k <= 60; k++ {
		if t.Mul(t, ten); t.IsInt() {
			return x.FloatString(k)
		}
	}
	return ""
}

func negStr(s *strSch) []*sch {
	var out []*sch
	if s.minLen > 0 {
		out = append(out, strAtom(&strSch{maxLen: s.minLen - 1}))
	}
	if s.maxLen >= 0 {
		out = append(out, strAtom(&strSch{minLen: s.maxLen + 1, maxLen: -1}))
	}
	for _, p := range s.patterns {
		out = append(out, strAtom(&strSch{maxLen: -1, notPatterns: []string{p}}))
	}
	for _, p := range s.notPatterns {
		out = append(out, strAtom(&strSch{maxLen: -1, patterns: []string{p}}))
	}
	for _, f := range s.formats {
		out = append(out, strAtom(&strSch{maxLen: -1, notPatterns: []string{`^(?:` + formatRegex[f] + `)$`}}))
	}
	var vals []*jvalue
	for _, v := range s.notIn {
		vals = append(vals, &jvalue{kind: 's', str: v})
	}
	if len(vals) > 0 {
		out = append(out, litSch(vals))
	}
	return out
}

func (c *conv) negArr(a *arrSch) ([]*sch, bool, error) {
	var out []*sch
	exact := !a.unique
	if a.minItems > 0 {
		out = append(out, arrAtom(&arrSch{maxItems: a.minItems - 1}))
	}
	if a.maxItems >= 0 {
		out = append(out, arrAtom(&arrSch{minItems: a.maxItems + 1, maxItems: -1}))
	}
	for i, p := range a.prefix {
		n, ex, err := c.neg(p)
		if err != nil {
			return nil, false, err
		}
		exact = exact && ex
		prefix := make([]*sch, i+1)
		negs := make([]bool, i+1)
		for j := range i {
			prefix[j], negs[j] = anySch, true
		}
		prefix[i], negs[i] = n, true
		out = append(out, arrAtom(&arrSch{minItems: i + 1, maxItems: -1, prefix: prefix, prefixNeg: negs}))
	}
	if a.items != nil {
		n, ex, err := c.neg(a.items)
		if err != nil {
			return nil, false, err
		}
		if len(a.prefix) == 0 {
			exact = exact && ex
			out = append(out, arrAtom(&arrSch{maxItems: -1, contains: []containsSch{{n, 1, -1}}}))
		} else {
			exact = false
		}
	}
	for _, ct := range a.contains {
		if ct.min != 1 || ct.max >= 0 {
			exact = false
			continue
		}
		n, ex, err := c.neg(ct.s)
		if err != nil {
			return nil, false, err
		}
		exact = exact && ex
		out = append(out, arrAtom(&arrSch{maxItems: -1, items: n, itemsNeg: true}))
	}
	return out, exact, nil
}

func (c *conv) negObj(o *objSch) ([]*sch, bool, error) {
	var out []*sch
	exact := len(o.patterns) == 0 && o.additional == nil && o.names == nil
	for _, r := range o.required {
		out = append(out, objAtom(&objSch{maxProps: -1, props: []propSch{{r, noneSch, true}}}))
	}
	for _, p := range o.props {
		n, ex, err := c.neg(p.s)
		if err != nil {
			return nil, false, err
		}
		exact = exact && ex
		out = append(out, objAtom(&objSch{maxProps: -1, props: []propSch{{p.name, n, true}}, required: []string{p.name}}))
	}
	if o.minProps > 0 {
		out = append(out, objAtom(&objSch{maxProps: o.minProps - 1}))
	}
	if o.maxProps >= 0 {
		out = append(out, objAtom(&objSch{minProps: o.maxProps + 1, maxProps: -1}))
	}
	return out, exact, nil
}
