package server

import (
	"encoding/json"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"testing"

	"pagoda/engine"
)

func TestToolParsers(t *testing.T) {
	for _, tc := range []struct {
		parser, text, content string
		calls                 []toolCallFunc
	}{
		{"hermes", "plain answer", "plain answer", nil},
		{"hermes", "Let me look.\n<tool_call>\n{\"name\": \"get\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>",
			"Let me look.", []toolCallFunc{{"get", `{"city":"Paris"}`}}},
		{"hermes", "<tool_call>{\"name\": \"a\", \"arguments\": {}}</tool_call><tool_call>{\"name\": \"b\", \"arguments\": {\"x\": 1}}</tool_call>",
			"", []toolCallFunc{{"a", `{}`}, {"b", `{"x":1}`}}},
		{"hermes", "<tool_call>not json</tool_call>", "<tool_call>not json</tool_call>", nil},
		{"llama3_json", `{"name": "get", "parameters": {"city": "Paris"}}`, "", []toolCallFunc{{"get", `{"city":"Paris"}`}}},
		{"llama3_json", `<|python_tag|>{"name": "a", "parameters": {}}; {"name": "b", "arguments": {"y": [1]}}`, "",
			[]toolCallFunc{{"a", `{}`}, {"b", `{"y":[1]}`}}},
		{"llama3_json", `{"city": "Paris"}`, `{"city": "Paris"}`, nil},
		{"llama3_json", "The answer is 4.", "The answer is 4.", nil},
	} {
		content, calls := toolFormats[tc.parser].parse(tc.text)
		if content != tc.content || !slices.Equal(calls, tc.calls) {
			t.Errorf("%s(%q) = %q, %v; want %q, %v", tc.parser, tc.text, content, calls, tc.content, tc.calls)
		}
	}
	calls, ok := parseCallArray(`[{"name": "a", "parameters": {"q": "x"}}]`)
	if !ok || !slices.Equal(calls, []toolCallFunc{{"a", `{"q":"x"}`}}) {
		t.Errorf("parseCallArray = %v, %v", calls, ok)
	}
}

var weatherTool = map[string]any{"type": "function", "function": map[string]any{
	"name": "get_weather", "description": "Weather in a city",
	"parameters": map[string]any{"type": "object", "properties": map[string]any{
		"city": map[string]any{"type": "string", "enum": []string{"Paris", "Rome"}},
		"unit": map[string]any{"type": "string", "enum": []string{"C", "F"}}},
		"required": []string{"city", "unit"}, "additionalProperties": false}}}

