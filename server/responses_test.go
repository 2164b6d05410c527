package server

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// namedEvent is one event of a named SSE stream (Responses, Anthropic).
type namedEvent struct {
	name string
	data map[string]any
	raw  string
}

// streamNamed posts a streaming request and returns its events, checking
// the framing: "event: NAME", "data: JSON" whose type is NAME, a blank
// line; no [DONE].
func streamNamed(t testing.TB, url string, body any, header ...string) []namedEvent {
	t.Helper()
	resp := do(t, context.Background(), "POST", url, body, header...)
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("status %d: %s", resp.StatusCode, b)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("Content-Type %q", ct)
	}
	var events []namedEvent
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		name, ok := strings.CutPrefix(sc.Text(), "event: ")
		if !ok {
			t.Fatalf("event line %q does not start with \"event: \"", sc.Text())
		}
		if !sc.Scan() {
			t.Fatalf("event %s without data", name)
		}
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			t.Fatalf("event %s: line %q does not start with \"data: \"", name, sc.Text())
		}
		ev := namedEvent{name: name, raw: data}
		if err := json.Unmarshal([]byte(data), &ev.data); err != nil {
			t.Fatalf("event %s: %v: %s", name, err, data)
		}
		if ev.data["type"] != name {
			t.Fatalf("event %s carries type %v", name, ev.data["type"])
		}
		events = append(events, ev)
		if !sc.Scan() || sc.Text() != "" {
			t.Fatalf("event %s is not followed by a blank line", name)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return events
}

// responseShape is the part of a response object the tests read.
type responseShape struct {
	ID                 string            `json:"id"`
	Object             string            `json:"object"`
	Status             string            `json:"status"`
	Model              string            `json:"model"`
	PreviousResponseID *string           `json:"previous_response_id"`
	IncompleteDetails  map[string]any    `json:"incomplete_details"`
	Output             []json.RawMessage `json:"output"`
	Usage              struct {
		InputTokens         int `json:"input_tokens"`
		OutputTokens        int `json:"output_tokens"`
		TotalTokens         int `json:"total_tokens"`
		OutputTokensDetails struct {
			ReasoningTokens int `json:"reasoning_tokens"`
		} `json:"output_tokens_details"`
	} `json:"usage"`
}

type outputItemShape struct {
	Type      string `json:"type"`
	ID        string `json:"id"`
	Status    string `json:"status"`
	Role      string `json:"role"`
	CallID    string `json:"call_id"`
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
	Content   []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	} `json:"content"`
	Summary []any `json:"summary"`
}

