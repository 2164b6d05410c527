package tokenizer

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"

	"github.com/nikolalohinski/gonja/v2/exec"
)

// Object is a JSON object that keeps the order of its keys, as a Python dict keeps the order in
// which a request listed them. Templates see it as a dict: tojson, items() and for loops walk
// it in that order, so a tool schema renders exactly as the client sent it (Hugging Face renders
// request JSON that way). A Go map reaches a template with its keys sorted instead.
//
// Keys lists each key once; Values holds the value of every key in Keys.
type Object struct {
	Keys   []string
	Values map[string]any
}

// Set sets key to v, appending key if it is new (a repeated key keeps its first position and
// takes the last value, as in Python's json.loads).
func (o *Object) Set(key string, v any) {
	if o.Values == nil {
		o.Values = map[string]any{}
	}
	if _, ok := o.Values[key]; !ok {
		o.Keys = append(o.Keys, key)
	}
	o.Values[key] = v
}

// UnmarshalJSON decodes a JSON object with DecodeJSON's rules.
func (o *Object) UnmarshalJSON(data []byte) error {
	v, err := DecodeJSON(data)
	if err != nil {
		return err
	}
	obj, ok := v.(Object)
	if !ok {
		return fmt.Errorf("tokenizer: %.20q is not a JSON object", data)
	}
	*o = obj
	return nil
}

// MarshalJSON encodes the object with its keys in order.
func (o Object) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, k := range o.Keys {
		if i > 0 {
			b.WriteByte(',')
		}
		key, err := json.Marshal(k)
		if err != nil {
			return nil, err
		}
		val, err := json.Marshal(o.Values[k])
		if err != nil {
			return nil, err
		}
		b.Write(key)
		b.WriteByte(':')
		b.Write(val)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// DecodeJSON decodes one JSON value into what Python's json.loads would give a template:
// objects as Objects (key order kept), arrays as []any, integers as int (float64 beyond int64),
// other numbers as float64 (±Inf beyond its range), and strings, booleans and null as string,
// bool and nil.
func DecodeJSON(data []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	v, err := decodeJSONValue(dec)
	if err != nil {
		return nil, fmt.Errorf("tokenizer: decoding JSON: %w", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("tokenizer: decoding JSON: data after the value")
	}
	return v, nil
}

func decodeJSONValue(dec *json.Decoder) (any, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '{':
			obj := Object{Values: map[string]any{}}
			for dec.More() {
				kt, err := dec.Token()
				if err != nil {
					return nil, err
				}
				v, err := decodeJSONValue(dec)
				if err != nil {
					return nil, err
				}
				obj.Set(kt.(string), v)
			}
			_, err := dec.Token() // '}'
			return obj, err
		case '[':
			list := []any{}
			for dec.More() {
				v, err := decodeJSONValue(dec)
				if err != nil {
					return nil, err
				}
				list = append(list, v)
			}
			_, err := dec.Token() // ']'
			return list, err
		}
		return nil, fmt.Errorf("unexpected %v", t)
	case json.Number:
		if i, err := t.Int64(); err == nil {
			return int(i), nil
		}
		f, err := strconv.ParseFloat(string(t), 64)
		if errors.Is(err, strconv.ErrRange) {
			err = nil // ±Inf or 0, as Python's float() gives
		}
		return f, err
	default: // string, bool, nil
		return t, nil
	}
}

// templateValue converts a value handed to Render into what gonja evaluates: Objects become
// gonja's ordered dicts, recursively through lists and maps. An empty Object becomes an empty
// map, which gonja, like Python, takes as false (it takes every ordered dict as true).
func templateValue(v any) any {
	switch x := v.(type) {
	case Object:
		if len(x.Keys) == 0 {
			return map[string]any{}
		}
		d := &exec.Dict{Pairs: make([]*exec.Pair, 0, len(x.Keys))}
		for _, k := range x.Keys {
			d.Pairs = append(d.Pairs, &exec.Pair{Key: exec.AsValue(k), Value: exec.AsValue(templateValue(x.Values[k]))})
		}
		return d
	case *Object:
		if x == nil {
			return nil
		}
		return templateValue(*x)
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = templateValue(e)
		}
		return out
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = templateValue(e)
		}
		return out
	}
	return v
}
