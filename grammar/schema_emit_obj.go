package grammar

import (
	"fmt"
	"slices"
)

// object emits an object atom: "{" members "}" where the members are the declared
// properties in order (required ones always, optional ones maybe; a property whose schema
// is false never), then other properties if the schema allows them (additionalProperties
// absent, true or a schema; patternProperties), with keys that are not declared ones.
// Declared values are checked against the patterns their names match and against
// propertyNames. With minProperties/maxProperties the members count (see membersCounted).
// Under strict every object must say additionalProperties: false.
func (e *emitter) object(o *objSch, hint string) (*node, error) {
	c := e.c
	if c.strict && (o.additional == nil || o.additional.kind != sNone) {
		return nil, schemaErr(hint, "strict needs additionalProperties: false on every object (as OpenAI's strict mode)")
	}
	if len(o.props) == 0 && len(o.required) == 0 && len(o.patterns) == 0 && o.additional == nil && !c.noExtra &&
		o.names == nil && o.minProps == 0 && o.maxProps < 0 {
		return ref("object"), nil
	}
	var declared []string
	for _, p := range o.props {
		declared = append(declared, p.name)
	}
	declared = appendNew(declared, o.required)
	var kvs []*node
	var required []bool
	for _, name := range declared {
		v, err := c.propValue(o, name)
		if err != nil {
			return nil, err
		}
		req := slices.Contains(o.required, name)
		if v.kind == sNone {
			if req {
				return class(false), nil
			}
			continue
		}
		vn, err := e.emit(v, hint+"-"+name)
		if err != nil {
			return nil, err
		}
		kvs = append(kvs, e.newRule(hint+"-"+name+"-kv", seq(lit(jsonQuote(name)), ref("space"), lit(":"), ref("space"), vn)))
		required = append(required, req)
	}
	extra, err := e.extras(o, declared, hint)
	if err != nil {
		return nil, err
	}
	var members *node
	if o.minProps > 0 || o.maxProps >= 0 {
		if members, err = e.membersCounted(hint, kvs, required, extra, o.minProps, o.maxProps); err != nil {
			return nil, err
		}
	} else {
		members = e.members(hint, kvs, required, extra)
	}
	return e.newRule(hint, seq(lit("{"), ref("space"), members, lit("}"), ref("space"))), nil
}

// extras is the grammar of one property that is not declared (nil: none is allowed). A key
// matching a pattern takes that pattern's schema (and the schemas of the patterns it
// overlaps, an approximation when they do); another key takes additionalProperties.
// Without patterns or propertyNames the key is any string but the declared names (up to
// where it differs from them, unescaped); otherwise an automaton of the allowed keys.
func (e *emitter) extras(o *objSch, declared []string, hint string) (*node, error) {
	c := e.c
	if o.additional == nil && c.noExtra {
		cp := *o
		cp.additional = noneSch
		o = &cp
	}
	if o.names != nil && o.names.kind == sNone || len(o.patterns) == 0 && o.additional != nil && o.additional.kind == sNone {
		return nil, nil
	}
	kv := func(key, value *node) *node {
		return seq(lit(`"`), key, lit(`"`), ref("space"), lit(":"), ref("space"), value)
	}
	if len(o.patterns) == 0 && (o.names == nil || o.names.kind == sAny) {
		v, err := e.emitOpt(o.additional, hint+"-additional")
		if err != nil {
			return nil, err
		}
		return e.newRule(hint+"-additional-kv", kv(e.notInNode(declared, 0, lenInf, ref("char")), v)), nil
	}
	base, err := literalsDFA(declared)
	if err != nil {
		return nil, schemaErr(hint, "property names: %v", err)
	}
	base = base.complement()
	if o.names != nil {
		nd, err := c.keyDFA(o.names)
		if err != nil {
			return nil, schemaErr(hint+"/propertyNames", "%v", err)
		}
		if nd != nil {
			if base, err = base.and(nd); err != nil {
				return nil, schemaErr(hint, "property names: %v", err)
			}
		}
	}
	pats := make([]*rxDFA, len(o.patterns))
	for i, p := range o.patterns {
		t, err := c.rx.parse(p.name)
		if err != nil {
			return nil, schemaErr(hint, "%v", err)
		}
		if pats[i], err = dfaOf(searchWrap(t)); err != nil {
			return nil, schemaErr(hint, "patternProperties %q: %v", p.name, err)
		}
	}
	var alts []*node
	others := base
	for _, pd := range pats {
		if others, err = others.and(pd.complement()); err != nil {
			return nil, schemaErr(hint, "patternProperties: %v", err)
		}
	}
	regions, exact, err := patternRegions(base, pats)
	if err != nil {
		return nil, schemaErr(hint, "patternProperties: %v", err)
	}
	if !exact {
		if err := c.approx(hint, "patternProperties", "more than 4 patterns: a key takes the schemas of every pattern that overlaps its own"); err != nil {
			return nil, err
		}
	}
	for ri, r := range regions {
		v := anySch
		for _, i := range r.patterns {
			if v, err = c.and(v, o.patterns[i].s); err != nil {
				return nil, err
			}
		}
		if v.kind == sNone {
			continue
		}
		vn, err := e.emit(v, fmt.Sprintf("%s-pattern%d", hint, ri))
		if err != nil {
			return nil, err
		}
		alts = append(alts, kv(e.dfaNode(r.keys, fmt.Sprintf("%s-key%d", hint, ri)), vn))
	}
	if (o.additional == nil || o.additional.kind != sNone) && !others.empty() {
		v, err := e.emitOpt(o.additional, hint+"-additional")
		if err != nil {
			return nil, err
		}
		alts = append(alts, kv(e.dfaNode(others, hint+"-other-key"), v))
	}
	if len(alts) == 0 {
		return nil, nil
	}
	return e.newRule(hint+"-extra-kv", alt(alts...)), nil
}

