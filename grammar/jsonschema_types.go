package grammar

import (
	"fmt"
	"slices"
	"strconv"
)

// object translates an object schema: "{" members "}" where the members are the properties
// in schema order (required ones always, optional ones maybe), then additional ones if
// allowed.
func (c *schemaConv) object(s *jvalue, name, path string) (*node, error) {
	keys, schemas, required, err := objectProps(s, path)
	if err != nil {
		return nil, err
	}
	ap, hasAP := s.get("additionalProperties")
	if _, hasProps := s.get("properties"); !hasAP && !hasProps && len(keys) == 0 && !c.strict {
		return ref("object"), nil // {"type": "object"}: any object
	}
	var extra *node
	if hasAP && !(ap.kind == 'b' && !ap.b) && !c.strict {
		v, err := c.visit(ap, name+"-additional", path+"/additionalProperties")
		if err != nil {
			return nil, err
		}
		key := seq(lit(`"`), keyNotIn(keys), lit(`"`), ref("space"))
		extra = c.newRule(name+"-additional-kv", seq(key, lit(":"), ref("space"), v))
	}
	kvs := make([]*node, len(keys))
	for i, k := range keys {
		v, err := c.visit(schemas[i], name+"-"+k, path+"/properties/"+k)
		if err != nil {
			return nil, err
		}
		kvs[i] = c.newRule(name+"-"+k+"-kv", seq(lit(jsonQuote(k)), ref("space"), lit(":"), ref("space"), v))
	}
	members := c.members(name, kvs, required, extra)
	return c.newRule(name, seq(lit("{"), ref("space"), members, lit("}"), ref("space"))), nil
}

// objectProps reads properties (in order) and required; a required name that properties
// does not declare is a property of any value.
func objectProps(s *jvalue, path string) (keys []string, schemas []*jvalue, required []bool, err error) {
	props, _ := s.get("properties")
	if props == nil {
		props = &jvalue{kind: 'o'}
	} else if props.kind != 'o' {
		return nil, nil, nil, schemaErr(path, "properties must be an object")
	}
	keys = append(keys, props.keys...)
	schemas = append(schemas, props.vals...)
	required = make([]bool, len(keys))
	r, ok := s.get("required")
	if !ok {
		return keys, schemas, required, nil
	}
	if r.kind != 'a' {
		return nil, nil, nil, schemaErr(path, "required must be an array of strings")
	}
	for _, e := range r.vals {
		if e.kind != 's' {
			return nil, nil, nil, schemaErr(path, "required must be an array of strings")
		}
		i := slices.Index(keys, e.str)
		if i < 0 {
			keys, schemas, required = append(keys, e.str), append(schemas, &jvalue{kind: 'b', b: true}), append(required, false)
			i = len(keys) - 1
		}
		required[i] = true
	}
	return keys, schemas, required, nil
}

