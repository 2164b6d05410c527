package grammar

import "slices"

// ifThenElse is (if ∧ then) ∨ (¬if ∧ else); when ¬if has no exact form, the part of it
// that does, plus (then ∧ else), which is valid whichever way if goes.
func (c *conv) ifThenElse(v *jvalue, base, path string) (*sch, error) {
	get := func(k string) (*sch, error) {
		x, ok := v.get(k)
		if !ok {
			return anySch, nil
		}
		return c.build(x, base, path+"/"+k)
	}
	cond, err := get("if")
	if err != nil {
		return nil, err
	}
	then, err := get("then")
	if err != nil {
		return nil, err
	}
	els, err := get("else")
	if err != nil {
		return nil, err
	}
	if then.kind == sAny && els.kind == sAny {
		return anySch, nil
	}
	yes, err := c.and(cond, then)
	if err != nil {
		return nil, err
	}
	notCond, exact, err := c.neg(cond)
	if err != nil {
		return nil, err
	}
	no, err := c.and(notCond, els)
	if err != nil {
		return nil, err
	}
	if exact {
		return c.checkUnion(union(yes, no), path)
	}
	if err := c.approx(path+"/if", "if/then/else", "the complement of if has no exact grammar"); err != nil {
		return nil, err
	}
	both, err := c.and(then, els)
	if err != nil {
		return nil, err
	}
	return c.checkUnion(union(yes, no, both), path)
}

// oneOf is the union of the branches when no two can hold together (provably disjoint,
// the usual case: different types, or discriminating consts). Otherwise the branches are
// split by the JSON type of the values (a value has one type, so oneOf is the union over
// types of oneOf of each branch's part of that type: branches that only constrain objects
// overlap on every other type, which leaves their objects disjoint), and within a type each
// branch is intersected with the complement of those it overlaps: exact where the
// complement has a grammar, with a part of it otherwise (an approximation).
func (c *conv) oneOf(bs []*sch, path string) (*sch, error) {
	if out, exact, err := c.oneOfSameType(bs); err != nil || exact && out != nil {
		return out, err
	}
	parts := make([][typeKinds]*sch, len(bs))
	for i, b := range bs {
		var err error
		if parts[i], err = c.byType(b); err != nil {
			return nil, err
		}
	}
	var out []*sch
	allExact := true
	for k := range typeKinds {
		col := make([]*sch, len(bs))
		for i := range bs {
			col[i] = parts[i][k]
		}
		r, exact, err := c.oneOfSameType(col)
		if err != nil {
			return nil, err
		}
		if r == nil {
			if r, exact, err = c.oneOfNeg(col); err != nil {
				return nil, err
			}
		}
		allExact = allExact && exact
		out = append(out, r)
	}
	if !allExact {
		if err := c.approx(path, "oneOf", "overlapping branches whose complements have no exact grammar"); err != nil {
			return nil, err
		}
	}
	return c.checkUnion(union(out...), path)
}

// oneOfSameType is the union of bs when no two of them overlap (nil: some do).
func (c *conv) oneOfSameType(bs []*sch) (*sch, bool, error) {
	for i := range bs {
		for j := i + 1; j < len(bs); j++ {
			x, err := c.and(bs[i], bs[j])
			if err != nil {
				return nil, false, err
			}
			if x.kind != sNone {
				return nil, false, nil
			}
		}
	}
	out, err := c.checkUnion(union(bs...), "oneOf")
	return out, true, err
}

// oneOfNeg intersects each branch with the complements of the branches it overlaps.
func (c *conv) oneOfNeg(bs []*sch) (*sch, bool, error) {
	out := make([]*sch, len(bs))
	allExact := true
	for i, b := range bs {
		acc := b
		for j, o := range bs {
			if j == i || acc.kind == sNone {
				continue
			}
			x, err := c.and(acc, o)
			if err != nil {
				return nil, false, err
			}
			if x.kind == sNone {
				continue
			}
			n, exact, err := c.neg(o)
			if err != nil {
				return nil, false, err
			}
			allExact = allExact && exact
			if acc, err = c.and(acc, n); err != nil {
				return nil, false, err
			}
		}
		out[i] = acc
	}
	return union(out...), allExact, nil
}

// typeKinds counts the JSON types of byType: null, boolean, number, string, array, object.
const typeKinds = 6

// byType splits s into its parts of each JSON type (index: kind - sNull).
func (c *conv) byType(s *sch) ([typeKinds]*sch, error) {
	var out [typeKinds]*sch
	for k := range out {
		out[k] = noneSch
	}
	switch s.kind {
	case sNone:
	case sAny:
		for k, t := range []string{"null", "boolean", "number", "string", "array", "object"} {
			out[k] = typeAtom(t)
		}
	case sRef:
		t, err := c.expand(s.def)
		if err != nil {
			return out, err
		}
		return c.byType(t)
	case sUnion:
		for _, a := range s.alts {
			p, err := c.byType(a)
			if err != nil {
				return out, err
			}
			for k := range out {
				out[k] = union(out[k], p[k])
			}
		}
	case sLit:
		var vals [typeKinds][]*jvalue
		for _, v := range s.lits {
			k := kindOfValue(v) - sNull
			vals[k] = append(vals[k], v)
		}
		for k := range out {
			out[k] = litSch(vals[k])
		}
	default:
		out[s.kind-sNull] = s
	}
	return out, nil
}