// Structured outputs on the stories model: whatever the tiny model would
// write, the output follows the constraint.
func TestStructuredOutputs(t *testing.T) {
	ts := newTestServer(t, nil, Options{})
	schema := map[string]any{"type": "object", "properties": map[string]any{
		"color": map[string]any{"enum": []string{"red", "blue"}}, "n": map[string]any{"type": "integer"}},
		"required": []string{"color", "n"}, "additionalProperties": false}
	for _, tc := range []struct {
		name  string
		extra map[string]any
		check func(text string) bool
	}{
		{"guided_choice", map[string]any{"guided_choice": []string{"yes", "no"}}, func(s string) bool { return s == "yes" || s == "no" }},
		{"structured_outputs.choice", map[string]any{"structured_outputs": map[string]any{"choice": []string{"cat", "dog"}}}, func(s string) bool { return s == "cat" || s == "dog" }},
		{"guided_regex", map[string]any{"guided_regex": "[0-9]{3}-[a-z]{2}"}, regexp.MustCompile(`^[0-9]{3}-[a-z]{2}$`).MatchString},
		{"grammar", map[string]any{"grammar": `root ::= "a" ("b" | "c")+ "."`}, regexp.MustCompile(`^a[bc]+\.$`).MatchString},
		{"json_schema", map[string]any{"response_format": map[string]any{"type": "json_schema",
			"json_schema": map[string]any{"name": "x", "schema": schema, "strict": true}}}, func(s string) bool {
			var v struct {
				Color string `json:"color"`
				N     *int   `json:"n"`
			}
			return json.Unmarshal([]byte(s), &v) == nil && (v.Color == "red" || v.Color == "blue") && v.N != nil
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, temp := range []float64{0, 1} {
				body := map[string]any{"prompt": "Once upon a time", "max_tokens": 60, "temperature": temp, "seed": 3}
				for k, v := range tc.extra {
					body[k] = v
				}
				var resp completionResponse
				postOK(t, ts.url+"/v1/completions", body, &resp)
				c := resp.Choices[0]
				if !tc.check(c.Text) || c.FinishReason == nil || *c.FinishReason != "stop" {
					t.Fatalf("temperature %v: output %q, finish %v", temp, c.Text, c.FinishReason)
				}
			}
		})
	}
	for _, tc := range []struct {
		name  string
		body  map[string]any
		param string
	}{
		{"bad regex", map[string]any{"prompt": "a", "guided_regex": "(a"}, "guided_regex"},
		{"bad grammar", map[string]any{"prompt": "a", "guided_grammar": "root ::= \"a"}, "guided_grammar"},
		{"undefined rule", map[string]any{"prompt": "a", "grammar": "root ::= item"}, "grammar"},
		{"bad schema", map[string]any{"prompt": "a", "guided_json": "{not json"}, "guided_json"},
		{"two constraints", map[string]any{"prompt": "a", "guided_regex": "a", "guided_choice": []string{"b"}}, "guided_choice"},
		{"beam search", map[string]any{"prompt": "a", "guided_regex": "a", "use_beam_search": true, "best_of": 2}, ""},
		{"backend", map[string]any{"prompt": "a", "guided_regex": "a", "guided_decoding_backend": "outlines"}, "guided_decoding_backend"},
	} {
		code, b := post(t, ts.url+"/v1/completions", tc.body)
		checkError(t, code, b, http.StatusBadRequest, tc.param)
	}
	settle(t, ts)
}

// toolsTemplate is testTemplate showing the tools' names: a template that
// renders tools, so that the stories model's short context is not spent on
// the fallback prompt (toolfallback.go), which TestAutoToolCallFallback
// tests on the default model.
const toolsTemplate = "{% if tools %}tools:{% for t in tools %} {{ t.function.name }}{% endfor %}\n{% endif %}" + testTemplate

