package grammar

import (
	"fmt"
)

// array emits an array atom: "[" items "]" with prefixItems first (each present only if
// the ones before it are), then items, within minItems..maxItems (a counted repetition,
// so large bounds cost no states). contains: the items that match it are placed among
// the others (exact without prefixItems and length bounds; otherwise the matching items
// come first, an approximation). uniqueItems: exact when at most one item is allowed;
// items from a finite set of values are listed in the set's order, each at most once
// (an approximation: other orders are refused); otherwise at most one item (an
// approximation).
func (e *emitter) array(a *arrSch, hint string) (*node, error) {
	c := e.c
	a = clampPrefix(a)
	if a.unique && (a.maxItems < 0 || a.maxItems > 1) {
		if x, ok, err := e.uniqueList(a, hint); ok || err != nil {
			return x, err
		}
		if err := c.approx(hint, "uniqueItems", "a grammar cannot keep items distinct: at most one item"); err != nil {
			return nil, err
		}
		r := *a
		r.maxItems = 1
		if r.minItems > 1 {
			return class(false), nil
		}
		a = clampPrefix(&r)
	}
	var list *node
	var err error
	if len(a.contains) > 0 {
		list, err = e.containsList(a, hint)
	} else {
		list, err = e.itemList(a, hint)
	}
	if err != nil || list == nil {
		return class(false), err
	}
	return e.newRule(hint, seq(lit("["), ref("space"), list, lit("]"), ref("space"))), nil
}

// clampPrefix drops the prefix items that maxItems leaves no room for.
func clampPrefix(a *arrSch) *arrSch {
	if a.maxItems >= 0 && len(a.prefix) > a.maxItems {
		r := *a
		r.prefix = a.prefix[:a.maxItems]
		return &r
	}
	return a
}

// itemNode emits an item schema as one rule (so repetitions have a single unit).
func (e *emitter) itemNode(s *sch, hint string) (*node, error) {
	n, err := e.emit(s, hint)
	if err != nil || n.kind == nRef {
		return n, err
	}
	return e.newRule(hint, n), nil
}

// itemList is the items of a (nil: no list is possible): prefix item i is followed by
// the rest only when present, optional from minItems on; after the prefix, items repeat
// within the remaining counts.
func (e *emitter) itemList(a *arrSch, hint string) (*node, error) {
	comma := seq(lit(","), ref("space"))
	items := a.items
	if items == nil {
		items = anySch
	}
	k := len(a.prefix)
	var rest *node = empty()
	lo, hi := max(a.minItems-k, 0), -1
	if a.maxItems >= 0 {
		hi = a.maxItems - k
	}
	if hi != 0 && items.kind != sNone {
		it, err := e.itemNode(items, hint+"-item")
		if err != nil {
			return nil, err
		}
		if k == 0 { // the first item has no comma
			more := -1
			if hi > 0 {
				more = hi - 1
			}
			rest = seq(it, rep(seq(comma, it), max(lo-1, 0), more))
			if lo == 0 {
				rest = opt(rest)
			}
		} else {
			rest = rep(seq(comma, it), lo, hi)
		}
	} else if lo > 0 {
		return nil, nil
	}
	// prefix items from the last: tail(i) = "," p_i tail(i+1), optional from minItems on
	tail := rest
	for i := k - 1; i >= 0; i-- {
		if a.prefix[i].kind == sNone {
			if i < a.minItems {
				return nil, nil
			}
			tail = empty()
			continue
		}
		p, err := e.emit(a.prefix[i], fmt.Sprintf("%s-%d", hint, i))
		if err != nil {
			return nil, err
		}
		step := cat(p, tail)
		if i > 0 {
			step = seq(comma, step)
		}
		if i >= a.minItems {
			step = opt(step)
		}
		tail = step
	}
	return tail, nil
}

// listPart is count min..max (max < 0: any) of one item schema, in a sequence of parts.
type listPart struct {
	item     *node
	min, max int
}

// listNode is a comma-separated sequence of the parts: F(j) before anything is written
// (the first item takes no comma), G(j) after.
func listNode(parts []listPart) *node {
	comma := seq(lit(","), ref("space"))
	g := empty()
	f := empty()
	for j := len(parts) - 1; j >= 0; j-- {
		p := parts[j]
		gj := cat(rep(seq(comma, p.item), p.min, p.max), g)
		more := -1
		if p.max > 0 {
			more = p.max - 1
		}
		start := cat(seq(p.item, rep(seq(comma, p.item), max(p.min-1, 0), more)), g)
		if p.min > 0 {
			f = start
		} else if p.max != 0 {
			f = alt(start, f)
		}
		g = gj
	}
	return f
}