// members is the comma-separated members: a subsequence of kvs in order holding every
// required one, then additional members (extra, when not nil). S_i ("nothing written yet, at
// member i") and T_i ("something written") keep the commas right: T_i ::= ("," kv_i)? T_i+1
// (the group not optional when kv_i is required), S_i ::= kv_i T_i+1 | S_i+1 (only the first
// alternative when required).
func (c *schemaConv) members(name string, kvs []*node, required []bool, extra *node) *node {
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
		ts[i] = c.newRule(fmt.Sprintf("%s-t%d", name, i), cat(kv, ts[i+1]))
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

// keyNotIn is the content of a JSON string, without escapes, that is none of words (so that
// an additional property cannot repeat a declared one).
func keyNotIn(words []string) *node {
	type trie struct {
		end  bool
		kids map[rune]*trie
		keys []rune
	}
	root := &trie{kids: map[rune]*trie{}}
	for _, w := range words {
		t := root
		for _, r := range w {
			k, ok := t.kids[r]
			if !ok {
				k = &trie{kids: map[rune]*trie{}}
				t.kids[r], t.keys = k, append(t.keys, r)
			}
			t = k
		}
		t.end = true
	}
	rawChar := class(true, '"', '"', '\\', '\\', 0, 0x1f)
	var walk func(t *trie) *node
	walk = func(t *trie) *node {
		var alts []*node
		if !t.end {
			alts = append(alts, empty())
		}
		other := class(true, '"', '"', '\\', '\\', 0, 0x1f)
		for _, r := range t.keys {
			if r == '"' || r == '\\' || r < 0x20 {
				continue // an unescaped key cannot hold it, so cannot equal this word
			}
			alts = append(alts, seq(lit(string(r)), walk(t.kids[r])))
			other.ranges = append(other.ranges, r, r)
		}
		alts = append(alts, seq(other, star(rawChar)))
		return alt(alts...)
	}
	return walk(root)
}

// array translates an array schema: items with minItems..maxItems, or a tuple (prefixItems).
func (c *schemaConv) array(s *jvalue, name, path string) (*node, error) {
	lo, hi, err := bounds(s, "minItems", "maxItems", path)
	if err != nil {
		return nil, err
	}
	comma := seq(lit(","), ref("space"))
	if pre, ok := s.get("prefixItems"); ok {
		return c.tuple(s, pre, name, path)
	}
	items, ok := s.get("items")
	if !ok {
		items = &jvalue{kind: 'b', b: true}
	}
	if items.kind == 'b' && !items.b {
		hi = 0
	}
	var list *node = empty()
	if hi != 0 {
		item, err := c.visit(items, name+"-item", path+"/items")
		if err != nil {
			return nil, err
		}
		if item.kind != nRef {
			item = c.newRule(name+"-item", item)
		}
		more := -1
		if hi > 0 {
			more = hi - 1
		}
		list = seq(item, rep(seq(comma, item), max(lo-1, 0), more))
		if lo == 0 {
			list = opt(list)
		}
	} else if lo > 0 {
		return nil, schemaErr(path, "minItems %d but no items allowed", lo)
	}
	return c.newRule(name, seq(lit("["), ref("space"), list, lit("]"), ref("space"))), nil
}

// tuple translates prefixItems: exactly those items (with items false or absent, and no
// minItems/maxItems).
func (c *schemaConv) tuple(s, pre *jvalue, name, path string) (*node, error) {
	for _, k := range [...]string{"minItems", "maxItems"} {
		if _, ok := s.get(k); ok {
			return nil, schemaErr(path, "prefixItems together with %s is not supported", k)
		}
	}
	if it, ok := s.get("items"); ok && !(it.kind == 'b' && !it.b) {
		return nil, schemaErr(path, "prefixItems with items other than false is not supported")
	}
	if pre.kind != 'a' {
		return nil, schemaErr(path, "prefixItems must be an array of schemas")
	}
	body := []*node{lit("["), ref("space")}
	for i, e := range pre.vals {
		if i > 0 {
			body = append(body, lit(","), ref("space"))
		}
		n, err := c.visit(e, fmt.Sprintf("%s-%d", name, i), fmt.Sprintf("%s/prefixItems/%d", path, i))
		if err != nil {
			return nil, err
		}
		body = append(body, n)
	}
	body = append(body, lit("]"), ref("space"))
	return c.newRule(name, seq(body...)), nil
}

// count reads a non-negative integer keyword (def when absent).
func count(s *jvalue, kw string, def int, path string) (int, error) {
	v, ok := s.get(kw)
	if !ok {
		return def, nil
	}
	n, err := strconv.Atoi(v.str)
	if v.kind != 'n' || err != nil || n < 0 {
		return 0, schemaErr(path, "%s must be a non-negative integer", kw)
	}
	if n > maxRepeat {
		return 0, schemaErr(path, "%s %d is above the limit of %d", kw, n, maxRepeat)
	}
	return n, nil
}

// bounds reads the counts minKw (default 0) and maxKw (default -1: no
// bound), which must not cross.
func bounds(s *jvalue, minKw, maxKw, path string) (lo, hi int, err error) {
	if lo, err = count(s, minKw, 0, path); err != nil {
		return 0, 0, err
	}
	if hi, err = count(s, maxKw, -1, path); err != nil {
		return 0, 0, err
	}
	if hi >= 0 && hi < lo {
		return 0, 0, schemaErr(path, "%s %d below %s %d", maxKw, hi, minKw, lo)
	}
	return lo, hi, nil
}

// str translates a string schema: a format, a pattern, or characters minLength..maxLength.
func (c *schemaConv) str(s *jvalue, path string) (*node, error) {
	lo, hi, err := bounds(s, "minLength", "maxLength", path)
	if err != nil {
		return nil, err
	}
	_, hasLen := s.get("minLength")
	if _, ok := s.get("maxLength"); ok {
		hasLen = true
	}
	f, hasFormat := s.get("format")
	p, hasPattern := s.get("pattern")
	if (hasFormat && hasPattern) || ((hasFormat || hasPattern) && hasLen) {
		return nil, schemaErr(path, "only one of format, pattern and minLength/maxLength is supported in a string schema")
	}
	quoted := func(content *node) *node { return seq(lit(`"`), content, lit(`"`), ref("space")) }
	switch {
	case hasFormat:
		re, ok := formatRegex[f.str]
		if f.kind != 's' || !ok {
			return nil, schemaErr(path, "unsupported format %s (supported: date, time, date-time, uuid, email)", f.String())
		}
		n, err := regexNode(re, true)
		if err != nil {
			return nil, err
		}
		return quoted(n), nil
	case hasPattern:
		if p.kind != 's' {
			return nil, schemaErr(path, "pattern must be a string")
		}
		n, err := regexNode(p.str, true)
		if err != nil {
			return nil, schemaErr(path, "pattern: %v", err)
		}
		return quoted(n), nil
	case hasLen:
		return quoted(rep(ref("char"), lo, hi)), nil
	}
	return ref("string"), nil
}