// emitOpt emits an optional schema (nil: any value).
func (e *emitter) emitOpt(s *sch, hint string) (*node, error) {
	if s == nil {
		return ref("value"), nil
	}
	return e.emit(s, hint)
}

// members is the comma-separated members: a subsequence of kvs in order holding every
// required one, then additional members (extra, when not nil). S_i ("nothing written yet, at
// member i") and T_i ("something written") keep the commas right: T_i ::= ("," kv_i)? T_i+1
// (the group not optional when kv_i is required), S_i ::= kv_i T_i+1 | S_i+1 (only the first
// alternative when required).
func (e *emitter) members(name string, kvs []*node, required []bool, extra *node) *node {
	comma := seq(lit(","), ref("space"))
	var tail *node = empty() // T_n: more additional members after something was written
	if extra != nil {
		tail = star(seq(comma, extra))
	}
	ts := make([]*node, len(kvs)+1)
	ts[len(kvs)] = tail
	for i := len(kvs) - 1; i >= 1; i-- {
		kv := seq(comma, kvs[i])
		if !required[i] {
			kv = opt(kv)
		}
		ts[i] = e.newRule(fmt.Sprintf("%s-t%d", name, i), cat(kv, ts[i+1]))
	}
	var members *node = empty() // S_n
	if extra != nil {
		members = opt(seq(extra, tail))
	}
	for i := len(kvs) - 1; i >= 0; i-- {
		first := cat(kvs[i], ts[i+1])
		if required[i] {
			members = first
		} else {
			members = alt(first, members)
		}
	}
	return members
}

// cat is a then b, leaving out an empty b.
func cat(a, b *node) *node {
	if !nonEmpty(b) {
		return a
	}
	return seq(a, b)
}

// membersCounted is members with a count of properties: R(i, k, started) is the members
// from declared property i on, after k (saturated at the bound that matters) were
// written. Additional members make up the rest of the count, but at most one is counted
// toward minProperties: a grammar cannot tell two additional keys apart, and a repeated
// key counts once (so an object needing two or more additional properties is refused, an
// approximation).
func (e *emitter) membersCounted(name string, kvs []*node, required []bool, extra *node, minP, maxP int) (*node, error) {
	n := len(kvs)
	capK := minP
	if maxP >= 0 {
		capK = maxP
	}
	capK = min(capK, n+1)
	if (n+1)*(capK+1) > 4000 {
		return nil, schemaErr(name, "minProperties/maxProperties with %d properties need too large a grammar", n)
	}
	comma := seq(lit(","), ref("space"))
	memo := map[[3]int]*node{}
	approxed := false
	var r func(i, k int, started bool) *node
	r = func(i, k int, started bool) *node {
		key := [3]int{i, k, 0}
		if started {
			key[2] = 1
		}
		if x, ok := memo[key]; ok {
			return x
		}
		var body *node
		if i == n {
			lo, hi := max(minP-k, 0), -1
			if maxP >= 0 {
				hi = maxP - k
			}
			switch {
			case lo >= 2 || extra == nil && lo > 0:
				approxed = approxed || lo >= 2 && extra != nil
				body = class(false)
			case extra == nil || hi == 0:
				body = empty()
			case started:
				body = rep(seq(comma, extra), lo, hi)
			default:
				more := -1
				if hi > 0 {
					more = hi - 1
				}
				body = seq(extra, rep(seq(comma, extra), 0, more))
				if lo == 0 {
					body = opt(body)
				}
			}
		} else {
			var alts []*node
			if maxP < 0 || k < maxP {
				kv := kvs[i]
				if started {
					kv = seq(comma, kv)
				}
				alts = append(alts, seq(kv, r(i+1, min(k+1, capK), true)))
			}
			if !required[i] {
				alts = append(alts, r(i+1, k, started))
			}
			if len(alts) == 0 {
				alts = append(alts, class(false))
			}
			body = alt(alts...)
		}
		x := e.newRule(fmt.Sprintf("%s-c%d-%d", name, i, k), body)
		memo[key] = x
		return x
	}
	out := r(0, 0, false)
	if approxed {
		if err := e.c.approx(name, "minProperties", "two or more additional properties would be needed, and a grammar cannot keep their keys distinct"); err != nil {
			return nil, err
		}
	}
	return out, nil
}
