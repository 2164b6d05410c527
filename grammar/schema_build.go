package grammar

import (
	"fmt"
	"strings"
)

// conv converts a schema document to the normal form (sch) and then to rules. It carries
// the limits that keep a hostile schema's cost bounded: budget counts the intersections,
// negations and evaluations left, depth the $ref expansions nested in one of them.
type conv struct {
	doc      *schemaDoc
	strict   bool
	noExtra  bool // an absent additionalProperties reads as false (SchemaOptions)
	defs     map[*jvalue]*schDef
	budget   int
	depth    int
	approxs  []string // the approximations made (an error instead when strict)
	rx       *rxCache
	deferred map[deferKey]*schDef
	m        *meter // the compile's work units
	nodes    int    // subschemas built (MaxSchemaNodes)
	nest     int    // subschemas being built, one inside the next (MaxSchemaDepth)
}

// maxSteps bounds the work of normalizing one schema (intersections, negations,
// evaluations of literals); maxUnion the alternatives one union may hold.
const (
	maxSteps    = 200000
	maxUnion    = 512
	maxRefDepth = 24
)

// applicators are the keywords combined with a schema's own constraints, in the order
// they appear (which decides the order of merged properties, as in LLGuidance).
var applicators = map[string]bool{
	"allOf": true, "anyOf": true, "oneOf": true, "$ref": true, "not": true, "if": true,
	"dependentRequired": true, "dependentSchemas": true, "dependencies": true,
}

// ownKeywords are the keywords that constrain the value's type and its content directly.
var ownKeywords = map[string]bool{
	"type": true, "enum": true, "const": true,
	"minimum": true, "maximum": true, "exclusiveMinimum": true, "exclusiveMaximum": true, "multipleOf": true,
	"minLength": true, "maxLength": true, "pattern": true, "format": true,
	"items": true, "prefixItems": true, "additionalItems": true, "minItems": true, "maxItems": true,
	"contains": true, "minContains": true, "maxContains": true, "uniqueItems": true,
	"properties": true, "required": true, "additionalProperties": true, "patternProperties": true,
	"propertyNames": true, "minProperties": true, "maxProperties": true,
}

// refused are keywords that constrain but cannot be translated: a 400 naming them.
var refused = map[string]string{
	"$dynamicRef":   "dynamic references are not supported",
	"$recursiveRef": "recursive references are not supported",
}

func schemaErr(path, format string, args ...any) error {
	return fmt.Errorf("grammar: JSON schema at %s: %s", path, fmt.Sprintf(format, args...))
}

// approx records an approximation: a translation that never accepts an invalid value but
// refuses some valid ones. Under strict it is an error instead.
func (c *conv) approx(path, keyword, why string) error {
	if c.strict {
		return schemaErr(path, "%s cannot be enforced exactly (%s), and strict asks for exact enforcement", keyword, why)
	}
	c.approxs = append(c.approxs, path+": "+keyword)
	return nil
}

func (c *conv) spend(n int) error {
	c.m.charge(n)
	c.budget -= n
	if c.budget < 0 {
		return fmt.Errorf("grammar: JSON schema too complex (over %d steps combining its parts)", maxSteps)
	}
	return nil
}

// build converts the schema v (base: its base URI; path: its JSON pointer, for errors).
func (c *conv) build(v *jvalue, base, path string) (*sch, error) {
	if err := c.spend(1); err != nil {
		return nil, err
	}
	if c.nodes++; c.nodes > MaxSchemaNodes {
		return nil, &LimitError{Limit: "schema nodes (subschemas, each $ref counted where it is expanded)", Value: MaxSchemaNodes, Where: shortPath(path)}
	}
	if c.nest++; c.nest > MaxSchemaDepth {
		return nil, &LimitError{Limit: "schema depth", Value: MaxSchemaDepth, Where: shortPath(path)}
	}
	defer func() { c.nest-- }()
	switch v.kind {
	case 'b':
		if v.b {
			return anySch, nil
		}
		return noneSch, nil
	case 'o':
	default:
		return nil, schemaErr(path, "a schema must be an object or a boolean")
	}
	base = c.doc.baseFor(v, base)
	for _, k := range v.keys {
		if why, ok := refused[k]; ok {
			return nil, schemaErr(path, "%s: %s", k, why)
		}
	}
	if r, ok := v.get("$ref"); ok && c.doc.draft != draftAuto && c.doc.draft <= draft7 {
		return c.refSch(r, base, path) // before 2019-09, $ref's siblings are ignored
	}
	own, ownAt, err := c.own(v, base, path)
	if err != nil {
		return nil, err
	}
	type part struct {
		at  int
		key string
	}
	var parts []part
	if ownAt >= 0 {
		parts = append(parts, part{ownAt, ""})
	}
	for i, k := range v.keys {
		if applicators[k] && !(k == "dependencies" && c.doc.draft >= draft2019) {
			parts = append(parts, part{i, k})
		}
	}
	sortParts := func() {
		for i := 1; i < len(parts); i++ {
			for j := i; j > 0 && parts[j].at < parts[j-1].at; j-- {
				parts[j], parts[j-1] = parts[j-1], parts[j]
			}
		}
	}
	sortParts()
	// oneOf's branches take the schema's other constraints first (exactly one of them
	// holds with the rest exactly when exactly one branch ∧ rest does), so that their
	// overlaps are judged on the values that can occur.
	acc, oneOfAt := anySch, -1
	for i, p := range parts {
		var x *sch
		switch {
		case p.key == "":
			x = own
		case p.key == "oneOf":
			oneOfAt = i
			continue
		default:
			if x, err = c.applicator(v, p.key, base, path); err != nil {
				return nil, err
			}
		}
		if acc, err = c.and(acc, x); err != nil {
			return nil, err
		}
	}
	if oneOfAt >= 0 {
		x, _ := v.get("oneOf")
		bs, err := c.list(x, base, path+"/oneOf")
		if err != nil {
			return nil, err
		}
		for i, b := range bs {
			if oneOfAt == 0 {
				bs[i], err = c.and(b, acc)
			} else {
				bs[i], err = c.and(acc, b)
			}
			if err != nil {
				return nil, err
			}
		}
		if acc, err = c.oneOf(bs, path+"/oneOf"); err != nil {
			return nil, err
		}
	}
	return c.unevaluated(v, acc, base, path)
}

