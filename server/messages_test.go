package server

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// messageShape is the part of an Anthropic message the tests read.
type messageShape struct {
	ID           string  `json:"id"`
	Type         string  `json:"type"`
	Role         string  `json:"role"`
	Model        string  `json:"model"`
	StopReason   string  `json:"stop_reason"`
	StopSequence *string `json:"stop_sequence"`
	Content      []struct {
		Type     string          `json:"type"`
		Text     string          `json:"text"`
		Thinking *string         `json:"thinking"`
		ID       string          `json:"id"`
		Name     string          `json:"name"`
		Input    json.RawMessage `json:"input"`
	} `json:"content"`
	Usage anthropicUsage `json:"usage"`
}

// checkAnthropicError checks an error in Anthropic's shape.
func checkAnthropicError(t *testing.T, code int, body []byte, wantCode int, wantType string, wantIn ...string) {
	t.Helper()
	var e struct {
		Type  string `json:"type"`
		Error struct {
			Type    string `json:"type"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal(body, &e); err != nil || e.Type != "error" || e.Error.Message == "" {
		t.Fatalf("status %d, body is not an Anthropic error: %s", code, body)
	}
	if code != wantCode || e.Error.Type != wantType {
		t.Fatalf("status %d %s, want %d %s: %s", code, e.Error.Type, wantCode, wantType, body)
	}
	for _, s := range wantIn {
		if !strings.Contains(e.Error.Message, s) {
			t.Fatalf("message %q does not mention %q", e.Error.Message, s)
		}
	}
}

// A message is the chat completion of the same conversation (system first,
// string and block contents alike); its stop reasons are Anthropic's;
// streamed, its events come in Anthropic's order and add up to the same
// message; count_tokens counts the same prompt.
func TestMessagesText(t *testing.T) {
	ts := newTestServer(t, nil, Options{})
	url := ts.url + "/v1/messages"
	conv := []map[string]any{{"role": "user", "content": "Tell me a story."}, {"role": "assistant", "content": "Once upon a time."},
		{"role": "user", "content": "Go on."}}
	var chat chatResponse
	postOK(t, ts.url+"/v1/chat/completions", map[string]any{"messages": append([]map[string]any{{"role": "system", "content": "Be kind."}}, conv...),
		"max_tokens": 16, "temperature": 0}, &chat)
	body := map[string]any{"model": "stories260K", "system": []any{map[string]any{"type": "text", "text": "Be kind."}}, "messages": []any{
		conv[0], map[string]any{"role": "assistant", "content": []any{map[string]any{"type": "text", "text": "Once upon a time."}}}, conv[2]},
		"max_tokens": 16, "temperature": 0}
	var msg messageShape
	postOK(t, url, body, &msg)
	want := *chat.Choices[0].Message.Content
	if msg.Type != "message" || msg.Role != "assistant" || !strings.HasPrefix(msg.ID, "msg_") || len(msg.Content) != 1 ||
		msg.Content[0].Type != "text" || msg.Content[0].Text != want {
		t.Fatalf("message %+v, chat text %q", msg, want)
	}
	if wantStop := map[string]string{"stop": "end_turn", "length": "max_tokens"}[*chat.Choices[0].FinishReason]; msg.StopReason != wantStop {
		t.Errorf("stop_reason %q, want %q", msg.StopReason, wantStop)
	}
	u := msg.Usage
	if u.InputTokens+u.CacheReadInputTokens != chat.Usage.PromptTokens || u.OutputTokens != chat.Usage.CompletionTokens {
		t.Errorf("usage %+v, chat %+v", u, chat.Usage)
	}
	var count struct {
		InputTokens int `json:"input_tokens"`
	}
	postOK(t, url+"/count_tokens", map[string]any{"model": "stories260K", "system": "Be kind.", "messages": conv}, &count)
	if count.InputTokens != chat.Usage.PromptTokens {
		t.Errorf("count_tokens %d, prompt %d", count.InputTokens, chat.Usage.PromptTokens)
	}

	body["stream"] = true
	events := streamNamed(t, url, body)
	var names []string
	var text string
	for _, ev := range events {
		names = append(names, ev.name)
		if ev.name == "content_block_delta" {
			d := ev.data["delta"].(map[string]any)
			if d["type"] != "text_delta" || ev.data["index"] != float64(0) {
				t.Fatalf("delta %s", ev.raw)
			}
			text += d["text"].(string)
		}
	}
	got := strings.Join(names, " ")
	if !strings.HasPrefix(got, "message_start ping content_block_start content_block_delta") ||
		!strings.HasSuffix(got, "content_block_delta content_block_stop message_delta message_stop") || text != want {
		t.Fatalf("events %v, text %q (want %q)", names, text, want)
	}
	start := events[0].data["message"].(map[string]any)
	if start["id"] == "" || start["role"] != "assistant" || len(start["content"].([]any)) != 0 ||
		start["usage"].(map[string]any)["input_tokens"] != float64(chat.Usage.PromptTokens) {
		t.Errorf("message_start %s", events[0].raw)
	}
	delta := events[len(events)-2].data
	if delta["delta"].(map[string]any)["stop_reason"] != msg.StopReason ||
		delta["usage"].(map[string]any)["output_tokens"] != float64(msg.Usage.OutputTokens) {
		t.Errorf("message_delta %s, whole %+v", events[len(events)-2].raw, msg)
	}

	// A stop sequence from the answer ends it there, with stop_sequence.
	words := strings.Fields(want)
	if len(words) < 3 {
		t.Fatalf("answer %q too short to pick a stop sequence", want)
	}
	stop := words[2]
	body["stream"], body["stop_sequences"] = false, []string{"zzz", stop}
	postOK(t, url, body, &msg)
	if msg.StopReason != "stop_sequence" || msg.StopSequence == nil || *msg.StopSequence != stop ||
		!strings.HasPrefix(want, msg.Content[0].Text) || strings.Contains(msg.Content[0].Text, stop) {
		t.Errorf("stop sequence %q: %+v", stop, msg)
	}
	settle(t, ts)
}

// Tools: tool_choice any and tool give tool_use blocks with their input
// (whole and streamed as input_json_delta), stop_reason tool_use; a
// tool_result turn continues the conversation as a chat tool message does.
func TestMessagesTools(t *testing.T) {
	ts := newTestServer(t, nil, Options{ChatTemplate: toolsTemplate})
	url := ts.url + "/v1/messages"
	fn := weatherTool["function"].(map[string]any)
	tool := map[string]any{"name": "get_weather", "description": fn["description"], "input_schema": fn["parameters"]}
	question := map[string]any{"role": "user", "content": "What is the weather in Paris?"}
	for _, choice := range []map[string]any{{"type": "any", "disable_parallel_tool_use": true}, {"type": "tool", "name": "get_weather"}} {
		body := map[string]any{"messages": []any{question}, "tools": []any{tool}, "tool_choice": choice, "max_tokens": 200, "temperature": 0}
		var msg messageShape
		postOK(t, url, body, &msg)
		if len(msg.Content) != 1 || msg.Content[0].Type != "tool_use" || msg.Content[0].Name != "get_weather" ||
			!strings.HasPrefix(msg.Content[0].ID, "toolu_") || msg.StopReason != "tool_use" {
			t.Fatalf("tool_choice %v: %s", choice, jsonString(msg))
		}
		var args struct{ City, Unit string }
		if json.Unmarshal(msg.Content[0].Input, &args) != nil || args.City == "" || args.Unit == "" {
			t.Fatalf("input %s", msg.Content[0].Input)
		}
		body["stream"] = true
		var partial string
		var names []string
		for _, ev := range streamNamed(t, url, body) {
			names = append(names, ev.name)
			switch ev.name {
			case "content_block_start":
				if b := ev.data["content_block"].(map[string]any); b["type"] != "tool_use" || b["name"] != "get_weather" {
					t.Fatalf("block %s", ev.raw)
				}
			case "content_block_delta":
				partial += ev.data["delta"].(map[string]any)["partial_json"].(string)
			case "message_delta":
				if ev.data["delta"].(map[string]any)["stop_reason"] != "tool_use" {
					t.Fatalf("message_delta %s", ev.raw)
				}
			}
		}
		var streamed, whole any
		if json.Unmarshal([]byte(partial), &streamed) != nil || json.Unmarshal(msg.Content[0].Input, &whole) != nil ||
			jsonString(streamed) != jsonString(whole) {
			t.Fatalf("streamed input %q, whole %s; events %v", partial, msg.Content[0].Input, names)
		}

		next := map[string]any{"messages": []any{question,
			map[string]any{"role": "assistant", "content": []any{map[string]any{"type": "tool_use", "id": msg.Content[0].ID,
				"name": "get_weather", "input": json.RawMessage(msg.Content[0].Input)}}},
			map[string]any{"role": "user", "content": []any{map[string]any{"type": "tool_result", "tool_use_id": msg.Content[0].ID,
				"content": "21 C"}}}},
			"tools": []any{tool}, "tool_choice": map[string]any{"type": "none"}, "max_tokens": 4, "temperature": 0}
		var after messageShape
		postOK(t, url, next, &after)
		var chat chatResponse
		postOK(t, ts.url+"/v1/chat/completions", map[string]any{"messages": []any{question,
			map[string]any{"role": "assistant", "content": nil, "tool_calls": []any{map[string]any{"id": msg.Content[0].ID,
				"type": "function", "function": map[string]any{"name": "get_weather", "arguments": compactJSON(msg.Content[0].Input)}}}},
			map[string]any{"role": "tool", "tool_call_id": msg.Content[0].ID, "content": "21 C"}},
			"tools": []any{weatherTool}, "tool_choice": "none", "max_tokens": 4, "temperature": 0}, &chat)
		if after.Usage.InputTokens+after.Usage.CacheReadInputTokens != chat.Usage.PromptTokens ||
			after.Content[0].Text != *chat.Choices[0].Message.Content {
			t.Fatalf("after the tool: %+v, chat %d %q", after, chat.Usage.PromptTokens, *chat.Choices[0].Message.Content)
		}
	}
	settle(t, ts)
}

// With a reasoning parser, the reasoning comes as a thinking block before
// the text, whole and streamed (thinking_delta, then signature_delta).
func TestMessagesThinking(t *testing.T) {
	fx := newReasoningFixture(t)
	ts := newTestServer(t, nil, Options{ChatTemplate: thinkingTemplate(fx.end)})
	useReasoning(ts, &reasoningParser{name: "deepseek_r1", start: "<think>", end: fx.end, endIDs: []int32{fx.endID}, thinkFirst: true})
	body := map[string]any{"messages": reasoningMsgs, "max_tokens": reasoningMaxTokens, "temperature": 0,
		"thinking": map[string]any{"type": "enabled", "budget_tokens": 1024}}
	var msg messageShape
	postOK(t, ts.url+"/v1/messages", body, &msg)
	if len(msg.Content) != 2 || msg.Content[0].Type != "thinking" || msg.Content[0].Thinking == nil ||
		*msg.Content[0].Thinking != fx.reasoning || msg.Content[1].Type != "text" || msg.Content[1].Text != fx.content {
		t.Fatalf("content %s; want thinking %q, text %q", jsonString(msg.Content), fx.reasoning, fx.content)
	}
	body["stream"] = true
	var thinking, text string
	var deltas []string
	for _, ev := range streamNamed(t, ts.url+"/v1/messages", body) {
		if ev.name == "content_block_delta" {
			d := ev.data["delta"].(map[string]any)
			if len(deltas) == 0 || deltas[len(deltas)-1] != d["type"] {
				deltas = append(deltas, d["type"].(string))
			}
			switch d["type"] {
			case "thinking_delta":
				thinking += d["thinking"].(string)
			case "text_delta":
				text += d["text"].(string)
			}
		}
	}
	if thinking != fx.reasoning || text != fx.content || strings.Join(deltas, " ") != "thinking_delta signature_delta text_delta" {
		t.Fatalf("streamed thinking %q, text %q, deltas %v", thinking, text, deltas)
	}
	settle(t, ts)
}

// Errors come in Anthropic's shape; x-api-key authenticates as a bearer
// key does.
func TestMessagesErrors(t *testing.T) {
	ts := newTestServer(t, nil, Options{APIKey: "sekret"})
	url := ts.url + "/v1/messages"
	ok := map[string]any{"messages": []any{map[string]any{"role": "user", "content": "Hi"}}, "max_tokens": 2}
	code, b := post(t, url, ok)
	checkAnthropicError(t, code, b, http.StatusUnauthorized, "authentication_error", "x-api-key")
	var msg messageShape
	code, b = post(t, url, ok, "x-api-key", "sekret")
	if code != http.StatusOK || json.Unmarshal(b, &msg) != nil || msg.Type != "message" {
		t.Fatalf("x-api-key: %d %s", code, b)
	}
	code, _ = post(t, url, ok, "Authorization", "Bearer sekret")
	if code != http.StatusOK {
		t.Fatalf("bearer: %d", code)
	}
	for _, tc := range []struct {
		body map[string]any
		want string
	}{
		{map[string]any{"messages": []any{map[string]any{"role": "user", "content": "Hi"}}}, "max_tokens"},
		{map[string]any{"messages": []any{}, "max_tokens": 2}, "messages"},
		{map[string]any{"messages": []any{map[string]any{"role": "system", "content": "Hi"}}, "max_tokens": 2}, "role"},
		{map[string]any{"messages": []any{map[string]any{"role": "user", "content": []any{map[string]any{"type": "image"}}}}, "max_tokens": 2}, "image"},
		{map[string]any{"messages": ok["messages"], "max_tokens": 2, "tools": []any{map[string]any{"type": "web_search_20250305", "name": "web_search"}}}, "web_search"},
		{map[string]any{"messages": ok["messages"], "max_tokens": 2, "tool_choice": map[string]any{"type": "any"}}, "tools"},
		{map[string]any{"messages": ok["messages"], "max_tokens": 2, "stop_sequences": []string{""}}, "stop_sequences"},
		{map[string]any{"messages": ok["messages"], "max_tokens": 2, "mcp_servers": []any{}}, "mcp_servers"},
		{map[string]any{"messages": ok["messages"], "max_tokens": 2, "thinking": map[string]any{"type": "enabled"}}, "budget_tokens"},
		{map[string]any{"messages": ok["messages"], "max_tokens": 2, "model": "claude-nope"}, "model"},
	} {
		code, b := post(t, url, tc.body, "x-api-key", "sekret")
		checkAnthropicError(t, code, b, http.StatusBadRequest, "invalid_request_error", tc.want)
	}
	code, b = post(t, url+"/count_tokens", map[string]any{"messages": ok["messages"], "max_tokens": 2}, "x-api-key", "sekret")
	checkAnthropicError(t, code, b, http.StatusBadRequest, "invalid_request_error", "max_tokens")
	code, b = post(t, url, "{not json", "x-api-key", "sekret")
	checkAnthropicError(t, code, b, http.StatusBadRequest, "invalid_request_error")
	settle(t, ts)
}
