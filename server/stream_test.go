package server

import (
	"encoding/json"
	"testing"
)

// A streamed completion carries the same text as the whole one, one chunk
// per engine step, finish_reason only on the last chunk of a choice, and
// with include_usage a final chunk with no choices and the usage.
func TestStreamCompletions(t *testing.T) {
	ts := newTestServer(t, nil, Options{})
	body := map[string]any{"prompt": onceUpon, "max_tokens": 12, "temperature": 0}
	var whole completionResponse
	postOK(t, ts.url+"/v1/completions", body, &whole)
	for _, tc := range []struct {
		name  string
		usage bool
	}{{"plain", false}, {"include_usage", true}} {
		t.Run(tc.name, func(t *testing.T) {
			body := map[string]any{"prompt": onceUpon, "max_tokens": 12, "temperature": 0, "stream": true,
				"stream_options": map[string]bool{"include_usage": tc.usage}}
			events := stream(t, ts.url+"/v1/completions", body)
			var text string
			var last completionResponse
			chunks := 0
			for i, ev := range events {
				var c completionResponse
				if err := json.Unmarshal([]byte(ev), &c); err != nil {
					t.Fatalf("event %d: %v", i, err)
				}
				if c.ID != events0ID(t, events) || c.Object != "text_completion" {
					t.Fatalf("event %d id/object: %s", i, ev)
				}
				if tc.usage && i == len(events)-1 {
					if len(c.Choices) != 0 || c.Usage == nil || c.Usage.PromptTokens != whole.Usage.PromptTokens ||
						c.Usage.CompletionTokens != whole.Usage.CompletionTokens {
						t.Fatalf("usage chunk %s, want usage %+v", ev, whole.Usage)
					}
					continue
				}
				if c.Usage != nil || len(c.Choices) != 1 {
					t.Fatalf("content chunk %s", ev)
				}
				if last.Choices != nil && last.Choices[0].FinishReason != nil {
					t.Fatalf("a chunk follows the finished one: %s", ev)
				}
				text += c.Choices[0].Text
				last = c
				chunks++
			}
			if text != whole.Choices[0].Text || *last.Choices[0].FinishReason != *whole.Choices[0].FinishReason {
				t.Fatalf("streamed %q (finish %v), whole %q", text, last.Choices[0].FinishReason, whole.Choices[0].Text)
			}
			if chunks < whole.Usage.CompletionTokens/2 {
				t.Fatalf("%d chunks for %d tokens: not streamed token by token", chunks, whole.Usage.CompletionTokens)
			}
		})
	}
}

func events0ID(t *testing.T, events []string) string {
	var c struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal([]byte(events[0]), &c); err != nil {
		t.Fatal(err)
	}
	return c.ID
}

// A streamed chat sends each choice's role first; n=2 streams interleave by
// index; the texts equal the non-streamed ones of the same seed.
func TestStreamChatParallel(t *testing.T) {
	ts := newTestServer(t, nil, Options{})
	body := map[string]any{"messages": chatMessages, "max_tokens": 10, "n": 2, "seed": 7}
	var whole chatResponse
	postOK(t, ts.url+"/v1/chat/completions", body, &whole)
	body["stream"] = true
	body["stream_options"] = map[string]bool{"include_usage": true}
	events := stream(t, ts.url+"/v1/chat/completions", body)
	texts := make([]string, 2)
	finished := make([]bool, 2)
	var order []int
	for i, ev := range events {
		var c chatChunk
		if err := json.Unmarshal([]byte(ev), &c); err != nil {
			t.Fatal(err)
		}
		if c.Object != "chat.completion.chunk" {
			t.Fatalf("object %q", c.Object)
		}
		if i < 2 {
			if len(c.Choices) != 1 || c.Choices[0].Index != i || c.Choices[0].Delta.Role != "assistant" {
				t.Fatalf("event %d should open choice %d with the role: %s", i, i, ev)
			}
			continue
		}
		if i == len(events)-1 {
			if len(c.Choices) != 0 || c.Usage == nil || c.Usage.CompletionTokens != whole.Usage.CompletionTokens {
				t.Fatalf("usage chunk %s, want %+v", ev, whole.Usage)
			}
			continue
		}
		ch := c.Choices[0]
		if ch.Delta.Content != nil {
			texts[ch.Index] += *ch.Delta.Content
		}
		finished[ch.Index] = finished[ch.Index] || ch.FinishReason != nil
		order = append(order, ch.Index)
	}
	for i := range 2 {
		if texts[i] != *whole.Choices[i].Message.Content || !finished[i] {
			t.Fatalf("choice %d streamed %q (finished %v), whole %q", i, texts[i], finished[i], *whole.Choices[i].Message.Content)
		}
	}
	if len(order) < 4 || order[0] == order[1] && order[1] == order[2] && order[2] == order[3] {
		t.Fatalf("choices are not interleaved: %v", order)
	}
}

// A multi-prompt streamed completion merges the prompts' chunks; each
// choice's text equals its non-streamed text.
func TestStreamMultiPrompt(t *testing.T) {
	ts := newTestServer(t, nil, Options{})
	body := map[string]any{"prompt": []string{onceUpon, "The cat"}, "max_tokens": 8, "temperature": 0, "n": 2}
	var whole completionResponse
	postOK(t, ts.url+"/v1/completions", body, &whole)
	body["stream"] = true
	texts := map[int]string{}
	for _, ev := range stream(t, ts.url+"/v1/completions", body) {
		var c completionResponse
		if err := json.Unmarshal([]byte(ev), &c); err != nil {
			t.Fatal(err)
		}
		texts[c.Choices[0].Index] += c.Choices[0].Text
	}
	if len(whole.Choices) != 4 || len(texts) != 4 {
		t.Fatalf("%d whole choices, %d streamed", len(whole.Choices), len(texts))
	}
	for _, c := range whole.Choices {
		if texts[c.Index] != c.Text {
			t.Fatalf("choice %d streamed %q, whole %q", c.Index, texts[c.Index], c.Text)
		}
	}
}
