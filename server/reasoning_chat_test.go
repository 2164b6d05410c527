package server

import (
	"encoding/json"
	"net/http"
	"regexp"
	"strings"
	"testing"
)

// useReasoning gives ts's server the reasoning parser p. Call it while no
// request runs: the atomic Store publishes it to the handlers, which Load
// the backend.
func useReasoning(ts *testServer, p *reasoningParser) {
	b := ts.s.backend.Load()
	b.reasoning = p
	ts.s.backend.Store(b)
}

// thinkingTemplate is testTemplate with Qwen3's switch: enable_thinking
// false closes the reasoning in the prompt with the marker end.
func thinkingTemplate(end string) string {
	return "{{ bos_token }}{% for m in messages %}{{ m['role'] }}: {{ m['content'] }}\n{% endfor %}" +
		"{% if add_generation_prompt %}assistant:{% if enable_thinking is defined and enable_thinking is false %}" +
		end + "\n\n{% endif %}{% endif %}"
}

// reasoningFixture is the stories model's greedy answer to reasoningMsgs
// and a token of it that plays </think>: the text before it is the
// reasoning, the text after it the answer. stories260K has no <think>
// token, so the tests give the server parsers with this end marker.
type reasoningFixture struct {
	text, end          string
	endID              int32
	reasoning, content string
	reasoningTokens    int
}

var reasoningMsgs = []map[string]any{{"role": "user", "content": "Tell me a story."}}

const reasoningMaxTokens = 24

func newReasoningFixture(t *testing.T) reasoningFixture {
	t.Helper()
	probe := newTestServer(t, nil, Options{})
	var tk tokenizeResponse
	postOK(t, probe.url+"/tokenize", map[string]any{"messages": reasoningMsgs}, &tk)
	ids := greedy(t, probe.e, tk.Tokens, reasoningMaxTokens, nil).TokenIDs
	tok := probe.e.Tokenizer()
	text := tok.Decode(ids)
	for k := 2; k < len(ids)-4; k++ {
		end := tok.Piece(ids[k])
		if len(strings.TrimSpace(end)) < 3 || strings.TrimRight(end, " \n") != end ||
			strings.Index(text, end) != len(tok.Decode(ids[:k])) {
			continue
		}
		off := strings.Index(text, end)
		return reasoningFixture{text: text, end: end, endID: ids[k], reasoning: text[:off], content: text[off+len(end):],
			reasoningTokens: k + 1}
	}
	t.Fatalf("no token of %q can end the reasoning", text)
	return reasoningFixture{}
}

