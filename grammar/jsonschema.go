package grammar

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// annotations are schema keywords that constrain nothing; they are ignored.
var annotations = map[string]bool{
	"title": true, "description": true, "$schema": true, "$id": true, "$comment": true, "default": true,
	"examples": true, "deprecated": true, "readOnly": true, "writeOnly": true, "$defs": true, "definitions": true,
	"$anchor": true, "contentMediaType": true, "contentEncoding": true,
}

// constraints are the keywords FromJSONSchema translates; any other keyword is an error.
var constraints = map[string]bool{
	"type": true, "properties": true, "required": true, "additionalProperties": true,
	"items": true, "prefixItems": true, "minItems": true, "maxItems": true,
	"enum": true, "const": true, "anyOf": true, "oneOf": true, "allOf": true, "$ref": true,
	"format": true, "minLength": true, "maxLength": true, "pattern": true,
	"minimum": true, "maximum": true, "exclusiveMinimum": true, "exclusiveMaximum": true,
}

// FromJSONSchema is the grammar of the JSON documents a schema accepts (after llama.cpp's
// json-schema-to-grammar, with the subset described in the package doc). Objects list their
// properties in schema order; optional ones may be left out. Additional properties are allowed
// only when additionalProperties is true or a schema, and never when strict (OpenAI's strict
// mode). A keyword outside the subset is an error naming it, never silently ignored.
func FromJSONSchema(schema []byte, strict bool) (*Grammar, error) {
	root, err := parseJSON(schema)
	if err != nil {
		return nil, fmt.Errorf("grammar: JSON schema is not valid JSON: %w", err)
	}
	c := &schemaConv{root: root, strict: strict, names: map[string]bool{}, refs: map[string]string{}}
	for _, r := range jsonPrimitives() {
		c.names[r.name] = true
	}
	body, err := c.visit(root, "root", "#")
	if err != nil {
		return nil, err
	}
	rules := c.rules
	if body.kind != nRef || body.s != "root" { // the root schema made no rule named root
		if c.names["root"] {
			return nil, fmt.Errorf("grammar: JSON schema: internal error: rule root taken")
		}
		rules = append([]rule{ruleOf("root", body)}, rules...)
	}
	return newGrammar(append(rules, jsonPrimitives()...))
}

type schemaConv struct {
	root   *jvalue
	strict bool
	rules  []rule
	names  map[string]bool
	refs   map[string]string // $ref → rule name
}

func schemaErr(path, format string, args ...any) error {
	return fmt.Errorf("grammar: JSON schema at %s: %s", path, fmt.Sprintf(format, args...))
}

// newRule adds a rule named after hint (made unique) and returns a reference to it.
func (c *schemaConv) newRule(hint string, body *node) *node {
	name := c.uniqueName(hint)
	c.rules = append(c.rules, ruleOf(name, body))
	return ref(name)
}

func (c *schemaConv) uniqueName(hint string) string {
	b := []byte(hint)
	for i, ch := range b {
		if !isNameByte(ch) || ch == '_' {
			b[i] = '-'
		}
	}
	name := string(b)
	for i := 1; c.names[name]; i++ {
		name = string(b) + strconv.Itoa(i)
	}
	c.names[name] = true
	return name
}

