package server

import (
	"strings"
	"testing"

	"pagoda/engine"
)

var chatMessages = []map[string]any{
	{"role": "system", "content": "You tell stories."},
	{"role": "user", "content": []map[string]string{{"type": "text", "text": "Once upon"}, {"type": "text", "text": "a time"}}},
}

// The rendered chat prompt: the test template, BOS from the template, text
// parts joined with a newline.
const chatRendered = "<s>system: You tell stories.\nuser: Once upon\na time\nassistant:"

// Chat renders the messages through the template and generates from the
// result: the same tokens and text as the engine given that prompt.
func TestChatCompletion(t *testing.T) {
	ts := newTestServer(t, nil, Options{})
	ids := ts.e.Tokenizer().Encode(chatRendered, false, true)
	if ids[0] != ts.e.Tokenizer().BOS() || ids[1] == ids[0] {
		t.Fatalf("rendered prompt should start with exactly one BOS: %v", ids[:3])
	}
	want := greedy(t, ts.e, ids, 10, nil)
	var resp chatResponse
	postOK(t, ts.url+"/v1/chat/completions", map[string]any{"model": "stories260K", "messages": chatMessages,
		"max_completion_tokens": 10, "temperature": 0}, &resp)
	c := resp.Choices[0]
	if resp.Object != "chat.completion" || !strings.HasPrefix(resp.ID, "chatcmpl-") || c.Message.Role != "assistant" {
		t.Fatalf("response shape: %+v", resp)
	}
	if *c.Message.Content != want.Text || *c.FinishReason != want.FinishReason {
		t.Fatalf("content %q finish %v, want %q %s", *c.Message.Content, *c.FinishReason, want.Text, want.FinishReason)
	}
	if resp.Usage.PromptTokens != len(ids) || resp.Usage.CompletionTokens != len(want.TokenIDs) {
		t.Fatalf("usage %+v, want %d prompt and %d completion tokens", resp.Usage, len(ids), len(want.TokenIDs))
	}
	var tk tokenizeResponse
	postOK(t, ts.url+"/tokenize", map[string]any{"messages": chatMessages}, &tk)
	if tk.Count != len(ids) || tk.MaxModelLen != 512 {
		t.Fatalf("/tokenize of the messages: %+v, want the %d chat prompt tokens", tk, len(ids))
	}
}

// Without max_tokens a chat request may run to the model length: with
// ignore_eos it generates until the prompt and output fill the 64-token model length.
func TestChatDefaultMaxTokens(t *testing.T) {
	ts := newTestServer(t, func(c *engine.Config) { c.MaxModelLen = 64 }, Options{})
	var resp chatResponse
	postOK(t, ts.url+"/v1/chat/completions", map[string]any{"messages": chatMessages, "ignore_eos": true}, &resp)
	if u := resp.Usage; u.TotalTokens != 64 || *resp.Choices[0].FinishReason != "length" {
		t.Fatalf("usage %+v finish %v, want 64 tokens in all", u, *resp.Choices[0].FinishReason)
	}
}

// logprobs with top_logprobs k: one entry per token, k alternatives each,
// bytes the token's UTF-8 bytes.
func TestChatLogprobs(t *testing.T) {
	ts := newTestServer(t, nil, Options{})
	var resp chatResponse
	postOK(t, ts.url+"/v1/chat/completions", map[string]any{"messages": chatMessages, "max_tokens": 6,
		"temperature": 0, "logprobs": true, "top_logprobs": 2}, &resp)
	lp := resp.Choices[0].Logprobs
	if lp == nil || len(lp.Content) != resp.Usage.CompletionTokens {
		t.Fatalf("logprobs %+v for %d tokens", lp, resp.Usage.CompletionTokens)
	}
	for _, c := range lp.Content {
		if len(c.TopLogprobs) != 2 || c.Logprob > 0 || string(intsToBytes(c.Bytes)) != c.Token {
			t.Fatalf("entry %+v", c)
		}
		if c.TopLogprobs[0].Token != c.Token || c.TopLogprobs[0].Logprob < c.TopLogprobs[1].Logprob {
			t.Fatalf("greedy token %q is not the first of its top logprobs %+v", c.Token, c.TopLogprobs)
		}
	}
	postOK(t, ts.url+"/v1/chat/completions", map[string]any{"messages": chatMessages, "max_tokens": 2}, &resp)
	if resp.Choices[0].Logprobs != nil {
		t.Fatal("logprobs returned without being asked")
	}
}

// continue_final_message continues the assistant's text instead of
// opening a new turn.
func TestChatContinueFinalMessage(t *testing.T) {
	ts := newTestServer(t, nil, Options{})
	msgs := []map[string]any{{"role": "user", "content": "Tell me"}, {"role": "assistant", "content": "Once upon a"}}
	var tk tokenizeResponse
	postOK(t, ts.url+"/tokenize", map[string]any{"messages": msgs, "add_generation_prompt": false,
		"continue_final_message": true, "return_token_strs": true}, &tk)
	text := ts.e.Tokenizer().Decode(tk.Tokens)
	if !strings.HasSuffix(text, "assistant: Once upon a") {
		t.Fatalf("continued prompt %q should end with the assistant's text", text)
	}
	if len(tk.TokenStrs) != tk.Count {
		t.Fatalf("token_strs %q for %d tokens", tk.TokenStrs, tk.Count)
	}
}

func intsToBytes(v []int) []byte {
	b := make([]byte, len(v))
	for i, x := range v {
		b[i] = byte(x)
	}
	return b
}
