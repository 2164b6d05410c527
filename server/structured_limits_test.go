package server

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"pagoda/grammar"
)

// The structured-output attacks of issue 28 through the API: each is a 400 whose message
// names the limit and its value, streamed or not, and the server answers the next request.
func TestStructuredOutputLimits(t *testing.T) {
	ts := newTestServer(t, nil, Options{})
	nested := func(depth int, wrap func(string) string) json.RawMessage {
		s := `{"type":"string"}`
		for range depth {
			s = wrap(s)
		}
		return json.RawMessage(s)
	}
	object := func(s string) string { return `{"type":"object","properties":{"a":` + s + `},"required":["a"]}` }
	array := func(s string) string { return `{"type":"array","items":` + s + `}` }
	many := func(n int, f func(i int) string) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = f(i)
		}
		return out
	}
	var props, defs []string
	for i := range 20000 {
		props = append(props, fmt.Sprintf(`"p%d":{"$ref":"#/$defs/d%d"}`, i, i))
		defs = append(defs, fmt.Sprintf(`"d%d":{"type":"integer"}`, i))
	}
	refs := json.RawMessage(`{"type":"object","properties":{` + strings.Join(props, ",") + `},"$defs":{` + strings.Join(defs, ",") + `}}`)
	var gbnf strings.Builder
	gbnf.WriteString("root ::= r12\nr0 ::= \"a\" | \"b\"\n")
	for i := 1; i <= 12; i++ {
		fmt.Fprintf(&gbnf, "r%d ::= r%d | r%d \"x\" | r%d r%d\n", i, i-1, i-1, i-1, i-1)
	}
	for _, tc := range []struct {
		name   string
		fields map[string]any
		want   string
	}{
		{"objects 1,000 deep", map[string]any{"guided_json": nested(1000, object)}, "limit of 1000 for JSON nesting depth"},
		{"objects 4,900 deep", map[string]any{"guided_json": nested(4900, object)}, "limit of 1000 for JSON nesting depth"},
		{"objects 200 deep", map[string]any{"response_format": map[string]any{"type": "json_schema",
			"json_schema": map[string]any{"name": "x", "schema": nested(200, object)}}}, fmt.Sprintf("limit of %d for schema depth", grammar.MaxSchemaDepth)},
		{"arrays 9,000 deep", map[string]any{"guided_json": nested(9000, array)}, "limit of 1000 for JSON nesting depth"},
		{"enum of 100,000", map[string]any{"guided_json": map[string]any{"enum": many(100000, func(i int) string { return fmt.Sprint(i) })}},
			fmt.Sprintf("limit of %d for enum values", grammar.MaxEnumValues)},
		{"guided_choice of 100,000", map[string]any{"guided_choice": many(100000, func(i int) string { return fmt.Sprint("c", i) })},
			fmt.Sprintf("limit of %d for choices", grammar.MaxChoices)},
		{"20,000 $refs", map[string]any{"guided_json": refs}, fmt.Sprintf("limit of %d for schema nodes", grammar.MaxSchemaNodes)},
		{"GBNF exponential alternation, depth 12", map[string]any{"guided_grammar": gbnf.String()},
			fmt.Sprintf("limit of %d for compile work units", grammar.MaxCompileWork)},
	} {
		for _, streamed := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s stream=%v", tc.name, streamed), func(t *testing.T) {
				body := map[string]any{"prompt": "Once upon a time", "max_tokens": 4, "stream": streamed}
				for k, v := range tc.fields {
					body[k] = v
				}
				code, resp := post(t, ts.url+"/v1/completions", body)
				if code != http.StatusBadRequest || !strings.Contains(string(resp), tc.want) {
					t.Fatalf("%d %.300s, want 400 naming %q", code, resp, tc.want)
				}
			})
		}
	}
	// `(a+)+$` as a schema pattern compiles in bounded work and is served
	var resp completionResponse
	postOK(t, ts.url+"/v1/completions", map[string]any{"prompt": "Once upon a time", "max_tokens": 8, "temperature": 0,
		"guided_json": map[string]any{"type": "string", "pattern": "(a+)+$"}}, &resp)
	if text := resp.Choices[0].Text; !strings.HasPrefix(text, `"`) {
		t.Fatalf("(a+)+$: %q", text)
	}
	settle(t, ts)
}
