package grammar

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"
)

// validateJSON checks doc against schema with encoding/json and a small validator of the
// subset FromJSONSchema supports (independent of the grammar code).
func validateJSON(schema, doc string) error {
	if !json.Valid([]byte(doc)) {
		return fmt.Errorf("not valid JSON")
	}
	var s, d any
	if err := json.Unmarshal([]byte(schema), &s); err != nil {
		return err
	}
	declared := map[string]bool{}
	declaredNames(s, declared)
	for _, k := range duplicateKeys(doc) {
		if declared[k] { // a repeated additional property is harmless: each value validates
			return fmt.Errorf("duplicate key %q", k)
		}
	}
	dec := json.NewDecoder(strings.NewReader(doc))
	dec.UseNumber()
	if err := dec.Decode(&d); err != nil {
		return err
	}
	v := validator{root: s}
	return v.check(s, d, "$")
}

type validator struct{ root any }

func (v validator) check(s, d any, at string) error {
	if b, ok := s.(bool); ok {
		if !b {
			return fmt.Errorf("%s: schema false", at)
		}
		return nil
	}
	m := s.(map[string]any)
	if r, ok := m["$ref"].(string); ok {
		target := v.root
		for _, p := range strings.Split(r, "/")[1:] {
			target = target.(map[string]any)[p]
		}
		return v.check(target, d, at)
	}
	if all, ok := m["allOf"].([]any); ok {
		for _, a := range all {
			if err := v.check(a, d, at); err != nil {
				return err
			}
		}
	}
	for _, kw := range []string{"anyOf", "oneOf"} {
		if alts, ok := m[kw].([]any); ok {
			for _, a := range alts {
				if v.check(a, d, at) == nil {
					return nil
				}
			}
			return fmt.Errorf("%s: no alternative of %s matches", at, kw)
		}
	}
	if c, ok := m["const"]; ok && !jsonEqual(c, d) {
		return fmt.Errorf("%s: %v is not the const %v", at, d, c)
	}
	if e, ok := m["enum"].([]any); ok {
		found := false
		for _, x := range e {
			found = found || jsonEqual(x, d)
		}
		if !found {
			return fmt.Errorf("%s: %v not in enum", at, d)
		}
	}
	if t, ok := m["type"]; ok {
		types, _ := t.([]any)
		if s, ok := t.(string); ok {
			types = []any{s}
		}
		okType := false
		for _, ty := range types {
			okType = okType || isType(d, ty.(string))
		}
		if !okType {
			return fmt.Errorf("%s: %v is not of type %v", at, d, t)
		}
	}
	switch x := d.(type) {
	case json.Number:
		return number(m, x, at)
	case map[string]any:
		return v.object(m, x, at)
	case []any:
		return v.array(m, x, at)
	case string:
		return v.str(m, x, at)
	}
	return nil
}

func (v validator) object(m map[string]any, d map[string]any, at string) error {
	props, _ := m["properties"].(map[string]any)
	for _, r := range asSlice(m["required"]) {
		if _, ok := d[r.(string)]; !ok {
			return fmt.Errorf("%s: missing required %q", at, r)
		}
	}
	for k, val := range d {
		if ps, ok := props[k]; ok {
			if err := v.check(ps, val, at+"."+k); err != nil {
				return err
			}
			continue
		}
		if ap, ok := m["additionalProperties"]; ok {
			if err := v.check(ap, val, at+"."+k); err != nil {
				return fmt.Errorf("additional property: %w", err)
			}
		}
	}
	return nil
}

func (v validator) array(m map[string]any, d []any, at string) error {
	if n, ok := m["minItems"]; ok && len(d) < int(n.(float64)) {
		return fmt.Errorf("%s: %d items < minItems", at, len(d))
	}
	if n, ok := m["maxItems"]; ok && len(d) > int(n.(float64)) {
		return fmt.Errorf("%s: %d items > maxItems", at, len(d))
	}
	pre := asSlice(m["prefixItems"])
	for i, e := range d {
		s, ok := m["items"]
		if i < len(pre) {
			s, ok = pre[i], true
		}
		if ok {
			if err := v.check(s, e, fmt.Sprintf("%s[%d]", at, i)); err != nil {
				return err
			}
		}
	}
	return nil
}

