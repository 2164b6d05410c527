package server

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

func TestRebaseRefs(t *testing.T) {
	const base = "#/items/anyOf/1/properties/parameters"
	for _, tc := range []struct{ in, want string }{
		{`{"$ref": "#/$defs/Color"}`, `{"$ref":"#/items/anyOf/1/properties/parameters/$defs/Color"}`},
		{`{"$ref": "#"}`, `{"$ref":"#/items/anyOf/1/properties/parameters"}`},
		{`{"items": [{"$ref": "#/definitions/a~1b"}]}`, `{"items":[{"$ref":"#/items/anyOf/1/properties/parameters/definitions/a~1b"}]}`},
		// Data is not rewritten; other references are left to the schema compiler.
		{`{"const": {"$ref": "#/x"}, "enum": [{"$ref": "#"}], "default": {"$ref": "#"}}`,
			`{"const":{"$ref":"#/x"},"enum":[{"$ref":"#"}],"default":{"$ref":"#"}}`},
		{`{"$ref": "https://example.com/s.json"}`, `{"$ref":"https://example.com/s.json"}`},
		{`{"$ref": 7}`, `{"$ref":7}`},
		// A property named $ref holds a schema; key order and numbers are kept.
		{`{"properties": {"z": {"maximum": 12345678901234567890}, "$ref": {"$ref": "#/$defs/A"}}}`,
			`{"properties":{"z":{"maximum":12345678901234567890},"$ref":{"$ref":"#/items/anyOf/1/properties/parameters/$defs/A"}}}`},
	} {
		got, err := rebaseRefs([]byte(tc.in), base)
		if err != nil || string(got) != tc.want {
			t.Errorf("rebaseRefs(%s) = %s, %v; want %s", tc.in, got, err, tc.want)
		}
	}
	for _, bad := range []string{`{"a": }`, `{"a": 1} {}`, `{"a": [1, 2}`} {
		if _, err := rebaseRefs([]byte(bad), base); err == nil {
			t.Errorf("rebaseRefs(%s): no error", bad)
		}
	}
}

// Tools whose parameters use $defs (Pydantic writes nested models and
// enums so), each its own under the same name, combine into the grammar of
// tool_choice required: every call is valid for its own tool.
func TestRequiredToolRefs(t *testing.T) {
	ts := newTestServer(t, nil, Options{ChatTemplate: toolsTemplate})
	profile := json.RawMessage(`{"$defs": {
		"Color": {"enum": ["red", "green"], "title": "Color", "type": "string"},
		"Pet": {"properties": {"name": {"maxLength": 8, "title": "Name", "type": "string"}, "color": {"$ref": "#/$defs/Color"}},
			"required": ["name", "color"], "title": "Pet", "type": "object"}},
		"properties": {"favorite_color": {"$ref": "#/$defs/Color"}, "pet": {"$ref": "#/$defs/Pet"}},
		"required": ["favorite_color", "pet"], "title": "SetProfile", "type": "object"}`)
	paint := json.RawMessage(`{"$defs": {"Color": {"const": "blue"}}, "properties": {"color": {"$ref": "#/$defs/Color"}},
		"required": ["color"], "type": "object"}`)
	tools := []any{
		map[string]any{"type": "function", "function": map[string]any{"name": "set_profile", "parameters": profile}},
		map[string]any{"type": "function", "function": map[string]any{"name": "paint", "parameters": paint}},
	}
	var resp chatResponse
	postOK(t, ts.url+"/v1/chat/completions", map[string]any{"messages": chatMessages, "tools": tools, "tool_choice": "required",
		"max_tokens": 200, "temperature": 1, "seed": 5, "n": 4, "parallel_tool_calls": false}, &resp)
	seen := map[string]bool{}
	for _, ch := range resp.Choices {
		if len(ch.Message.ToolCalls) == 0 {
			t.Fatalf("choice %d has no call: %q, %s", ch.Index, deref(ch.Message.Content), deref(ch.FinishReason))
		}
		for _, c := range ch.Message.ToolCalls {
			seen[c.Function.Name] = true
			var args struct {
				FavoriteColor string `json:"favorite_color"`
				Color         string
				Pet           *struct{ Name, Color string }
			}
			if err := json.Unmarshal([]byte(c.Function.Arguments), &args); err != nil {
				t.Fatal(err)
			}
			ok := c.Function.Name == "paint" && args.Color == "blue" ||
				c.Function.Name == "set_profile" && (args.FavoriteColor == "red" || args.FavoriteColor == "green") &&
					args.Pet != nil && (args.Pet.Color == "red" || args.Pet.Color == "green") && len(args.Pet.Name) <= 8
			if !ok {
				t.Errorf("call %s(%s) is not valid for its tool", c.Function.Name, c.Function.Arguments)
			}
		}
	}
	if !seen["paint"] || !seen["set_profile"] { // the seed draws both
		t.Errorf("tools called: %v, want both", seen)
	}
	settle(t, ts)
}

// rebaseRefs never fails on valid JSON, always writes valid JSON, and
// changes nothing but local $refs.
func FuzzRebaseRefs(f *testing.F) {
	for _, s := range []string{`{"$ref": "#/$defs/A", "$defs": {"A": {"enum": [1, {"$ref": "#"}]}}}`, `[1, "x", null]`,
		`{"properties": {"$ref": {"$ref": "#"}}}`, `{"a": 1e400}`, `"\u00e9<>"`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		out, err := rebaseRefs([]byte(in), "#/b")
		if !json.Valid([]byte(in)) {
			return
		}
		if err != nil || !json.Valid(out) {
			t.Fatalf("rebaseRefs(%s) = %s, %v", in, out, err)
		}
		var a, b any
		json.Unmarshal([]byte(in), &a)
		json.Unmarshal(out, &b)
		if !strings.Contains(in, "$ref") && !reflect.DeepEqual(a, b) {
			t.Fatalf("rebaseRefs(%s) = %s: changed", in, out)
		}
	})
}
