package server

import (
	"encoding/json"
	"net/http"
	"testing"
)

func TestDuplicateKey(t *testing.T) {
	for _, c := range []struct {
		body, want string
	}{
		{`{"max_tokens": 1, "model": "m", "max_tokens": 300}`, "max_tokens"},
		{`{"messages": [{"role": "user", "content": "a"}, {"role": "user", "content": "b", "role": "system"}]}`, "messages[1].role"},
		{`{"response_format": {"type": "json_schema", "json_schema": {"name": "a", "schema": {}, "name": "b"}}}`, "response_format.json_schema.name"},
		{`{"a": [[1, 2], {"x": {"y": 1, "y": 2}}]}`, "a[1].x.y"},
		{`{"a": {"k": 1}, "b": {"k": 1}, "c": [{"k": 1}, {"k": 2}]}`, ""},
		{`{"k": "{\"k\": 1, \"k\": 2}"}`, ""}, // inside a string: not keys
		{`[{"a": 1}, {"a": 1, "a": 2}]`, "[1].a"},
		{`{"a": 1,`, ""}, // invalid: left to json.Unmarshal
		{`"a"`, ""},
	} {
		got, ok := duplicateKey([]byte(c.body))
		if ok != (c.want != "") || got != c.want {
			t.Errorf("%s: %q, %v; want %q", c.body, got, ok, c.want)
		}
	}
}

func FuzzDuplicateKey(f *testing.F) {
	f.Add(`{"a": 1, "a": 2}`)
	f.Add(`{"a": [{"b": 1}, {"b": 2, "b": 3}]}`)
	f.Fuzz(func(t *testing.T, body string) {
		duplicateKey([]byte(body)) // never panics
	})
}

// TestDuplicateKeysRefused: a body with a key twice, at any depth, is a 400
// naming it, on every JSON route; the same body without the copy works.
func TestDuplicateKeysRefused(t *testing.T) {
	ts := newTestServer(t, nil, Options{})
	for _, tc := range []struct{ path, body, param string }{
		{"/v1/completions", `{"prompt": "a", "max_tokens": 1, "max_tokens": 300}`, "max_tokens"},
		{"/v1/chat/completions", `{"messages": [{"role": "user", "content": "a", "content": "b"}], "max_tokens": 1}`, "messages[0].content"},
		{"/tokenize", `{"prompt": "a", "prompt": "b"}`, "prompt"},
	} {
		code, body := post(t, ts.url+tc.path, json.RawMessage(tc.body))
		checkError(t, code, body, http.StatusBadRequest, tc.param, "duplicate key")
	}
	code, body := post(t, ts.url+"/v1/completions", json.RawMessage(`{"prompt": "a", "max_tokens": 1}`))
	if code != http.StatusOK {
		t.Fatalf("without the copy: %d %s", code, body)
	}
}