func (r responseShape) items(t testing.TB) []outputItemShape {
	t.Helper()
	out := make([]outputItemShape, len(r.Output))
	for i, raw := range r.Output {
		if err := json.Unmarshal(raw, &out[i]); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// text is the response's output_text: its message items' text.
func (r responseShape) text(t testing.TB) string {
	var sb strings.Builder
	for _, it := range r.items(t) {
		if it.Type == "message" {
			for _, c := range it.Content {
				sb.WriteString(c.Text)
			}
		}
	}
	return sb.String()
}

// A response is the chat completion of the same conversation: text input is
// a user message, instructions a system message first; the object has
// OpenAI's shape; streamed, its events come in the Responses order and
// add up to the same response.
func TestResponsesText(t *testing.T) {
	ts := newTestServer(t, nil, Options{})
	url := ts.url + "/v1/responses"
	var chat chatResponse
	postOK(t, ts.url+"/v1/chat/completions", map[string]any{"messages": []map[string]any{
		{"role": "system", "content": "Be kind."}, {"role": "user", "content": "Tell me a story."}},
		"max_tokens": 12, "temperature": 0}, &chat)
	body := map[string]any{"input": "Tell me a story.", "instructions": "Be kind.", "max_output_tokens": 12, "temperature": 0}
	var resp responseShape
	postOK(t, url, body, &resp)
	items := resp.items(t)
	if resp.Object != "response" || !strings.HasPrefix(resp.ID, "resp_") || len(items) != 1 || items[0].Type != "message" ||
		items[0].Role != "assistant" || items[0].Content[0].Type != "output_text" || !strings.HasPrefix(items[0].ID, "msg_") {
		t.Fatalf("response %+v", resp)
	}
	if got, want := resp.text(t), *chat.Choices[0].Message.Content; got != want {
		t.Errorf("text %q, chat %q", got, want)
	}
	if resp.Usage.InputTokens != chat.Usage.PromptTokens || resp.Usage.OutputTokens != chat.Usage.CompletionTokens ||
		resp.Usage.TotalTokens != chat.Usage.TotalTokens {
		t.Errorf("usage %+v, chat %+v", resp.Usage, chat.Usage)
	}
	wantStatus := map[string]string{"stop": "completed", "length": "incomplete"}[*chat.Choices[0].FinishReason]
	if resp.Status != wantStatus || (wantStatus == "incomplete") != (resp.IncompleteDetails["reason"] == "max_output_tokens") {
		t.Errorf("status %q %v, chat finish %s", resp.Status, resp.IncompleteDetails, *chat.Choices[0].FinishReason)
	}
	// The same conversation as message items with content parts.
	var items2 responseShape
	postOK(t, url, map[string]any{"input": []any{
		map[string]any{"type": "message", "role": "system", "content": []any{map[string]any{"type": "input_text", "text": "Be kind."}}},
		map[string]any{"role": "user", "content": "Tell me a story."}}, "max_output_tokens": 12, "temperature": 0}, &items2)
	if items2.text(t) != resp.text(t) || items2.Usage.InputTokens != resp.Usage.InputTokens {
		t.Errorf("message items: %q %d, want %q %d", items2.text(t), items2.Usage.InputTokens, resp.text(t), resp.Usage.InputTokens)
	}

	body["stream"] = true
	events := streamNamed(t, url, body)
	var names []string
	var text strings.Builder
	for i, ev := range events {
		names = append(names, ev.name)
		if ev.data["sequence_number"] != float64(i) {
			t.Fatalf("event %d %s: sequence_number %v", i, ev.name, ev.data["sequence_number"])
		}
		if ev.name == "response.output_text.delta" {
			text.WriteString(ev.data["delta"].(string))
		}
	}
	last := events[len(events)-1]
	want := []string{"response.created", "response.in_progress", "response.output_item.added", "response.content_part.added"}
	if len(names) < 8 || strings.Join(names[:4], " ") != strings.Join(want, " ") ||
		strings.Join(names[len(names)-4:len(names)-1], " ") != "response.output_text.done response.content_part.done response.output_item.done" {
		t.Fatalf("events %v", names)
	}
	if last.name != map[string]string{"completed": "response.completed", "incomplete": "response.incomplete"}[resp.Status] {
		t.Fatalf("last event %s, whole response %s", last.name, resp.Status)
	}
	var final responseShape
	b, _ := json.Marshal(last.data["response"])
	json.Unmarshal(b, &final)
	if text.String() != resp.text(t) || final.text(t) != resp.text(t) || final.Usage != resp.Usage || final.Status != resp.Status {
		t.Errorf("streamed %q, final %+v; whole %q %+v", text.String(), final, resp.text(t), resp)
	}
	settle(t, ts)
}

// previous_response_id continues a stored conversation (its instructions
// not carried over); store false keeps nothing; a missing id is a 404 in
// OpenAI's error shape; GET and DELETE reach stored responses.
func TestResponsesPrevious(t *testing.T) {
	ts := newTestServer(t, nil, Options{})
	url := ts.url + "/v1/responses"
	var first responseShape
	postOK(t, url, map[string]any{"input": "Tell me a story.", "instructions": "Be kind.", "max_output_tokens": 6, "temperature": 0}, &first)
	var second responseShape
	postOK(t, url, map[string]any{"input": "Another one.", "previous_response_id": first.ID, "max_output_tokens": 6, "temperature": 0}, &second)
	if second.PreviousResponseID == nil || *second.PreviousResponseID != first.ID {
		t.Errorf("previous_response_id %v", second.PreviousResponseID)
	}
	var chat chatResponse
	postOK(t, ts.url+"/v1/chat/completions", map[string]any{"messages": []map[string]any{
		{"role": "user", "content": "Tell me a story."}, {"role": "assistant", "content": first.text(t)},
		{"role": "user", "content": "Another one."}}, "max_tokens": 6, "temperature": 0}, &chat)
	if second.Usage.InputTokens != chat.Usage.PromptTokens || second.text(t) != *chat.Choices[0].Message.Content {
		t.Errorf("continued: %d tokens %q; chat of the conversation: %d %q", second.Usage.InputTokens, second.text(t),
			chat.Usage.PromptTokens, *chat.Choices[0].Message.Content)
	}
	var got responseShape
	getJSON(t, url+"/"+second.ID, &got)
	if got.ID != second.ID || got.text(t) != second.text(t) || got.Status != second.Status {
		t.Errorf("GET %+v, want %+v", got, second)
	}

	var unstored responseShape
	postOK(t, url, map[string]any{"input": "Hi", "store": false, "max_output_tokens": 2}, &unstored)
	code, b := post(t, url, map[string]any{"input": "Hi", "previous_response_id": unstored.ID})
	checkError(t, code, b, http.StatusNotFound, "previous_response_id", unstored.ID)
	resp := do(t, context.Background(), "GET", url+"/resp_nope", nil)
	b, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	checkError(t, resp.StatusCode, b, http.StatusNotFound, "response_id")

	resp = do(t, context.Background(), "DELETE", url+"/"+first.ID, nil)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("DELETE: %d", resp.StatusCode)
	}
	code, b = post(t, url, map[string]any{"input": "Hi", "previous_response_id": first.ID})
	checkError(t, code, b, http.StatusNotFound, "previous_response_id")
	// A stream is stored too.
	events := streamNamed(t, url, map[string]any{"input": "Hi", "max_output_tokens": 3, "stream": true})
	id := events[0].data["response"].(map[string]any)["id"].(string)
	postOK(t, url, map[string]any{"input": "Hi", "previous_response_id": id, "max_output_tokens": 2}, &got)
	settle(t, ts)
}

// Function tools: required and named tool_choice give function_call items
// (whole and streamed), and a function_call_output turn continues the
// conversation as a chat tool message does.
func TestResponsesTools(t *testing.T) {
	ts := newTestServer(t, nil, Options{ChatTemplate: toolsTemplate})
	url := ts.url + "/v1/responses"
	tool := map[string]any{"type": "function", "name": "get_weather", "description": "Weather in a city",
		"parameters": weatherTool["function"].(map[string]any)["parameters"]}
	for _, choice := range []any{"required", map[string]any{"type": "function", "name": "get_weather"}} {
		body := map[string]any{"input": "What is the weather in Paris?", "tools": []any{tool}, "tool_choice": choice,
			"max_output_tokens": 200, "temperature": 0, "parallel_tool_calls": false}
		var resp responseShape
		postOK(t, url, body, &resp)
		items := resp.items(t)
		if len(items) != 1 || items[0].Type != "function_call" || items[0].Name != "get_weather" || items[0].CallID == "" ||
			!strings.HasPrefix(items[0].ID, "fc_") || items[0].Status != "completed" {
			t.Fatalf("tool_choice %v: %s", choice, jsonString(resp))
		}
		var args struct{ City, Unit string }
		if json.Unmarshal([]byte(items[0].Arguments), &args) != nil || args.City == "" || args.Unit == "" {
			t.Fatalf("arguments %q", items[0].Arguments)
		}
		body["stream"] = true
		var streamed, done string
		var names []string
		for _, ev := range streamNamed(t, url, body) {
			names = append(names, ev.name)
			switch ev.name {
			case "response.function_call_arguments.delta":
				streamed += ev.data["delta"].(string)
			case "response.function_call_arguments.done":
				done = ev.data["arguments"].(string)
			}
		}
		if streamed != items[0].Arguments || done != streamed {
			t.Fatalf("tool_choice %v: streamed arguments %q, done %q, whole %q; events %v", choice, streamed, done, items[0].Arguments, names)
		}

		// The call and its output, sent back as openai-agents sends them.
		next := map[string]any{"input": []any{
			map[string]any{"role": "user", "content": "What is the weather in Paris?"},
			map[string]any{"type": "function_call", "id": items[0].ID, "call_id": items[0].CallID, "name": "get_weather",
				"arguments": items[0].Arguments, "status": "completed"},
			map[string]any{"type": "function_call_output", "call_id": items[0].CallID, "output": "21 C"}},
			"tools": []any{tool}, "tool_choice": "none", "max_output_tokens": 4, "temperature": 0}
		var after responseShape
		postOK(t, url, next, &after)
		var chat chatResponse
		postOK(t, ts.url+"/v1/chat/completions", map[string]any{"messages": []any{
			map[string]any{"role": "user", "content": "What is the weather in Paris?"},
			map[string]any{"role": "assistant", "content": nil, "tool_calls": []any{map[string]any{"id": items[0].CallID,
				"type": "function", "function": map[string]any{"name": "get_weather", "arguments": items[0].Arguments}}}},
			map[string]any{"role": "tool", "tool_call_id": items[0].CallID, "content": "21 C"}},
			"tools": []any{weatherTool}, "tool_choice": "none", "max_tokens": 4, "temperature": 0}, &chat)
		if after.Usage.InputTokens != chat.Usage.PromptTokens || after.text(t) != *chat.Choices[0].Message.Content {
			t.Fatalf("after the tool: %d %q, chat %d %q", after.Usage.InputTokens, after.text(t), chat.Usage.PromptTokens,
				*chat.Choices[0].Message.Content)
		}
	}
	for _, tc := range []struct {
		body  map[string]any
		param string
	}{
		{map[string]any{"input": "Hi", "tools": []any{map[string]any{"type": "web_search"}}}, "tools"},
		{map[string]any{"input": "Hi", "tools": []any{tool}, "tool_choice": map[string]any{"type": "function", "name": "nope"}}, "tool_choice"},
		{map[string]any{"input": "Hi", "tool_choice": map[string]any{"type": "file_search"}}, "tool_choice"},
	} {
		code, b := post(t, url, tc.body)
		checkError(t, code, b, http.StatusBadRequest, tc.param)
	}
	settle(t, ts)
}

// text.format json_schema constrains the output through the grammar engine.
func TestResponsesJSONSchema(t *testing.T) {
	ts := newTestServer(t, nil, Options{})
	schema := map[string]any{"type": "object", "properties": map[string]any{
		"color": map[string]any{"enum": []string{"red", "blue"}}, "n": map[string]any{"type": "integer"}},
		"required": []string{"color", "n"}, "additionalProperties": false}
	for _, stream := range []bool{false, true} {
		body := map[string]any{"input": "Pick a color.", "max_output_tokens": 60, "temperature": 0, "stream": stream,
			"text": map[string]any{"format": map[string]any{"type": "json_schema", "name": "pick", "schema": schema, "strict": true}}}
		var resp responseShape
		if stream {
			events := streamNamed(t, ts.url+"/v1/responses", body)
			b, _ := json.Marshal(events[len(events)-1].data["response"])
			json.Unmarshal(b, &resp)
		} else {
			postOK(t, ts.url+"/v1/responses", body, &resp)
		}
		var v struct {
			Color string `json:"color"`
			N     *int   `json:"n"`
		}
		if err := json.Unmarshal([]byte(resp.text(t)), &v); err != nil || (v.Color != "red" && v.Color != "blue") || v.N == nil {
			t.Fatalf("stream %v: output %q", stream, resp.text(t))
		}
	}
	code, b := post(t, ts.url+"/v1/responses", map[string]any{"input": "Hi",
		"text": map[string]any{"format": map[string]any{"type": "json_schema", "name": "x", "schema": "{not json"}}})
	checkError(t, code, b, http.StatusBadRequest, "text.format")
	settle(t, ts)
}

// With a reasoning parser, the reasoning comes as a reasoning item before
// the message, whole and streamed, and counts in the usage.
func TestResponsesReasoning(t *testing.T) {
	fx := newReasoningFixture(t)
	ts := newTestServer(t, nil, Options{ChatTemplate: thinkingTemplate(fx.end)})
	useReasoning(ts, &reasoningParser{name: "deepseek_r1", start: "<think>", end: fx.end, endIDs: []int32{fx.endID}, thinkFirst: true})
	body := map[string]any{"input": reasoningMsgs[0]["content"], "max_output_tokens": reasoningMaxTokens, "temperature": 0}
	var resp responseShape
	postOK(t, ts.url+"/v1/responses", body, &resp)
	items := resp.items(t)
	if len(items) != 2 || items[0].Type != "reasoning" || !strings.HasPrefix(items[0].ID, "rs_") || items[0].Summary == nil ||
		items[0].Content[0].Type != "reasoning_text" || items[0].Content[0].Text != fx.reasoning || resp.text(t) != fx.content {
		t.Fatalf("output %s; want reasoning %q, content %q", jsonString(resp.Output), fx.reasoning, fx.content)
	}
	if resp.Usage.OutputTokensDetails.ReasoningTokens != fx.reasoningTokens {
		t.Errorf("reasoning tokens %d, want %d", resp.Usage.OutputTokensDetails.ReasoningTokens, fx.reasoningTokens)
	}
	body["stream"] = true
	var reasoning, text string
	var added []string
	for _, ev := range streamNamed(t, ts.url+"/v1/responses", body) {
		switch ev.name {
		case "response.reasoning_text.delta":
			reasoning += ev.data["delta"].(string)
		case "response.output_text.delta":
			text += ev.data["delta"].(string)
		case "response.output_item.added":
			added = append(added, ev.data["item"].(map[string]any)["type"].(string))
		}
	}
	if reasoning != fx.reasoning || text != fx.content || strings.Join(added, " ") != "reasoning message" {
		t.Fatalf("streamed reasoning %q, text %q, items %v", reasoning, text, added)
	}
	settle(t, ts)
}

// Bad requests are 400s naming the field, in OpenAI's error shape.
func TestResponsesErrors(t *testing.T) {
	ts := newTestServer(t, nil, Options{})
	url := ts.url + "/v1/responses"
	for _, tc := range []struct {
		body  map[string]any
		param string
	}{
		{map[string]any{}, "input"},
		{map[string]any{"input": []any{}}, "input"},
		{map[string]any{"input": []any{map[string]any{"role": "robot", "content": "x"}}}, "input"},
		{map[string]any{"input": []any{map[string]any{"type": "item_reference", "id": "x"}}}, "input"},
		{map[string]any{"input": []any{map[string]any{"role": "user", "content": []any{map[string]any{"type": "input_image", "image_url": "x"}}}}}, "input"},
		{map[string]any{"input": "Hi", "truncation": "auto"}, "truncation"},
		{map[string]any{"input": "Hi", "background": true}, "background"},
		{map[string]any{"input": "Hi", "conversation": "conv_1"}, "conversation"},
		{map[string]any{"input": "Hi", "max_output_tokens": 0}, "max_output_tokens"},
		{map[string]any{"input": "Hi", "text": map[string]any{"format": map[string]any{"type": "xml"}}}, "text.format"},
		{map[string]any{"input": "Hi", "text": map[string]any{"verbosity": "low"}}, "text.verbosity"},
		{map[string]any{"input": "Hi", "reasoning": map[string]any{"effort": "huge"}}, "reasoning.effort"},
		{map[string]any{"input": "Hi", "model": "nope"}, "model"},
	} {
		code, b := post(t, url, tc.body)
		checkError(t, code, b, http.StatusBadRequest, tc.param)
	}
	// What openai-agents sends beside the input is accepted.
	var resp responseShape
	postOK(t, url, map[string]any{"input": "Hi", "include": []any{}, "tools": []any{}, "tool_choice": "auto", "store": true, "metadata": map[string]any{"k": "v"},
		"max_output_tokens": 2, "prompt_cache_key": "x", "reasoning": map[string]any{"effort": "low", "summary": "auto"}}, &resp)
	settle(t, ts)
}

// The store is bounded by bytes (least recently used out first) and by age.
func TestResponseStore(t *testing.T) {
	s := newResponseStore(1200, time.Minute)
	now := time.Unix(1000, 0)
	s.now = func() time.Time { return now }
	msg := []chatMessage{{Role: "user", Content: jsonText(strings.Repeat("x", 200))}}
	for _, id := range []string{"a", "b", "c"} {
		s.put(id, []byte(`{}`), msg)
	}
	if s.get("a") == nil || s.get("b") == nil || s.get("c") == nil {
		t.Fatal("three small entries do not fit")
	}
	s.get("a") // b is now the least recently used
	s.put("d", []byte(`{}`), msg)
	if s.get("b") != nil || s.get("a") == nil || s.get("d") == nil || s.used > s.limit {
		t.Fatalf("eviction: used %d of %d", s.used, s.limit)
	}
	s.put("huge", []byte(strings.Repeat("y", 2000)), nil)
	if s.get("huge") != nil || s.get("a") == nil {
		t.Fatal("an entry larger than the store must not be kept, nor evict others")
	}
	now = now.Add(2 * time.Minute)
	if s.get("a") != nil {
		t.Fatal("expired entry returned")
	}
	if s.delete("d") {
		t.Fatal("an expired entry deleted")
	}
	off := newResponseStore(-1, 0)
	off.put("x", []byte(`{}`), nil)
	if off.get("x") != nil {
		t.Fatal("a store of size < 0 keeps entries")
	}
}

// A client that hangs up mid-stream aborts its request at once, on both
// APIs: the engine is left holding no request and no KV block.
func TestResponsesMessagesHangUp(t *testing.T) {
	ts := newTestServer(t, nil, Options{})
	for i, tc := range []struct {
		path, delta string
		body        map[string]any
	}{
		{"/v1/responses", "response.output_text.delta", map[string]any{"input": "Tell me a story.", "max_output_tokens": 400,
			"stream": true, "min_tokens": 400}},
		{"/v1/messages", "content_block_delta", map[string]any{"messages": reasoningMsgs, "max_tokens": 400, "stream": true,
			"min_tokens": 400}},
	} {
		ctx, cancel := context.WithCancel(context.Background())
		resp := do(t, ctx, "POST", ts.url+tc.path, tc.body)
		if resp.StatusCode != http.StatusOK {
			b, _ := io.ReadAll(resp.Body)
			t.Fatalf("%s: %d %s", tc.path, resp.StatusCode, b)
		}
		r := bufio.NewReader(resp.Body)
		for deltas := 0; deltas < 3; {
			line, err := r.ReadString('\n')
			if err != nil {
				t.Fatalf("%s: %v", tc.path, err)
			}
			if line == "event: "+tc.delta+"\n" {
				deltas++
			}
		}
		cancel()
		resp.Body.Close()
		settle(t, ts)
		if v := metricValue(t, ts, `vllm:request_success_total{engine="0",finished_reason="abort",model_name="stories260K"}`); v != float64(i+1) {
			t.Fatalf("%s: %v requests aborted, want %d", tc.path, v, i+1)
		}
	}
}