// applicator converts one applicator keyword of v.
func (c *conv) applicator(v *jvalue, key, base, path string) (*sch, error) {
	x, _ := v.get(key)
	at := path + "/" + key
	switch key {
	case "$ref":
		return c.refSch(x, base, path)
	case "allOf":
		parts, err := c.list(x, base, at)
		if err != nil {
			return nil, err
		}
		acc := anySch
		for _, p := range parts {
			if acc, err = c.and(acc, p); err != nil {
				return nil, err
			}
		}
		return acc, nil
	case "anyOf":
		parts, err := c.list(x, base, at)
		if err != nil {
			return nil, err
		}
		return c.checkUnion(union(parts...), at)
	case "oneOf":
		parts, err := c.list(x, base, at)
		if err != nil {
			return nil, err
		}
		return c.oneOf(parts, at)
	case "not":
		s, err := c.build(x, base, at)
		if err != nil {
			return nil, err
		}
		n, exact, err := c.neg(s)
		if err != nil {
			return nil, err
		}
		if !exact {
			return nil, schemaErr(at, "not of this schema is not supported (its complement has no exact grammar)")
		}
		return n, nil
	case "if":
		return c.ifThenElse(v, base, path)
	case "dependentRequired", "dependentSchemas", "dependencies":
		return c.dependencies(x, key, base, at)
	}
	return anySch, nil
}

// list converts an array of schemas.
func (c *conv) list(x *jvalue, base, path string) ([]*sch, error) {
	if x.kind != 'a' || len(x.vals) == 0 {
		return nil, schemaErr(path, "must be a non-empty array of schemas")
	}
	out := make([]*sch, len(x.vals))
	for i, e := range x.vals {
		s, err := c.build(e, base, fmt.Sprintf("%s/%d", path, i))
		if err != nil {
			return nil, err
		}
		out[i] = s
	}
	return out, nil
}

func (c *conv) checkUnion(s *sch, path string) (*sch, error) {
	if s.kind == sUnion && len(s.alts) > maxUnion {
		return nil, schemaErr(path, "too many alternatives (%d, the limit is %d)", len(s.alts), maxUnion)
	}
	return s, nil
}

// refSch is a reference to the target of r (built lazily, once per target).
func (c *conv) refSch(r *jvalue, base, path string) (*sch, error) {
	if r.kind != 's' {
		return nil, schemaErr(path, "$ref must be a string")
	}
	target, tbase, err := c.doc.resolve(r.str, base, path)
	if err != nil {
		return nil, err
	}
	d, ok := c.defs[target]
	if !ok {
		d = &schDef{node: target, base: tbase, path: r.str}
		c.defs[target] = d
	}
	return &sch{kind: sRef, def: d}, nil
}

// expand is the schema a reference stands for, built on first use.
func (c *conv) expand(d *schDef) (*sch, error) {
	switch d.state {
	case 2:
		return d.built, nil
	case 1:
		return nil, schemaErr(d.path, "the reference is part of a cycle that never reaches a value (a schema that contains itself through allOf, $ref siblings or not)")
	}
	d.state = 1
	var s *sch
	var err error
	if d.of != nil {
		var t *sch
		if t, err = c.expand(d.of); err == nil {
			if d.withFirst {
				s, err = c.and(d.with, t)
			} else {
				s, err = c.and(t, d.with)
			}
		}
	} else {
		s, err = c.build(d.node, d.base, d.path)
	}
	if err != nil {
		return nil, err
	}
	d.built, d.state = s, 2
	return s, nil
}

// deferAnd is the reference to "the target of d, intersected with x", for a d that is
// being built (one per pair, so that a recursive intersection is a recursive rule).
func (c *conv) deferAnd(d *schDef, x *sch, xFirst bool) *sch {
	k := deferKey{d, x, xFirst}
	if dd, ok := c.deferred[k]; ok {
		return &sch{kind: sRef, def: dd}
	}
	dd := &schDef{path: d.path, of: d, with: x, withFirst: xFirst}
	c.deferred[k] = dd
	return &sch{kind: sRef, def: dd}
}

type deferKey struct {
	d      *schDef
	x      *sch
	xFirst bool
}

func stringList(x *jvalue, path string) ([]string, error) {
	if x.kind != 'a' {
		return nil, schemaErr(path, "must be an array of strings")
	}
	out := make([]string, 0, len(x.vals))
	for _, e := range x.vals {
		if e.kind != 's' {
			return nil, schemaErr(path, "must be an array of strings")
		}
		if !containsStr(out, e.str) {
			out = append(out, e.str)
		}
	}
	return out, nil
}

// pathJoin appends a JSON pointer token.
func pathJoin(path, tok string) string {
	return path + "/" + strings.ReplaceAll(strings.ReplaceAll(tok, "~", "~0"), "/", "~1")
}

// shortPath is a JSON pointer for an error message, its middle elided when long.
func shortPath(p string) string {
	if len(p) <= 120 {
		return p
	}
	return p[:60] + "…" + p[len(p)-60:]
}
