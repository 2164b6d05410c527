package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strconv"
)

// duplicateKey returns the path of the first object key that appears twice
// in the same object of body, at any depth ("max_tokens",
// "messages[1].content", "response_format.json_schema.name"), and whether
// there is one. Go's decoder keeps the last copy silently, so a gateway
// that checked the first copy could be bypassed: requests with duplicate
// keys are refused instead. A body that is not valid JSON reports none
// (json.Unmarshal reports it). It reads body once, token by token.
func duplicateKey(body []byte) (string, bool) {
	type frame struct {
		object bool
		keys   map[string]bool
		key    string // the object's current key
		index  int    // the array's current index
	}
	d := json.NewDecoder(bytes.NewReader(body))
	d.UseNumber()
	var stack []*frame
	path := func() string {
		var b []byte
		for i, f := range stack {
			switch {
			case f.object && i > 0:
				b = append(b, '.')
				b = append(b, f.key...)
			case f.object:
				b = append(b, f.key...)
			default:
				b = append(b, '[')
				b = strconv.AppendInt(b, int64(f.index), 10)
				b = append(b, ']')
			}
		}
		return string(b)
	}
	// value is called after a value (scalar or closed container) ends in
	// the current container: an array moves to its next index, an object
	// expects its next key.
	value := func() {
		if n := len(stack); n > 0 {
			if top := stack[n-1]; top.object {
				top.key = ""
			} else {
				top.index++
			}
		}
	}
	for {
		tok, err := d.Token()
		if errors.Is(err, io.EOF) || err != nil {
			return "", false
		}
		top := (*frame)(nil)
		if n := len(stack); n > 0 {
			top = stack[n-1]
		}
		if top != nil && top.object && top.key == "" {
			if k, ok := tok.(string); ok { // a key
				if top.keys[k] {
					top.key = k
					return path(), true
				}
				top.keys[k] = true
				top.key = k
				continue
			}
		}
		switch tok {
		case json.Delim('{'):
			stack = append(stack, &frame{object: true, keys: map[string]bool{}})
		case json.Delim('['):
			stack = append(stack, &frame{})
		case json.Delim('}'), json.Delim(']'):
			stack = stack[:len(stack)-1]
			value()
		default:
			value()
		}
	}
}