// containsList is the items of an array with contains: with one clause (S, lo..hi) and no
// prefix or length bounds, (N* C){lo} I* when hi is unbounded and (N* C){lo..hi} N*
// (unrolled) otherwise, where C = items ∧ S and N = items ∧ ¬S (exact when ¬S is); else the
// lo matching items first, then the others (an approximation).
func (e *emitter) containsList(a *arrSch, hint string) (*node, error) {
	c := e.c
	if len(a.contains) > 1 || len(a.prefix) > 0 {
		return nil, schemaErr(hint, "contains together with prefixItems or another contains is not supported")
	}
	ct := a.contains[0]
	items := a.items
	if items == nil {
		items = anySch
	}
	cs, err := c.and(items, ct.s)
	if err != nil {
		return nil, err
	}
	notS, exact, err := c.neg(ct.s)
	if err != nil {
		return nil, err
	}
	ns, err := c.and(items, notS)
	if err != nil {
		return nil, err
	}
	cn, err := e.itemNode(cs, hint+"-match")
	if err != nil {
		return nil, err
	}
	nn, err := e.itemNode(ns, hint+"-other")
	if err != nil {
		return nil, err
	}
	in, err := e.itemNode(items, hint+"-item")
	if err != nil {
		return nil, err
	}
	lo, hi := ct.min, ct.max
	simple := a.minItems == 0 && a.maxItems < 0 && lo <= 8 && (hi < 0 || hi <= 8)
	if !simple || !exact {
		if err := c.approx(hint, "contains", "the matching items come first, or the complement of contains has no exact grammar"); err != nil {
			return nil, err
		}
	}
	var parts []listPart
	if !simple {
		rlo, rhi := max(a.minItems-lo, 0), -1
		if a.maxItems >= 0 {
			if rhi = a.maxItems - lo; rhi < 0 {
				return nil, nil
			}
		}
		other := in
		if hi >= 0 {
			other = nn
		}
		parts = []listPart{{cn, lo, lo}, {other, rlo, rhi}}
		return listNode(parts), nil
	}
	for i := 0; i < lo; i++ {
		parts = append(parts, listPart{nn, 0, -1}, listPart{cn, 1, 1})
	}
	if hi < 0 {
		parts = append(parts, listPart{in, 0, -1})
		return listNode(parts), nil
	}
	// up to hi-lo more matches, each optional: unrolled as alternatives of whole lists
	var alts []*node
	for extra := 0; extra <= hi-lo; extra++ {
		ps := append([]listPart(nil), parts...)
		for i := 0; i < extra; i++ {
			ps = append(ps, listPart{nn, 0, -1}, listPart{cn, 1, 1})
		}
		alts = append(alts, listNode(append(ps, listPart{nn, 0, -1})))
	}
	return alt(alts...), nil
}

// uniqueList handles uniqueItems when every item comes from a finite set of values: the
// values in the set's order, each at most once, counted within minItems..maxItems (ok
// false: the items are not such a set).
func (e *emitter) uniqueList(a *arrSch, hint string) (*node, bool, error) {
	c := e.c
	if len(a.prefix) > 0 || a.items == nil || len(a.contains) > 0 {
		return nil, false, nil
	}
	items := a.items
	if items.kind == sRef {
		t, err := c.expand(items.def)
		if err != nil {
			return nil, false, err
		}
		items = t
	}
	var vals []*jvalue
	switch items.kind {
	case sLit:
		vals = items.lits
	case sBool:
		vals = []*jvalue{{kind: 'b', b: true}, {kind: 'b', b: false}}
	case sNull:
		vals = []*jvalue{{kind: 'z'}}
	default:
		return nil, false, nil
	}
	if len(vals) > 64 {
		return nil, false, nil
	}
	if err := c.approx(hint, "uniqueItems", "distinct values are listed in the order of the set"); err != nil {
		return nil, false, err
	}
	kvs := make([]*node, len(vals))
	req := make([]bool, len(vals))
	for i, v := range vals {
		kvs[i] = literal(v)
	}
	maxI := a.maxItems
	if maxI < 0 || maxI > len(vals) {
		maxI = len(vals)
	}
	if a.minItems > maxI {
		return class(false), true, nil
	}
	list, err := e.membersCounted(hint+"-u", kvs, req, nil, a.minItems, maxI)
	if err != nil {
		return nil, false, err
	}
	return e.newRule(hint, seq(lit("["), ref("space"), list, lit("]"), ref("space"))), true, nil
}