// Tool calling: required and named tool choice give valid calls, as whole
// responses and streamed; auto runs on a server without tool flags.
func TestToolCalls(t *testing.T) {
	ts := newTestServer(t, nil, Options{ChatTemplate: toolsTemplate})
	msgs := []map[string]any{{"role": "user", "content": "What is the weather in Paris?"}}
	for _, choice := range []any{"required", map[string]any{"type": "function", "function": map[string]any{"name": "get_weather"}}} {
		body := map[string]any{"messages": msgs, "tools": []any{weatherTool}, "tool_choice": choice, "max_tokens": 200, "temperature": 0,
			"parallel_tool_calls": false}
		var resp chatResponse
		postOK(t, ts.url+"/v1/chat/completions", body, &resp)
		ch := resp.Choices[0]
		wantFinish := "tool_calls" // named tool choice: "stop", as OpenAI and vLLM answer
		if _, named := choice.(map[string]any); named {
			wantFinish = "stop"
		}
		if len(ch.Message.ToolCalls) != 1 || *ch.FinishReason != wantFinish || ch.Message.Content != nil {
			t.Fatalf("tool_choice %v: %+v", choice, ch)
		}
		call := ch.Message.ToolCalls[0]
		var args struct{ City, Unit string }
		if call.Function.Name != "get_weather" || json.Unmarshal([]byte(call.Function.Arguments), &args) != nil ||
			(args.City != "Paris" && args.City != "Rome") || !strings.HasPrefix(call.ID, "chatcmpl-tool-") {
			t.Fatalf("tool_choice %v: call %+v", choice, call)
		}
		body["stream"] = true
		events := stream(t, ts.url+"/v1/chat/completions", body)
		var got []toolCallDelta
		var finishes []string
		for _, ev := range events {
			var c chatChunk
			if err := json.Unmarshal([]byte(ev), &c); err != nil {
				t.Fatal(err)
			}
			if len(c.Choices) > 0 {
				got = reassemble(got, c.Choices[0].Delta.ToolCalls)
				if f := c.Choices[0].FinishReason; f != nil {
					finishes = append(finishes, *f)
				}
			}
		}
		if len(got) != 1 || got[0].Function.Name != "get_weather" || got[0].Function.Arguments != call.Function.Arguments {
			t.Fatalf("streamed calls %+v, whole %+v", got, call)
		}
		if len(finishes) != 1 || finishes[0] != wantFinish {
			t.Fatalf("tool_choice %v: streamed finish reasons %v, want %s", choice, finishes, wantFinish)
		}
	}
	var auto chatResponse
	postOK(t, ts.url+"/v1/chat/completions", map[string]any{"messages": msgs, "tools": []any{weatherTool}, "max_tokens": 4}, &auto)
	code, b := post(t, ts.url+"/v1/chat/completions", map[string]any{"messages": msgs, "tools": []any{weatherTool},
		"tool_choice": map[string]any{"type": "function", "function": map[string]any{"name": "nope"}}})
	checkError(t, code, b, http.StatusBadRequest, "tool_choice", "nope")
	history := []map[string]any{msgs[0],
		{"role": "assistant", "content": nil, "tool_calls": []any{map[string]any{"id": "c1", "type": "function",
			"function": map[string]any{"name": "get_weather", "arguments": `{"city": "Paris", "unit": "C"}`}}}},
		{"role": "tool", "tool_call_id": "c1", "content": "21 C"}}
	var resp chatResponse
	postOK(t, ts.url+"/v1/chat/completions", map[string]any{"messages": history, "tools": []any{weatherTool},
		"tool_choice": "none", "max_tokens": 4}, &resp)
	settle(t, ts)
}

// tool_choice auto runs free and the output is read by the parser
// (--tool-call-parser here): the stories model writes no call, so the
// answer is content with finish_reason stop.
func TestAutoToolChoice(t *testing.T) {
	ts := newTestServer(t, nil, Options{ChatTemplate: toolsTemplate, ToolCallParser: "llama3_json"})
	if b := ts.s.backend.Load(); b.toolParser != "llama3_json" || b.toolFallback != nil {
		t.Fatalf("parser %q, fallback %v: want llama3_json, no fallback", b.toolParser, b.toolFallback != nil)
	}
	var resp chatResponse
	postOK(t, ts.url+"/v1/chat/completions", map[string]any{"messages": []map[string]any{{"role": "user", "content": "Hi"}},
		"tools": []any{weatherTool}, "max_tokens": 8, "temperature": 0}, &resp)
	ch := resp.Choices[0]
	if ch.Message.Content == nil || ch.Message.ToolCalls != nil || *ch.FinishReason == "tool_calls" {
		t.Fatalf("%+v", ch)
	}
	settle(t, ts)
}

// Requests with the same constraint share one grammar (and so one warm
// mask cache in the engine); errors are cached too (work units decide them);
// the cache is bounded in bytes, the least recently used dropped first.
func TestGrammarCache(t *testing.T) {
	c := grammarCache{}
	f := guidedFields{GuidedRegex: ptr("[a-z]+")}
	g1, aerr := f.grammar(&c)
	g2, _ := (&guidedFields{StructuredOutputs: &structuredOutputs{Regex: ptr("[a-z]+")}}).grammar(&c)
	if aerr != nil || g1 == nil || g1 != g2 {
		t.Fatalf("the same regex gave %p and %p (%v)", g1, g2, aerr)
	}
	if _, aerr := (&guidedFields{GuidedRegex: ptr("(")}).grammar(&c); aerr == nil || c.len() != 2 {
		t.Fatalf("a bad regex: %v, %d cached", aerr, c.len())
	}
	c.limit = int64(g1.MemoryBytes()) * 3
	for _, re := range []string{"a", "b", "c", "d", "e", "f"} {
		(&guidedFields{GuidedRegex: ptr(re)}).grammar(&c)
	}
	if c.len() > 4 || c.bytes > c.limit {
		t.Fatalf("%d cached in %d bytes, limit %d bytes", c.len(), c.bytes, c.limit)
	}
}

