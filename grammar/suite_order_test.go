package grammar

import (
	"encoding/json"
	"slices"
	"sort"
)

// keyOrder is the order in which a schema's properties are generated, approximated by the
// first appearance of each name in the schema's text: under properties, required,
// dependencies (names and lists), or as a key of a const or enum object.
func keyOrder(schema json.RawMessage) map[string]int {
	root, err := parseJSON(schema)
	order := map[string]int{}
	if err != nil {
		return order
	}
	rank := func(name string) {
		if _, ok := order[name]; !ok {
			order[name] = len(order)
		}
	}
	var literal func(v *jvalue)
	literal = func(v *jvalue) {
		for i, k := range v.keys {
			rank(k)
			literal(v.vals[i])
		}
		for _, x := range v.vals {
			if v.kind == 'a' {
				literal(x)
			}
		}
	}
	var props func(v *jvalue) // first the declared properties, as the grammar writes them first
	props = func(v *jvalue) {
		for i, k := range v.keys {
			if k == "properties" && v.vals[i].kind == 'o' {
				for _, name := range v.vals[i].keys {
					rank(name)
				}
			}
			if k != "const" && k != "enum" {
				props(v.vals[i])
			}
		}
		if v.kind == 'a' {
			for _, x := range v.vals {
				props(x)
			}
		}
	}
	props(root)
	var walk func(v *jvalue)
	walk = func(v *jvalue) {
		switch v.kind {
		case 'o':
			for i, k := range v.keys {
				x := v.vals[i]
				switch k {
				case "properties", "dependencies", "dependentRequired", "dependentSchemas":
					if x.kind == 'o' {
						for j, name := range x.keys {
							rank(name)
							if x.vals[j].kind == 'a' && k != "properties" {
								for _, e := range x.vals[j].vals {
									if e.kind == 's' {
										rank(e.str)
									}
								}
							}
						}
					}
				case "required":
					if x.kind == 'a' {
						for _, e := range x.vals {
							if e.kind == 's' {
								rank(e.str)
							}
						}
					}
				case "const", "enum":
					literal(x)
					continue
				}
				walk(x)
			}
		case 'a':
			for _, x := range v.vals {
				walk(x)
			}
		}
	}
	walk(root)
	return order
}

// reorder is v with every object's keys in the order (names without a rank last, as they
// were).
func reorder(v *jvalue, order map[string]int) *jvalue {
	switch v.kind {
	case 'o':
		idx := make([]int, len(v.keys))
		for i := range idx {
			idx[i] = i
		}
		rank := func(i int) int {
			if r, ok := order[v.keys[i]]; ok {
				return r
			}
			return len(order) + i
		}
		sort.SliceStable(idx, func(a, b int) bool { return rank(idx[a]) < rank(idx[b]) })
		out := &jvalue{kind: 'o'}
		for _, i := range idx {
			out.keys = append(out.keys, v.keys[i])
			out.vals = append(out.vals, reorder(v.vals[i], order))
		}
		return out
	case 'a':
		out := &jvalue{kind: 'a'}
		for _, x := range v.vals {
			out.vals = append(out.vals, reorder(x, order))
		}
		return out
	}
	return v
}

// irReorder is v with its objects' keys in the order the grammar of s writes them: the
// declared properties of the branch v is valid against first.
func irReorder(c *conv, s *sch, v *jvalue) *jvalue {
	switch s.kind {
	case sRef:
		if t, err := c.expand(s.def); err == nil {
			return irReorder(c, t, v)
		}
	case sUnion:
		for _, a := range s.alts {
			if ok, _ := c.eval(v, a); ok {
				return irReorder(c, a, v)
			}
		}
	case sLit:
		for _, l := range s.lits {
			if jsonEqualValues(l, v) {
				return l
			}
		}
	case sArr:
		if v.kind == 'a' {
			out := &jvalue{kind: 'a'}
			for i, e := range v.vals {
				it := s.arr.items
				if i < len(s.arr.prefix) {
					it = s.arr.prefix[i]
				}
				if it == nil {
					it = anySch
				}
				out.vals = append(out.vals, irReorder(c, it, e))
			}
			return out
		}
	case sObj:
		if v.kind == 'o' {
			var names []string
			for _, p := range s.obj.props {
				names = append(names, p.name)
			}
			names = appendNew(names, s.obj.required)
			for _, k := range v.keys {
				if !slices.Contains(names, k) {
					names = append(names, k)
				}
			}
			out := &jvalue{kind: 'o'}
			for _, k := range names {
				if x, ok := v.get(k); ok {
					ps, err := c.propValue(s.obj, k)
					if err != nil {
						ps = anySch
					}
					out.keys, out.vals = append(out.keys, k), append(out.vals, irReorder(c, ps, x))
				}
			}
			return out
		}
	}
	return v
}
