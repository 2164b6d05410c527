package server

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
)

// rebaseRefs returns a tool's parameters schema with its local $refs ("#"
// and "#/…" JSON pointers, which point into the schema itself, e.g.
// Pydantic's "#/$defs/Color") moved under base, the JSON pointer at which
// the schema sits inside a larger one ("#/items/anyOf/0/properties/parameters"),
// so that they resolve to the same place once the tools are combined. A
// $ref is a string under the key "$ref"; the values of const, enum,
// default and examples are data and left as they are. The output is
// compact JSON with the keys in their order.
func rebaseRefs(schema []byte, base string) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(schema))
	dec.UseNumber()
	var out bytes.Buffer
	if err := rebaseValue(dec, &out, base, false); err != nil {
		return nil, err
	}
	if dec.More() {
		return nil, fmt.Errorf("data after the schema")
	}
	return out.Bytes(), nil
}

// dataKeywords hold JSON values, not schemas.
var dataKeywords = map[string]bool{"const": true, "enum": true, "default": true, "examples": true}

// rebaseValue copies the next JSON value of dec to out; inside data (see
// dataKeywords) nothing is rewritten.
func rebaseValue(dec *json.Decoder, out *bytes.Buffer, base string, data bool) error {
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	return rebaseFrom(tok, dec, out, base, data)
}

// rebaseFrom copies the JSON value that begins with tok (read from dec).
func rebaseFrom(tok json.Token, dec *json.Decoder, out *bytes.Buffer, base string, data bool) error {
	switch t := tok.(type) {
	case json.Delim:
		closing := map[json.Delim]byte{'{': '}', '[': ']'}[t]
		out.WriteByte(byte(t))
		for i := 0; dec.More(); i++ {
			if i > 0 {
				out.WriteByte(',')
			}
			inData := data
			if t == '{' {
				kt, err := dec.Token()
				if err != nil {
					return err
				}
				key := kt.(string)
				appendJSON(out, key)
				out.WriteByte(':')
				if !data && key == "$ref" {
					if err := rebaseRef(dec, out, base); err != nil {
						return err
					}
					continue
				}
				inData = data || dataKeywords[key]
			}
			if err := rebaseValue(dec, out, base, inData); err != nil {
				return err
			}
		}
		if _, err := dec.Token(); err != nil {
			return err
		}
		out.WriteByte(closing)
	case json.Number:
		out.WriteString(t.String())
	default: // string, bool, nil
		appendJSON(out, t)
	}
	return nil
}

// rebaseRef copies the value of a $ref key, moving a local reference
// under base. A remote reference is left for the schema compiler to
// judge; a value that is not a string is a schema (a property named $ref).
func rebaseRef(dec *json.Decoder, out *bytes.Buffer, base string) error {
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	if ref, ok := tok.(string); ok && (ref == "#" || strings.HasPrefix(ref, "#/")) {
		tok = base + ref[1:]
	}
	return rebaseFrom(tok, dec, out, base, false)
}

// appendJSON writes a string, bool or nil as JSON.
func appendJSON(out *bytes.Buffer, v any) {
	b, _ := json.Marshal(v)
	out.Write(b)
}
