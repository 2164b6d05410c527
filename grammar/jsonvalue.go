package grammar

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
)

// jvalue is a decoded JSON value that keeps the order of object keys (schema order matters
// for properties).
type jvalue struct {
	kind byte // 'o' object, 'a' array, 's' string, 'n' number, 'b' boolean, 'z' null
	keys []string
	vals []*jvalue // object values (parallel to keys) or array elements
	str  string    // string value, or a number's literal text
	b    bool
	idx  map[string]int // an object's keys, when it has many (see get)
}

// indexFrom is the number of keys from which an object indexes them.
const indexFrom = 16

func (v *jvalue) get(key string) (*jvalue, bool) {
	if v.idx != nil {
		i, ok := v.idx[key]
		if !ok {
			return nil, false
		}
		return v.vals[i], true
	}
	for i, k := range v.keys {
		if k == key {
			return v.vals[i], true
		}
	}
	return nil, false
}

// parseJSON decodes one JSON value (duplicate keys are an error).
func parseJSON(data []byte) (*jvalue, error) {
	d := json.NewDecoder(bytes.NewReader(data))
	d.UseNumber()
	v, err := decodeValue(d, 0)
	if err != nil {
		return nil, err
	}
	if _, err := d.Token(); err != io.EOF {
		return nil, fmt.Errorf("data after the JSON value")
	}
	return v, nil
}

// maxJSONDepth bounds the nesting of a decoded value (recursion depth).
const maxJSONDepth = 1000

func decodeValue(d *json.Decoder, depth int) (*jvalue, error) {
	if depth > maxJSONDepth {
		return nil, &LimitError{Limit: "JSON nesting depth", Value: maxJSONDepth}
	}
	tok, err := d.Token()
	if err != nil {
		return nil, err
	}
	switch t := tok.(type) {
	case json.Delim:
		if t == '[' {
			v := &jvalue{kind: 'a'}
			for d.More() {
				e, err := decodeValue(d, depth+1)
				if err != nil {
					return nil, err
				}
				v.vals = append(v.vals, e)
			}
			_, err := d.Token()
			return v, err
		}
		v := &jvalue{kind: 'o'}
		for d.More() {
			k, err := d.Token()
			if err != nil {
				return nil, err
			}
			key := k.(string)
			if _, dup := v.get(key); dup {
				return nil, fmt.Errorf("duplicate key %q", key)
			}
			e, err := decodeValue(d, depth+1)
			if err != nil {
				return nil, err
			}
			v.keys, v.vals = append(v.keys, key), append(v.vals, e)
			if v.idx != nil {
				v.idx[key] = len(v.keys) - 1
			} else if len(v.keys) == indexFrom {
				v.idx = make(map[string]int, 2*indexFrom)
				for i, k := range v.keys {
					v.idx[k] = i
				}
			}
		}
		_, err := d.Token()
		return v, err
	case string:
		return &jvalue{kind: 's', str: t}, nil
	case json.Number:
		return &jvalue{kind: 'n', str: t.String()}, nil
	case bool:
		return &jvalue{kind: 'b', b: t}, nil
	}
	return &jvalue{kind: 'z'}, nil
}

// encode writes v as compact JSON, keys in order.
func (v *jvalue) encode(b *strings.Builder) {
	switch v.kind {
	case 'o':
		b.WriteByte('{')
		for i, k := range v.keys {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(jsonQuote(k))
			b.WriteByte(':')
			v.vals[i].encode(b)
		}
		b.WriteByte('}')
	case 'a':
		b.WriteByte('[')
		for i, e := range v.vals {
			if i > 0 {
				b.WriteByte(',')
			}
			e.encode(b)
		}
		b.WriteByte(']')
	case 's':
		b.WriteString(jsonQuote(v.str))
	case 'n':
		b.WriteString(v.str)
	case 'b':
		fmt.Fprint(b, v.b)
	default:
		b.WriteString("null")
	}
}

func (v *jvalue) String() string {
	var b strings.Builder
	v.encode(&b)
	return b.String()
}

// jsonQuote is s as a JSON string literal, quotes included.
func jsonQuote(s string) string { return `"` + jsonEscape(s) + `"` }

// jsonEscape is s as the content of a JSON string: " and \ escaped, control characters as
// \n \t \r \b \f or \u00xx, everything else (including non-ASCII) raw.
func jsonEscape(s string) string {
	var b strings.Builder
	for _, c := range s {
		switch c {
		case '"':
			b.WriteString(`\"`)
		case '\\':
			b.WriteString(`\\`)
		case '\n':
			b.WriteString(`\n`)
		case '\t':
			b.WriteString(`\t`)
		case '\r':
			b.WriteString(`\r`)
		case '\b':
			b.WriteString(`\b`)
		case '\f':
			b.WriteString(`\f`)
		default:
			if c < 0x20 {
				fmt.Fprintf(&b, `\u%04x`, c)
			} else {
				b.WriteRune(c)
			}
		}
	}
	return b.String()
}

// textBytes is the length of v's JSON text, counted up to a little past limit.
func (v *jvalue) textBytes(limit int) int {
	n := 0
	var walk func(x *jvalue)
	walk = func(x *jvalue) {
		if n > limit {
			return
		}
		switch x.kind {
		case 'o':
			n += 2
			for i, k := range x.keys {
				n += len(k) + 4
				walk(x.vals[i])
			}
		case 'a':
			n += 2
			for _, e := range x.vals {
				n++
				walk(e)
			}
		case 's':
			n += len(x.str) + 2
		case 'n':
			n += len(x.str)
		default:
			n += 4
		}
	}
	walk(v)
	return n
}