// visit translates schema s; name is a hint for rule names, path the JSON pointer for errors.
func (c *schemaConv) visit(s *jvalue, name, path string) (*node, error) {
	if s.kind == 'b' {
		if !s.b {
			return nil, schemaErr(path, "schema false allows nothing")
		}
		return ref("value"), nil
	}
	if s.kind != 'o' {
		return nil, schemaErr(path, "a schema must be an object or a boolean")
	}
	if err := checkKeywords(s, path); err != nil {
		return nil, err
	}
	types, err := schemaTypes(s, path)
	if err != nil {
		return nil, err
	}
	if r, ok := s.get("$ref"); ok {
		if err := onlyWith(s, path, "$ref"); err != nil {
			return nil, err
		}
		return c.ref(r, path)
	}
	if v, ok := s.get("allOf"); ok {
		if err := onlyWith(s, path, "allOf"); err != nil {
			return nil, err
		}
		if v.kind != 'a' || len(v.vals) != 1 {
			return nil, schemaErr(path, "allOf is supported with exactly one schema (as pydantic writes a described $ref)")
		}
		return c.visit(v.vals[0], name, path+"/allOf/0")
	}
	for _, kw := range [...]string{"anyOf", "oneOf"} {
		if v, ok := s.get(kw); ok {
			if err := onlyWith(s, path, kw); err != nil {
				return nil, err
			}
			return c.anyOf(v, name, path+"/"+kw)
		}
	}
	if v, ok := s.get("const"); ok {
		if err := onlyWith(s, path, "const", "type"); err != nil {
			return nil, err
		}
		return c.enum([]*jvalue{v}, types, path+"/const")
	}
	if v, ok := s.get("enum"); ok {
		if err := onlyWith(s, path, "enum", "type"); err != nil {
			return nil, err
		}
		if v.kind != 'a' || len(v.vals) == 0 {
			return nil, schemaErr(path, "enum must be a non-empty array")
		}
		return c.enum(v.vals, types, path+"/enum")
	}
	if types == nil {
		return ref("value"), nil
	}
	var alts []*node
	for _, t := range types {
		n, err := c.typed(s, t, name, path)
		if err != nil {
			return nil, err
		}
		alts = append(alts, n)
	}
	if len(alts) == 1 {
		return alts[0], nil
	}
	return alt(alts...), nil
}

// checkKeywords fails on the keywords of s that are neither annotations nor translated.
func checkKeywords(s *jvalue, path string) error {
	var bad []string
	for _, k := range s.keys {
		if !constraints[k] && !annotations[k] {
			bad = append(bad, k)
		}
	}
	if len(bad) > 0 {
		return schemaErr(path, "unsupported keyword(s): %s", strings.Join(bad, ", "))
	}
	return nil
}

// onlyWith fails when s has constraint keywords besides kw and also (their conjunction is not
// supported).
func onlyWith(s *jvalue, path, kw string, also ...string) error {
	for _, k := range s.keys {
		if constraints[k] && k != kw && !slices.Contains(also, k) {
			return schemaErr(path, "%s together with %s is not supported", kw, k)
		}
	}
	return nil
}