// dependencies converts dependentRequired, dependentSchemas and draft 4–7's dependencies:
// each "if name is present, then D" is the exact union of "name absent" and "name present
// and D".
func (c *conv) dependencies(x *jvalue, key, base, path string) (*sch, error) {
	if x.kind != 'o' {
		return nil, schemaErr(path, "must be an object")
	}
	if len(x.keys) > 8 {
		return nil, schemaErr(path, "more than 8 dependencies are not supported (each doubles the grammar)")
	}
	acc := anySch
	for i, name := range x.keys {
		d := x.vals[i]
		var then *sch
		if d.kind == 'a' && key != "dependentSchemas" {
			req, err := stringList(d, path+"/"+name)
			if err != nil {
				return nil, err
			}
			then = objAtom(&objSch{required: append([]string{name}, req...), maxProps: -1})
		} else if key != "dependentRequired" {
			s, err := c.build(d, base, path+"/"+name)
			if err != nil {
				return nil, err
			}
			if then, err = c.and(objAtom(&objSch{required: []string{name}, maxProps: -1}), s); err != nil {
				return nil, err
			}
		} else {
			return nil, schemaErr(path+"/"+name, "must be an array of names")
		}
		absent := objAtom(&objSch{props: []propSch{{name: name, s: noneSch}}, maxProps: -1})
		alt := union(absent, then, nullSch, boolSch, numAtom(&numSch{}), typeAtom("string"), typeAtom("array"))
		var err error
		if acc, err = c.and(acc, alt); err != nil {
			return nil, err
		}
	}
	return c.checkUnion(acc, path)
}

// unevaluated applies unevaluatedProperties/unevaluatedItems: in the normal form, the
// properties a branch evaluates are those its atom declares, so an atom without
// additionalProperties gets the keyword's schema as its additionalProperties (and an
// array atom without items, as its items). This under-counts what a passing sibling
// branch of anyOf evaluates, so it may refuse valid values, never accept invalid ones.
func (c *conv) unevaluated(v *jvalue, s *sch, base, path string) (*sch, error) {
	up, hasUP := v.get("unevaluatedProperties")
	ui, hasUI := v.get("unevaluatedItems")
	if !hasUP && !hasUI {
		return s, nil
	}
	var ps, is *sch
	var err error
	if hasUP {
		if ps, err = c.build(up, base, path+"/unevaluatedProperties"); err != nil {
			return nil, err
		}
	}
	if hasUI {
		if is, err = c.build(ui, base, path+"/unevaluatedItems"); err != nil {
			return nil, err
		}
	}
	return c.mapAtoms(s, func(a *sch) (*sch, error) {
		var err error
		switch {
		case a.kind == sObj && ps != nil:
			o := *a.obj
			if o.additional == nil {
				o.additional = ps
			}
			o.props = slices.Clone(o.props)
			for i, p := range o.props {
				if p.neg {
					if o.props[i].s, err = c.and(p.s, ps); err != nil {
						return nil, err
					}
				}
			}
			return objAtom(&o).simplifyObj(), nil
		case a.kind == sArr && is != nil:
			r := *a.arr
			switch {
			case r.items == nil:
				r.items = is
			case r.itemsNeg:
				if r.items, err = c.and(r.items, is); err != nil {
					return nil, err
				}
			}
			r.prefix = slices.Clone(r.prefix)
			for i := range r.prefix {
				if i < len(r.prefixNeg) && r.prefixNeg[i] {
					if r.prefix[i], err = c.and(r.prefix[i], is); err != nil {
						return nil, err
					}
				}
			}
			return arrAtom(&r).simplifyArr(), nil
		}
		return a, nil
	})
}

// mapAtoms applies f to each atom of s (references expanded, unions mapped alternative by
// alternative).
func (c *conv) mapAtoms(s *sch, f func(*sch) (*sch, error)) (*sch, error) {
	switch s.kind {
	case sRef:
		t, err := c.expand(s.def)
		if err != nil {
			return nil, err
		}
		return c.mapAtoms(t, f)
	case sUnion:
		out := make([]*sch, len(s.alts))
		for i, a := range s.alts {
			m, err := c.mapAtoms(a, f)
			if err != nil {
				return nil, err
			}
			out[i] = m
		}
		return union(out...), nil
	case sAny:
		var alts []*sch
		for _, t := range []string{"null", "boolean", "number", "string", "array", "object"} {
			a, err := f(typeAtom(t))
			if err != nil {
				return nil, err
			}
			alts = append(alts, a)
		}
		return union(alts...), nil
	}
	return f(s)
}
