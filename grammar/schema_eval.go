package grammar

import (
	"math/big"
	"unicode/utf8"
)

// eval reports whether the value v is valid against s. It is exact for every constraint
// of the normal form (formats by their grammars' regular expressions, patterns by Go's
// regexp on the ECMA-262 translation), so intersecting literals with a schema keeps
// exactly the valid ones.
func (c *conv) eval(v *jvalue, s *sch) (bool, error) {
	if err := c.spend(1); err != nil {
		return false, err
	}
	switch s.kind {
	case sAny:
		return true, nil
	case sNone:
		return false, nil
	case sRef:
		c.depth++
		defer func() { c.depth-- }()
		if c.depth > maxRefDepth {
			return false, schemaErr(s.def.path, "references nested more than %d deep while checking a literal", maxRefDepth)
		}
		t, err := c.expand(s.def)
		if err != nil {
			return false, err
		}
		return c.eval(v, t)
	case sUnion:
		for _, a := range s.alts {
			ok, err := c.eval(v, a)
			if ok || err != nil {
				return ok, err
			}
		}
		return false, nil
	case sLit:
		for _, l := range s.lits {
			if jsonEqualValues(v, l) {
				return true, nil
			}
		}
		return false, nil
	}
	if kindOfValue(v) != s.kind {
		return false, nil
	}
	switch s.kind {
	case sNum:
		return evalNum(v, s.num), nil
	case sStr:
		return c.evalStr(v.str, s.str)
	case sArr:
		return c.evalArr(v, s.arr)
	case sObj:
		return c.evalObj(v, s.obj)
	}
	return true, nil
}

func evalNum(v *jvalue, n *numSch) bool {
	x, ok := ratOf(v)
	if !ok {
		return false
	}
	if n.integer && !x.IsInt() || n.frac && x.IsInt() {
		return false
	}
	if n.lo != nil {
		if c := x.Cmp(n.lo); c < 0 || c == 0 && n.loEx {
			return false
		}
	}
	if n.hi != nil {
		if c := x.Cmp(n.hi); c > 0 || c == 0 && n.hiEx {
			return false
		}
	}
	if n.mult != nil && !new(big.Rat).Quo(x, n.mult).IsInt() {
		return false
	}
	for _, m := range n.notMult {
		if new(big.Rat).Quo(x, m).IsInt() {
			return false
		}
	}
	for _, y := range n.not {
		if x.Cmp(y) == 0 {
			return false
		}
	}
	return true
}

func (c *conv) evalStr(s string, t *strSch) (bool, error) {
	n := utf8.RuneCountInString(s)
	if n < t.minLen || t.maxLen >= 0 && n > t.maxLen {
		return false, nil
	}
	for _, p := range t.patterns {
		if ok, err := c.rx.match(p, s); !ok || err != nil {
			return false, err
		}
	}
	for _, p := range t.notPatterns {
		if ok, err := c.rx.match(p, s); ok || err != nil {
			return false, err
		}
	}
	for _, f := range t.formats {
		if !c.rx.matchFormat(f, s) {
			return false, nil
		}
	}
	return !containsStr(t.notIn, s), nil
}

func (c *conv) evalArr(v *jvalue, a *arrSch) (bool, error) {
	n := len(v.vals)
	if n < a.minItems || a.maxItems >= 0 && n > a.maxItems {
		return false, nil
	}
	for i, e := range v.vals {
		s := a.items
		if i < len(a.prefix) {
			s = a.prefix[i]
		}
		if s != nil {
			if ok, err := c.eval(e, s); !ok || err != nil {
				return false, err
			}
		}
	}
	for _, ct := range a.contains {
		k := 0
		for _, e := range v.vals {
			ok, err := c.eval(e, ct.s)
			if err != nil {
				return false, err
			}
			if ok {
				k++
			}
		}
		if k < ct.min || ct.max >= 0 && k > ct.max {
			return false, nil
		}
	}
	if a.unique {
		for i := range v.vals {
			for j := i + 1; j < n; j++ {
				if jsonEqualValues(v.vals[i], v.vals[j]) {
					return false, nil
				}
			}
		}
	}
	return true, nil
}

func (c *conv) evalObj(v *jvalue, o *objSch) (bool, error) {
	n := len(v.keys)
	if n < o.minProps || o.maxProps >= 0 && n > o.maxProps {
		return false, nil
	}
	for _, r := range o.required {
		if _, ok := v.get(r); !ok {
			return false, nil
		}
	}
	for i, k := range v.keys {
		s, err := c.propValue(o, k)
		if err != nil {
			return false, err
		}
		if ok, err := c.eval(v.vals[i], s); !ok || err != nil {
			return false, err
		}
	}
	return true, nil
}

// propValue is the schema o applies to the value of a property named name (its
// declaration and every pattern it matches, else additionalProperties; sNone when
// propertyNames refuses the name).
func (c *conv) propValue(o *objSch, name string) (*sch, error) {
	s := anySch
	declared := false
	for _, p := range o.props {
		if p.name == name {
			s, declared = p.s, true
			break
		}
	}
	matched := false
	for _, p := range o.patterns {
		ok, err := c.rx.match(p.name, name)
		if err != nil {
			return nil, err
		}
		if ok {
			matched = true
			if s, err = c.and(s, p.s); err != nil {
				return nil, err
			}
		}
	}
	if !declared && !matched && o.additional != nil {
		var err error
		if s, err = c.and(s, o.additional); err != nil {
			return nil, err
		}
	}
	if o.names != nil {
		ok, err := c.eval(&jvalue{kind: 's', str: name}, o.names)
		if err != nil || !ok {
			return noneSch, err
		}
	}
	return s, nil
}

// jsonEqualValues is JSON Schema's equality: numbers by value (1 equals 1.0), objects
// whatever their key order, arrays item by item.
func jsonEqualValues(a, b *jvalue) bool {
	if a.kind != b.kind {
		return false
	}
	switch a.kind {
	case 'n':
		x, ok1 := ratOf(a)
		y, ok2 := ratOf(b)
		if !ok1 || !ok2 {
			return a.str == b.str
		}
		return x.Cmp(y) == 0
	case 's':
		return a.str == b.str
	case 'b':
		return a.b == b.b
	case 'a':
		if len(a.vals) != len(b.vals) {
			return false
		}
		for i := range a.vals {
			if !jsonEqualValues(a.vals[i], b.vals[i]) {
				return false
			}
		}
		return true
	case 'o':
		if len(a.keys) != len(b.keys) {
			return false
		}
		for i, k := range a.keys {
			w, ok := b.get(k)
			if !ok || !jsonEqualValues(a.vals[i], w) {
				return false
			}
		}
		return true
	}
	return true
}