var typeKeywords = map[string][]string{
	"object":  {"properties", "required", "additionalProperties"},
	"array":   {"items", "prefixItems", "minItems", "maxItems"},
	"string":  {"format", "minLength", "maxLength", "pattern"},
	"integer": {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"},
}

// schemaTypes are the types s allows: its "type", else those its keywords imply, else any.
func schemaTypes(s *jvalue, path string) ([]string, error) {
	all := []string{"object", "array", "string", "number", "integer", "boolean", "null"}
	t, ok := s.get("type")
	if !ok {
		var implied []string
		for _, ty := range all[:5] {
			for _, k := range typeKeywords[ty] {
				if _, has := s.get(k); has && !slices.Contains(implied, ty) {
					implied = append(implied, ty)
				}
			}
		}
		if len(implied) > 0 {
			return implied, nil
		}
		return nil, nil
	}
	var types []string
	switch t.kind {
	case 's':
		types = []string{t.str}
	case 'a':
		for _, e := range t.vals {
			if e.kind != 's' {
				return nil, schemaErr(path, "type must be a string or an array of strings")
			}
			types = append(types, e.str)
		}
	default:
		return nil, schemaErr(path, "type must be a string or an array of strings")
	}
	for _, ty := range types {
		if !slices.Contains(all, ty) {
			return nil, schemaErr(path, "unknown type %q", ty)
		}
	}
	if len(types) == 0 {
		return nil, schemaErr(path, "type is an empty array")
	}
	return types, nil
}

// typed translates s as type t (no type: any JSON value).
func (c *schemaConv) typed(s *jvalue, t, name, path string) (*node, error) {
	switch t {
	case "object":
		return c.object(s, name, path)
	case "array":
		return c.array(s, name, path)
	case "string":
		return c.str(s, path)
	case "integer":
		return c.integer(s, path)
	case "number":
		for _, k := range typeKeywords["integer"] {
			if _, ok := s.get(k); ok {
				return nil, schemaErr(path, "%s is supported on integers only, not on numbers", k)
			}
		}
		return ref(t), nil
	case "boolean", "null":
		return ref(t), nil
	}
	return ref("value"), nil
}

func (c *schemaConv) ref(r *jvalue, path string) (*node, error) {
	if r.kind != 's' {
		return nil, schemaErr(path, "$ref must be a string")
	}
	if name, ok := c.refs[r.str]; ok {
		return ref(name), nil
	}
	target, err := c.resolve(r.str, path)
	if err != nil {
		return nil, err
	}
	hint := "ref"
	if i := strings.LastIndexByte(r.str, '/'); i >= 0 && i+1 < len(r.str) {
		hint = "ref-" + r.str[i+1:]
	}
	name := c.uniqueName(hint)
	c.refs[r.str] = name
	body, err := c.visit(target, name, r.str)
	if err != nil {
		return nil, err
	}
	c.rules = append(c.rules, ruleOf(name, body))
	return ref(name), nil
}

// resolve follows a local reference: "#", or a JSON pointer from the root ("#/$defs/x").
func (c *schemaConv) resolve(r, path string) (*jvalue, error) {
	if r != "#" && !strings.HasPrefix(r, "#/") {
		return nil, schemaErr(path, "$ref %q: only local references (#/...) are supported", r)
	}
	v := c.root
	for _, part := range strings.Split(r, "/")[1:] {
		part = strings.ReplaceAll(strings.ReplaceAll(part, "~1", "/"), "~0", "~")
		var next *jvalue
		switch v.kind {
		case 'o':
			next, _ = v.get(part)
		case 'a':
			if i, err := strconv.Atoi(part); err == nil && i >= 0 && i < len(v.vals) {
				next = v.vals[i]
			}
		}
		if next == nil {
			return nil, schemaErr(path, "$ref %q does not resolve", r)
		}
		v = next
	}
	return v, nil
}

func (c *schemaConv) anyOf(v *jvalue, name, path string) (*node, error) {
	if v.kind != 'a' || len(v.vals) == 0 {
		return nil, schemaErr(path, "must be a non-empty array of schemas")
	}
	alts := make([]*node, len(v.vals))
	for i, s := range v.vals {
		n, err := c.visit(s, fmt.Sprintf("%s-%d", name, i), fmt.Sprintf("%s/%d", path, i))
		if err != nil {
			return nil, err
		}
		alts[i] = n
	}
	if len(alts) == 1 {
		return alts[0], nil
	}
	return alt(alts...), nil
}

// enum is one of the values, as compact JSON; with a type, the values of other types are left
// out (they could not validate).
func (c *schemaConv) enum(vals []*jvalue, types []string, path string) (*node, error) {
	var alts []*node
	for _, v := range vals {
		if types == nil || slices.ContainsFunc(types, func(t string) bool { return hasType(v, t) }) {
			alts = append(alts, lit(v.String()))
		}
	}
	if len(alts) == 0 {
		return nil, schemaErr(path, "no value has the schema's type")
	}
	if len(alts) == 1 {
		return seq(alts[0], ref("space")), nil
	}
	return seq(alt(alts...), ref("space")), nil
}

func hasType(v *jvalue, t string) bool {
	switch t {
	case "object":
		return v.kind == 'o'
	case "array":
		return v.kind == 'a'
	case "string":
		return v.kind == 's'
	case "number":
		return v.kind == 'n'
	case "integer":
		f, err := strconv.ParseFloat(v.str, 64)
		return v.kind == 'n' && err == nil && f == float64(int64(f))
	case "boolean":
		return v.kind == 'b'
	}
	return v.kind == 'z'
}
