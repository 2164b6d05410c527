package server

import (
	"encoding/json"
	"strings"
	"testing"
)

// A tool the default model calls, and one example of calling it: the
// model (135M parameters) does not call a tool zero-shot, but after one
// example call it does, at temperature 0 (as agents' few-shot prompts
// teach a format).
var (
	cityWeatherTool = map[string]any{"type": "function", "function": map[string]any{
		"name": "get_weather", "description": "Get the current weather in a given city.",
		"parameters": map[string]any{"type": "object", "properties": map[string]any{"city": map[string]any{"type": "string"}},
			"required": []string{"city"}}}}
	weatherShot = []map[string]any{
		{"role": "system", "content": "You are a helpful assistant."},
		{"role": "user", "content": "What is the weather like in London?"},
		{"role": "assistant", "content": nil, "tool_calls": []any{map[string]any{"id": "call_0", "type": "function",
			"function": map[string]any{"name": "get_weather", "arguments": `{"city": "London"}`}}}},
		{"role": "user", "content": "What is the weather like in Paris?"},
	}
)

// tool_choice auto on a plain server with the default model, whose chat
// template ignores tools: the fallback prompt gets a call, whole and
// streamed; the tool's result goes back and the model answers from it; a
// question no tool answers gets text. /tokenize counts the same prompt.
func TestAutoToolCallFallback(t *testing.T) {
	ts := newDefaultServer(t, Options{})
	if b := ts.s.backend.Load(); b.toolParser != "hermes" || b.toolFallback == nil {
		t.Fatalf("parser %q, fallback %v: want hermes with the fallback", b.toolParser, b.toolFallback != nil)
	}
	body := map[string]any{"messages": weatherShot, "tools": []any{cityWeatherTool}, "temperature": 0, "max_tokens": 64}
	var resp chatResponse
	postOK(t, ts.url+"/v1/chat/completions", body, &resp)
	ch := resp.Choices[0]
	if len(ch.Message.ToolCalls) != 1 || *ch.FinishReason != "tool_calls" || ch.Message.Content != nil {
		t.Fatalf("no call: %+v (content %q)", ch, deref(ch.Message.Content))
	}
	call := ch.Message.ToolCalls[0]
	if call.Function.Name != "get_weather" || call.Function.Arguments != `{"city":"Paris"}` {
		t.Fatalf("call %+v", call)
	}
	var tok tokenizeResponse
	postOK(t, ts.url+"/tokenize", map[string]any{"messages": weatherShot, "tools": []any{cityWeatherTool}}, &tok)
	if tok.Count != resp.Usage.PromptTokens {
		t.Errorf("/tokenize counts %d tokens, the chat request %d", tok.Count, resp.Usage.PromptTokens)
	}
	body["stream"] = true
	var streamed []toolCallDelta
	for _, ev := range stream(t, ts.url+"/v1/chat/completions", body) {
		var c chatChunk
		if err := json.Unmarshal([]byte(ev), &c); err != nil {
			t.Fatal(err)
		}
		if len(c.Choices) > 0 {
			streamed = reassemble(streamed, c.Choices[0].Delta.ToolCalls)
		}
	}
	if len(streamed) != 1 || streamed[0].Function.Name != "get_weather" || streamed[0].Function.Arguments != call.Function.Arguments {
		t.Fatalf("streamed calls %+v", streamed)
	}
	history := append(append([]map[string]any{}, weatherShot...),
		map[string]any{"role": "assistant", "content": nil, "tool_calls": []any{call}},
		map[string]any{"role": "tool", "tool_call_id": call.ID, "content": "sunny, 24 C"})
	resp = chatResponse{}
	postOK(t, ts.url+"/v1/chat/completions", map[string]any{"messages": history, "tools": []any{cityWeatherTool},
		"temperature": 0, "max_tokens": 64}, &resp)
	answer := deref(resp.Choices[0].Message.Content)
	if resp.Choices[0].Message.ToolCalls != nil || !strings.Contains(answer, "sunny") {
		t.Fatalf("after the result: %+v (content %q)", resp.Choices[0], answer)
	}
	resp = chatResponse{}
	postOK(t, ts.url+"/v1/chat/completions", map[string]any{"messages": []map[string]any{{"role": "user", "content": "What is 2 + 2?"}},
		"tools": []any{cityWeatherTool}, "temperature": 0, "max_tokens": 16}, &resp)
	if answer := deref(resp.Choices[0].Message.Content); resp.Choices[0].Message.ToolCalls != nil || !strings.Contains(answer, "4") {
		t.Fatalf("2 + 2: %+v (content %q)", resp.Choices[0], answer)
	}
	settle(t, ts)
}

func deref(s *string) string {
	if s == nil {
		return "<nil>"
	}
	return *s
}