func (v validator) str(m map[string]any, d, at string) error {
	n := utf8.RuneCountInString(d)
	if x, ok := m["minLength"]; ok && n < int(x.(float64)) {
		return fmt.Errorf("%s: length %d < minLength", at, n)
	}
	if x, ok := m["maxLength"]; ok && n > int(x.(float64)) {
		return fmt.Errorf("%s: length %d > maxLength", at, n)
	}
	if p, ok := m["pattern"].(string); ok && !regexp.MustCompile(p).MatchString(d) {
		return fmt.Errorf("%s: %q does not match pattern %q", at, d, p)
	}
	if f, ok := m["format"].(string); ok {
		re, _ := FormatRegex(f)
		if !regexp.MustCompile(`^(?:` + re + `)$`).MatchString(d) {
			return fmt.Errorf("%s: %q is not a %s", at, d, f)
		}
	}
	return nil
}

// declaredNames collects the property names declared anywhere in schema s.
func declaredNames(s any, out map[string]bool) {
	switch x := s.(type) {
	case map[string]any:
		if p, ok := x["properties"].(map[string]any); ok {
			for k := range p {
				out[k] = true
			}
		}
		for _, v := range x {
			declaredNames(v, out)
		}
	case []any:
		for _, v := range x {
			declaredNames(v, out)
		}
	}
}

// duplicateKeys lists the keys that occur twice in one object of the JSON text doc.
func duplicateKeys(doc string) []string {
	d := json.NewDecoder(strings.NewReader(doc))
	var dups []string
	type frame struct {
		keys   map[string]bool
		object bool
		expect bool // the next token of this object is a key
	}
	var stack []*frame
	for {
		tok, err := d.Token()
		if err != nil {
			return dups
		}
		var top *frame
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		if top != nil && top.object && top.expect {
			if k, ok := tok.(string); ok {
				if top.keys[k] {
					dups = append(dups, k)
				}
				top.keys[k], top.expect = true, false
				continue
			}
		}
		if top != nil && top.object {
			top.expect = true
		}
		switch tok {
		case json.Delim('{'):
			stack = append(stack, &frame{keys: map[string]bool{}, object: true, expect: true})
		case json.Delim('['):
			stack = append(stack, &frame{})
		case json.Delim('}'), json.Delim(']'):
			stack = stack[:len(stack)-1]
		}
	}
}

func asSlice(x any) []any { s, _ := x.([]any); return s }

func isType(d any, t string) bool {
	switch x := d.(type) {
	case map[string]any:
		return t == "object"
	case []any:
		return t == "array"
	case string:
		return t == "string"
	case bool:
		return t == "boolean"
	case nil:
		return t == "null"
	case json.Number:
		if t == "number" {
			return true
		}
		f, err := strconv.ParseFloat(string(x), 64)
		return t == "integer" && err == nil && f == float64(int64(f))
	}
	return false
}

// jsonEqual compares two decoded JSON values (numbers by value).
func jsonEqual(a, b any) bool {
	norm := func(x any) any {
		var buf bytes.Buffer
		json.NewEncoder(&buf).Encode(x)
		var y any
		json.Unmarshal(buf.Bytes(), &y)
		return y
	}
	return reflect.DeepEqual(norm(a), norm(b))
}

func number(m map[string]any, d json.Number, at string) error {
	f, err := d.Float64()
	if err != nil {
		return err
	}
	for kw, bad := range map[string]func(b float64) bool{
		"minimum":          func(b float64) bool { return f < b },
		"maximum":          func(b float64) bool { return f > b },
		"exclusiveMinimum": func(b float64) bool { return f <= b },
		"exclusiveMaximum": func(b float64) bool { return f >= b },
	} {
		if b, ok := m[kw].(float64); ok && bad(b) {
			return fmt.Errorf("%s: %v violates %s %v", at, f, kw, b)
		}
	}
	return nil
}
