package grammar

import (
	"fmt"
	"strconv"
)

// object translates an object schema: "{" members "}" where the members are the properties
// in schema order (required ones always, optional ones maybe), then additional ones if
// allowed. S_i ("nothing written yet, at property i") and T_i ("something written") keep the
// commas right: T_i ::= "," kv_i T_i+1 (kv_i optional unless required).
func (c *schemaConv) object(s *jvalue, name, path string) (*node, error) {
	props, _ := s.get("properties")
	if props == nil {
		props = &jvalue{kind: 'o'}
	} else if props.kind != 'o' {
		return nil, schemaErr(path, "properties must be an object")
	}
	keys := append([]string(nil), props.keys...)
	schemas := append([]*jvalue(nil), props.vals...)
	required := map[string]bool{}
	if r, ok := s.get("required"); ok {
		if r.kind != 'a' {
			return nil, schemaErr(path, "required must be an array of strings")
		}
		for _, e := range r.vals {
			if e.kind != 's' {
				return nil, schemaErr(path, "required must be an array of strings")
			}
			required[e.str] = true
			if _, ok := props.get(e.str); !ok {
				keys, schemas = append(keys, e.str), append(schemas, &jvalue{kind: 'b', b: true})
			}
		}
	}
	ap, hasAP := s.get("additionalProperties")
	if !hasAP && props.kind == 'o' && len(keys) == 0 && !c.strict {
		if _, ok := s.get("properties"); !ok {
			return ref("object"), nil // {"type": "object"}: any object
		}
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
	comma := seq(lit(","), ref("space"))
	// tail is T_n: more additional members after something was written.
	var tail *node = empty()
	if extra != nil {
		tail = star(seq(comma, extra))
	}
	ts := make([]*node, len(keys)+1)
	ts[len(keys)] = tail
	for i := len(keys) - 1; i >= 1; i-- {
		kv := seq(comma, kvs[i])
		if !required[keys[i]] {
			kv = opt(kv)
		}
		ts[i] = c.newRule(fmt.Sprintf("%s-t%d", name, i), cat(kv, ts[i+1]))
	}
	var members *node = empty()
	if extra != nil {
		members = opt(seq(extra, tail))
	}
	for i := len(keys) - 1; i >= 0; i-- {
		first := cat(kvs[i], ts[i+1])
		if required[keys[i]] {
			members = first
		} else {
			members = alt(first, members)
		}
	}
	return c.newRule(name, seq(lit("{"), ref("space"), members, lit("}"), ref("space"))), nil
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
	lo, err := count(s, "minItems", 0, path)
	if err != nil {
		return nil, err
	}
	hi, err := count(s, "maxItems", -1, path)
	if err != nil {
		return nil, err
	}
	if hi >= 0 && hi < lo {
		return nil, schemaErr(path, "maxItems %d below minItems %d", hi, lo)
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

// str translates a string schema: a format, a pattern, or characters minLength..maxLength.
func (c *schemaConv) str(s *jvalue, path string) (*node, error) {
	lo, err := count(s, "minLength", 0, path)
	if err != nil {
		return nil, err
	}
	hi, err := count(s, "maxLength", -1, path)
	if err != nil {
		return nil, err
	}
	if hi >= 0 && hi < lo {
		return nil, schemaErr(path, "maxLength %d below minLength %d", hi, lo)
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