// With a reasoning parser, chat responses carry reasoning_content and
// content, whole and streamed; a grammar constrains the answer only, or
// all of it when the template closed the reasoning (enable_thinking false
// reaches the template); completions are unaffected.
func TestReasoningChat(t *testing.T) {
	fx := newReasoningFixture(t)
	t.Logf("reasoning %q, end %q (token %d), content %q", fx.reasoning, fx.end, fx.endID, fx.content)
	ts := newTestServer(t, nil, Options{ChatTemplate: thinkingTemplate(fx.end)})
	deepseek := &reasoningParser{name: "deepseek_r1", start: "<think>", end: fx.end, endIDs: []int32{fx.endID}, thinkFirst: true}
	useReasoning(ts, deepseek)
	// The template ignores tools, and the stories model's 512 tokens cannot
	// hold their fallback prompt: the prompt stays that of the fixture.
	b := ts.s.backend.Load()
	b.toolFallback = nil
	ts.s.backend.Store(b)
	url := ts.url + "/v1/chat/completions"
	body := func(extra map[string]any) map[string]any {
		b := map[string]any{"messages": reasoningMsgs, "max_tokens": reasoningMaxTokens, "temperature": 0}
		for k, v := range extra {
			b[k] = v
		}
		return b
	}

	t.Run("whole", func(t *testing.T) {
		code, raw := post(t, url, body(nil))
		if code != http.StatusOK {
			t.Fatalf("status %d: %s", code, raw)
		}
		var shape struct {
			Choices []struct {
				Message map[string]any `json:"message"`
			} `json:"choices"`
			Usage map[string]any `json:"usage"`
		}
		if err := json.Unmarshal(raw, &shape); err != nil {
			t.Fatal(err)
		}
		m := shape.Choices[0].Message
		want := map[string]any{"role": "assistant", "reasoning_content": fx.reasoning, "content": fx.content}
		if len(m) != len(want) || m["role"] != want["role"] || m["reasoning_content"] != want["reasoning_content"] || m["content"] != want["content"] {
			t.Errorf("message %v, want %v", m, want)
		}
		details, _ := shape.Usage["completion_tokens_details"].(map[string]any)
		if details["reasoning_tokens"] != float64(fx.reasoningTokens) {
			t.Errorf("usage %v, want %d reasoning tokens", shape.Usage, fx.reasoningTokens)
		}
	})

	t.Run("streamed", func(t *testing.T) {
		r, c, chunks := streamReasoning(t, url, body(map[string]any{"stream": true, "stream_options": map[string]any{"include_usage": true}}))
		if r != fx.reasoning || c != fx.content {
			t.Errorf("streamed reasoning %q, content %q; want %q, %q", r, c, fx.reasoning, fx.content)
		}
		last := chunks[len(chunks)-1]
		if last.Usage == nil || last.Usage.CompletionTokensDetails == nil || last.Usage.CompletionTokensDetails.ReasoningTokens != fx.reasoningTokens {
			t.Errorf("usage chunk %s", jsonString(last))
		}
	})

	t.Run("include_reasoning false", func(t *testing.T) {
		var resp chatResponse
		postOK(t, url, body(map[string]any{"include_reasoning": false}), &resp)
		if m := resp.Choices[0].Message; m.ReasoningContent != nil || m.Content == nil || *m.Content != fx.content {
			t.Errorf("message %s", jsonString(m))
		}
		r, c, _ := streamReasoning(t, url, body(map[string]any{"include_reasoning": false, "stream": true}))
		if r != "" || c != fx.content {
			t.Errorf("streamed reasoning %q, content %q", r, c)
		}
	})

	digits := regexp.MustCompile(`^[0-9]{3}$`)
	t.Run("grammar after the reasoning", func(t *testing.T) {
		var resp chatResponse
		postOK(t, url, body(map[string]any{"guided_regex": "[0-9]{3}", "max_tokens": 40}), &resp)
		ch := resp.Choices[0]
		if m := ch.Message; m.ReasoningContent == nil || *m.ReasoningContent != fx.reasoning || m.Content == nil ||
			!digits.MatchString(*m.Content) || *ch.FinishReason != "stop" {
			t.Errorf("message %s, finish %v", jsonString(m), *ch.FinishReason)
		}
		r, c, _ := streamReasoning(t, url, body(map[string]any{"guided_regex": "[0-9]{3}", "max_tokens": 40, "stream": true}))
		if r != fx.reasoning || !digits.MatchString(c) {
			t.Errorf("streamed reasoning %q, content %q", r, c)
		}
	})

	t.Run("named tool after the reasoning", func(t *testing.T) {
		var resp chatResponse
		postOK(t, url, body(map[string]any{"tools": []any{weatherTool}, "max_tokens": 200,
			"tool_choice": map[string]any{"type": "function", "function": map[string]any{"name": "get_weather"}}}), &resp)
		m := resp.Choices[0].Message
		var args struct{ City, Unit string }
		if m.ReasoningContent == nil || *m.ReasoningContent != fx.reasoning || len(m.ToolCalls) != 1 ||
			json.Unmarshal([]byte(m.ToolCalls[0].Function.Arguments), &args) != nil || (args.City != "Paris" && args.City != "Rome") {
			t.Errorf("message %s", jsonString(m))
		}
	})

	t.Run("thinking disabled", func(t *testing.T) {
		off := map[string]any{"enable_thinking": false}
		var tk tokenizeResponse
		postOK(t, ts.url+"/tokenize", map[string]any{"messages": reasoningMsgs, "chat_template_kwargs": off}, &tk)
		if prompt := ts.e.Tokenizer().Decode(tk.Tokens); !strings.HasSuffix(prompt, "assistant:"+fx.end+"\n\n") {
			t.Fatalf("enable_thinking false did not reach the template: %q", prompt)
		}
		var resp chatResponse
		postOK(t, url, body(map[string]any{"guided_regex": "[0-9]{3}", "chat_template_kwargs": off}), &resp)
		if m := resp.Choices[0].Message; m.ReasoningContent != nil || m.Content == nil || !digits.MatchString(*m.Content) ||
			resp.Usage.CompletionTokensDetails.ReasoningTokens != 0 {
			t.Errorf("message %s, usage %s: want three digits from the first token", jsonString(m), jsonString(resp.Usage))
		}
	})

	t.Run("qwen3 without <think>", func(t *testing.T) {
		useReasoning(ts, &reasoningParser{name: "qwen3", start: "<think>", end: fx.end, endIDs: []int32{fx.endID}})
		defer useReasoning(ts, deepseek)
		var resp chatResponse
		postOK(t, url, body(nil), &resp)
		if m := resp.Choices[0].Message; m.ReasoningContent != nil || m.Content == nil || *m.Content != fx.text ||
			resp.Usage.CompletionTokensDetails.ReasoningTokens != 0 {
			t.Errorf("message %s, usage %s; want the whole output as content", jsonString(m), jsonString(resp.Usage))
		}
	})

	t.Run("completions", func(t *testing.T) {
		var tk tokenizeResponse
		postOK(t, ts.url+"/tokenize", map[string]any{"messages": reasoningMsgs}, &tk)
		code, raw := post(t, ts.url+"/v1/completions", map[string]any{"prompt": tk.Tokens, "max_tokens": reasoningMaxTokens, "temperature": 0})
		var resp completionResponse
		if code != http.StatusOK || json.Unmarshal(raw, &resp) != nil || resp.Choices[0].Text != fx.text ||
			strings.Contains(string(raw), "reasoning") {
			t.Errorf("completion %d: %s", code, raw)
		}
	})
	settle(t, ts)
}