// /tokenize renders tools as a chat request does (vLLM's tokenize takes
// them too): with a template that shows the tools, the count grows by them
// and equals the prompt tokens of the chat request.
func TestTokenizeTools(t *testing.T) {
	tmpl := `{% if tools %}tools:{% for t in tools %} {{ t.function.name }}{% endfor %}
{% endif %}{% for m in messages %}{{ m.role }}: {{ m.content }}
{% endfor %}`
	ts := newTestServer(t, nil, Options{ChatTemplate: tmpl})
	msgs := []map[string]any{{"role": "user", "content": "What is the weather in Paris?"}}
	var plain, withTools tokenizeResponse
	postOK(t, ts.url+"/tokenize", map[string]any{"messages": msgs}, &plain)
	postOK(t, ts.url+"/tokenize", map[string]any{"messages": msgs, "tools": []any{weatherTool}}, &withTools)
	var resp chatResponse
	postOK(t, ts.url+"/v1/chat/completions", map[string]any{"messages": msgs, "tools": []any{weatherTool},
		"tool_choice": "none", "max_tokens": 1}, &resp)
	if withTools.Count <= plain.Count || withTools.Count != resp.Usage.PromptTokens {
		t.Fatalf("/tokenize: %d tokens without tools, %d with; the chat request's prompt: %d",
			plain.Count, withTools.Count, resp.Usage.PromptTokens)
	}
	settle(t, ts)
}

// reassemble adds streamed tool-call deltas to the calls so far, as the
// OpenAI clients do: a delta with a new index starts a call, later ones
// append to its arguments.
func reassemble(calls, deltas []toolCallDelta) []toolCallDelta {
	for _, d := range deltas {
		for len(calls) <= d.Index {
			calls = append(calls, toolCallDelta{Index: len(calls)})
		}
		c := &calls[d.Index]
		if d.ID != "" {
			c.ID, c.Type = d.ID, d.Type
		}
		c.Function.Name += d.Function.Name
		c.Function.Arguments += d.Function.Arguments
	}
	return calls
}

// Streaming an auto tool choice: text goes out as content until a call may
// begin; the call comes as a tool-call delta at the end; a false start is
// sent as content at the end.
func TestToolStreamAuto(t *testing.T) {
	for _, tc := range []struct {
		parser  string
		deltas  []string
		content string // all content sent
		call    string // the call's name, or "" for none
	}{
		{"hermes", []string{"Sure, ", "<tool", `_call>{"name": "get_weather", "arguments": {"city": "Paris"}}</tool_call>`}, "Sure, ", "get_weather"},
		{"hermes", []string{"It is ", "sunny <to", "day."}, "It is sunny <today.", ""},
		{"llama3_json", []string{" {", `"name": "get_weather", "parameters": {}}`}, "", "get_weather"},
		{"llama3_json", []string{"Paris ", "is sunny."}, "Paris is sunny.", ""},
	} {
		c := &chatRun{b: &backend{}, req: &chatRequest{}, tools: &toolPlan{mode: toolsAuto, parser: tc.parser}}
		var full engine.CompletionOutput
		var content string
		var calls []toolCallDelta
		for i, d := range tc.deltas {
			o := engine.CompletionOutput{Text: d}
			if i == len(tc.deltas)-1 {
				o.FinishReason = "stop"
			}
			full.Text += d
			full.FinishReason = o.FinishReason
			if v := c.toolChunk(o, full); v != nil {
				ch := v.(chatChunk).Choices[0]
				if ch.Delta.Content != nil {
					content += *ch.Delta.Content
				}
				calls = reassemble(calls, ch.Delta.ToolCalls)
			}
		}
		if content != tc.content || (tc.call == "") != (len(calls) == 0) || (tc.call != "" && calls[0].Function.Name != tc.call) {
			t.Errorf("%s %q: content %q, calls %+v", tc.parser, tc.deltas, content, calls)
		}
	}
}