// streamReasoning streams a chat request and returns its reasoning and
// content, checking the chunks' shape: the role first, then deltas with
// reasoning_content or content (never both empty), markers in neither.
func streamReasoning(t *testing.T, url string, body map[string]any) (reasoning, content string, chunks []chatChunk) {
	t.Helper()
	for i, ev := range stream(t, url, body) {
		var c chatChunk
		if err := json.Unmarshal([]byte(ev), &c); err != nil {
			t.Fatal(err)
		}
		chunks = append(chunks, c)
		if len(c.Choices) == 0 {
			continue
		}
		d := c.Choices[0].Delta
		switch {
		case i == 0:
			if d.Role != "assistant" || d.ReasoningContent != nil {
				t.Fatalf("first chunk %s", ev)
			}
		case d.ReasoningContent == nil && d.Content == nil && c.Choices[0].FinishReason == nil:
			t.Fatalf("empty chunk %s", ev)
		}
		if d.ReasoningContent != nil {
			if *d.ReasoningContent == "" {
				t.Fatalf("empty reasoning delta %s", ev)
			}
			reasoning += *d.ReasoningContent
		}
		if d.Content != nil {
			content += *d.Content
		}
	}
	return reasoning, content, chunks
}

// --reasoning-parser needs <think> and </think> in the vocabulary, as in
// vLLM: stories260K has neither.
func TestReasoningParserVocabulary(t *testing.T) {
	ts := newTestServer(t, nil, Options{})
	for _, tc := range []struct{ name, want string }{
		{"qwen3", "--reasoning-parser qwen3: the model's vocabulary has no <think> and </think> tokens"},
		{"granite", `--reasoning-parser must be deepseek_r1 or openai_gptoss or qwen3, got "granite"`},
	} {
		s := New(Options{ReasoningParser: tc.name, ChatTemplate: testTemplate})
		if err := s.SetEngine(ts.e); err == nil || err.Error() != tc.want {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
	}
}

// thinking_token_budget (and Anthropic's thinking.budget_tokens) forces the
// reasoning's end after that many tokens of reasoning: the reasoning is the
// budget's greedy tokens, the end marker is forced, an answer follows; a
// budget the reasoning does not reach changes nothing; without a reasoning
// parser, or below 0, it is refused.
func TestThinkingTokenBudget(t *testing.T) {
	fx := newReasoningFixture(t)
	ts := newTestServer(t, nil, Options{ChatTemplate: thinkingTemplate(fx.end)})
	url := ts.url + "/v1/chat/completions"
	body := func(budget int) map[string]any {
		return map[string]any{"messages": reasoningMsgs, "max_tokens": reasoningMaxTokens, "temperature": 0,
			"thinking_token_budget": budget}
	}
	if code, raw := post(t, url, body(4)); code != http.StatusBadRequest || !strings.Contains(string(raw), "reasoning parser") {
		t.Errorf("without a reasoning parser: %d %s", code, raw)
	}
	useReasoning(ts, &reasoningParser{name: "deepseek_r1", start: "<think>", end: fx.end, endIDs: []int32{fx.endID}, thinkFirst: true})
	if code, raw := post(t, url, body(-1)); code != http.StatusBadRequest {
		t.Errorf("a budget of -1: %d %s", code, raw)
	}
	tok := ts.s.backend.Load().e.Tokenizer()
	var tk tokenizeResponse
	postOK(t, ts.url+"/tokenize", map[string]any{"messages": reasoningMsgs}, &tk)
	ids := greedy(t, ts.e, tk.Tokens, reasoningMaxTokens, nil).TokenIDs
	const budget = 1
	var resp chatResponse
	postOK(t, url, body(budget), &resp)
	m := resp.Choices[0].Message
	if m.ReasoningContent == nil || *m.ReasoningContent != tok.Decode(ids[:budget]) || m.Content == nil ||
		resp.Usage.CompletionTokensDetails == nil || resp.Usage.CompletionTokensDetails.ReasoningTokens != budget+1 {
		t.Errorf("budget %d: %s, usage %s; want reasoning %q", budget, jsonString(m), jsonString(resp.Usage), tok.Decode(ids[:budget]))
	}
	resp = chatResponse{}
	postOK(t, url, body(reasoningMaxTokens), &resp)
	if m := resp.Choices[0].Message; m.ReasoningContent == nil || *m.ReasoningContent != fx.reasoning || m.Content == nil || *m.Content != fx.content {
		t.Errorf("an unspent budget: %s; want %q, %q", jsonString(m), fx.reasoning, fx.content)
	}
	var msg messageShape
	postOK(t, ts.url+"/v1/messages", map[string]any{"messages": reasoningMsgs, "max_tokens": reasoningMaxTokens, "temperature": 0,
		"thinking": map[string]any{"type": "enabled", "budget_tokens": budget}}, &msg)
	if len(msg.Content) < 1 || msg.Content[0].Thinking == nil || *msg.Content[0].Thinking != tok.Decode(ids[:budget]) {
		t.Errorf("messages, budget_tokens %d: %s", budget, jsonString(msg.Content))
	}
	settle(t, ts)
}
