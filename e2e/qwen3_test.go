package e2e

import (
	"encoding/json"
	"maps"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"pagoda/internal/testmodel"
)

// TestQwen3ThinkingAndTools serves a synthetic Qwen3 — random weights at a
// tiny shape, with Qwen3's tokenizer and chat template (`pagoda model synth
// --arch qwen3`, on llama.cpp's Qwen2 vocabulary) — with `--reasoning-parser
// qwen3` and hermes auto tool choice, and checks through the HTTP API what a
// thinking model's clients see: reasoning_content then content, streamed
// and not; enable_thinking false rendering the empty think block and giving
// content only; and tool calls (required, named after a reasoning, and
// hermes <tool_call> markup) as message.tool_calls with valid JSON
// arguments, streamed and not.
//
// Random weights do not think or call tools on their own, so each request
// shapes its output with what the API offers, and the server's parsers read
// the tokens the model really generated:
//
//   - the think block: logit_bias and penalties (thinkingShape) make the
//     greedy output <think>, the reasoning words in an order the model's
//     own logits choose, </think>, then the model's free text;
//   - tool calls: tool_choice required and named, whose grammars the server
//     builds from the tools' schemas, and for hermes a guided_regex of
//     Qwen3's <tool_call> format (logit_bias picks the marker tokens, as
//     Qwen3 writes them, over their spelling in pieces).
func TestQwen3ThinkingAndTools(t *testing.T) {
	bin := buildPagoda(t)
	model := synthQwen3(t, bin)
	port := freePort(t)
	c := &chatClient{t: t, base: "http://127.0.0.1:" + strconv.Itoa(port), model: "qwen3"}
	srv := startProcess(t, "pagoda serve", exec.Command(bin, "serve", model, "--port", strconv.Itoa(port),
		"--served-model-name", "qwen3", "--max-model-len", "1024", "--max-num-seqs", "4", "--shutdown-timeout", "20s",
		"--reasoning-parser", "qwen3", "--enable-auto-tool-choice", "--tool-call-parser", "hermes"))
	waitHealthy(t, c.base, srv)
	shape := c.thinkingShape()

	t.Run("thinking", func(t *testing.T) { testThinking(t, c.with(t), shape) })
	t.Run("thinking disabled", func(t *testing.T) { testThinkingDisabled(t, c.with(t), shape) })
	t.Run("tool_choice required", func(t *testing.T) { testToolRequired(t, c.with(t)) })
	t.Run("named tool after thinking", func(t *testing.T) { testNamedToolAfterThinking(t, c.with(t), shape) })
	t.Run("hermes", func(t *testing.T) { testHermes(t, c.with(t)) })
	srv.stop(t)
}

// synthQwen3 writes the synthetic Qwen3 of engine.TestSynthFamilies (seed
// 1, Q8_0) with `pagoda model synth`.
func synthQwen3(t *testing.T, bin string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "synth-qwen3.gguf")
	runLogged(t, "model synth", exec.Command(bin, "model", "synth", "--arch", "qwen3", "--dims", "128,256,2,4,2,1000",
		"--type", "Q8_0", "--vocab", testmodel.Vocab(t, "qwen2"), "--out", path))
	return path
}

// Qwen3's think markers (model/synth's Qwen3 tokenizer).
const (
	thinkID    = 151667 // <think>
	endThinkID = 151668 // </think>
)

// reasoningWords are the words of the forced reasoning: single tokens, none
// in the prompts (the repetition penalty would halve them from the start).
var reasoningWords = []string{"Okay", " let", " me", " think"}

// thinkShape is a request's logit_bias and penalties that force a think block.
type thinkShape map[string]any

// thinkingShape builds the sampling parameters that make the greedy
// output <think>, each reasoning word once, </think>, then free text. The
// chosen token is the largest processed logit: the raw logit (for this
// model every token's lies within about ±2 of 0) plus its bias, then
// (sample.Sampler's order, vLLM's) the repetition penalty 2 halving a
// positive logit of a token already in the prompt or output, then the
// frequency penalty (2 per use in the output) and the presence penalty (2).
//
//	step 1        <think> (7) beats the words (5.5), </think> (4) and every unbiased token (≲ 2);
//	              used once it falls to ≤ (7+2)/2 − 4 < 1
//	steps 2…K+1   the K words, in the order the model's logits rank them; each falls to < 0 when used
//	step K+2      </think> (4), then ≤ −1
//	then          the biased tokens all below the unbiased ones: the model's own text (the answer)
func (c *chatClient) thinkingShape() thinkShape {
	bias := map[string]float64{strconv.Itoa(c.single("<think>", thinkID)): 7, strconv.Itoa(c.single("</think>", endThinkID)): 4}
	for _, w := range reasoningWords {
		bias[strconv.Itoa(c.single(w, -1))] = 5.5
	}
	return thinkShape{"logit_bias": bias, "repetition_penalty": 2, "presence_penalty": 2, "frequency_penalty": 2}
}

func (s thinkShape) into(body map[string]any) map[string]any {
	maps.Copy(body, s)
	return body
}

// checkReasoning: the reasoning is the reasoning words, each once.
func checkReasoning(t *testing.T, reasoning string) {
	t.Helper()
	n := 0
	for _, w := range reasoningWords {
		n += len(w)
		if strings.Count(reasoning, w) != 1 {
			t.Fatalf("reasoning %q: want each of %q once", reasoning, reasoningWords)
		}
	}
	if len(reasoning) != n {
		t.Fatalf("reasoning %q: want the words %q only", reasoning, reasoningWords)
	}
}

var askMath = []map[string]any{{"role": "user", "content": "What is 2+2?"}}

// testThinking: the output <think>…</think> answer comes as reasoning
// deltas, then content deltas; the whole response says the same.
func testThinking(t *testing.T, c *chatClient, s thinkShape) {
	body := func() map[string]any {
		return s.into(map[string]any{"messages": askMath, "max_tokens": len(reasoningWords) + 10, "temperature": 0})
	}
	req := body()
	req["logprobs"] = true
	r := c.chat(req)
	m := r.Choices[0].Message
	if m.ReasoningContent == nil || m.Content == nil {
		t.Fatalf("message %s: want reasoning_content and content", m)
	}
	checkReasoning(t, *m.ReasoningContent)
	if *m.Content == "" || strings.Contains(*m.Content, "think>") {
		t.Fatalf("content %q: want the answer, no marker", *m.Content)
	}
	toks := r.Choices[0].tokens()
	if k := len(reasoningWords); len(toks) < k+3 || toks[0] != "<think>" || toks[k+1] != "</think>" {
		t.Fatalf("generated tokens %q: want <think>, %d words, </think>, an answer", toks, k)
	}
	if got := r.Usage.reasoningTokens(); got != len(reasoningWords)+2 {
		t.Fatalf("reasoning_tokens %d, want %d (the words and both markers)", got, len(reasoningWords)+2)
	}

	req = body()
	req["stream_options"] = map[string]any{"include_usage": true}
	ev := c.stream(req)
	if got := ev.kinds(); !slices.Equal(got, []string{"reasoning", "content"}) {
		t.Fatalf("stream events %v: want reasoning deltas, then content deltas", ev)
	}
	if ev.count("reasoning") < len(reasoningWords) {
		t.Fatalf("stream %v: the reasoning came in %d deltas, want one per word", ev, ev.count("reasoning"))
	}
	if ev.text("reasoning") != *m.ReasoningContent || ev.text("content") != *m.Content {
		t.Fatalf("stream reasoning %q, content %q; the response's %q, %q", ev.text("reasoning"), ev.text("content"), *m.ReasoningContent, *m.Content)
	}
	if ev.usage == nil || ev.usage.reasoningTokens() != len(reasoningWords)+2 {
		t.Fatalf("stream usage %+v: want %d reasoning tokens", ev.usage, len(reasoningWords)+2)
	}
}

// testThinkingDisabled: enable_thinking false renders Qwen3's empty think
// block after the generation prompt, so the output — even with the think
// block forced as in testThinking — is all content.
func testThinkingDisabled(t *testing.T, c *chatClient, s thinkShape) {
	off := map[string]any{"enable_thinking": false}
	on := c.tokenize(map[string]any{"messages": askMath, "add_generation_prompt": true})
	closed := c.tokenize(map[string]any{"messages": askMath, "add_generation_prompt": true, "chat_template_kwargs": off})
	if !slices.Equal(closed.Tokens[:len(on.Tokens)], on.Tokens) ||
		!slices.Equal(closed.TokenStrs[len(on.Tokens):], []string{"<think>", "\n\n", "</think>", "\n\n"}) ||
		closed.Tokens[len(on.Tokens)] != thinkID || closed.Tokens[len(on.Tokens)+2] != endThinkID {
		t.Fatalf("prompt with enable_thinking false %q: want the thinking prompt %q and <think>\\n\\n</think>\\n\\n", closed.TokenStrs, on.TokenStrs)
	}
	if !strings.HasSuffix(strings.Join(on.TokenStrs, ""), "<|im_start|>assistant\n") {
		t.Fatalf("thinking prompt %q: want it to end with the generation prompt", on.TokenStrs)
	}

	body := func() map[string]any {
		return s.into(map[string]any{"messages": askMath, "max_tokens": len(reasoningWords) + 10, "temperature": 0,
			"chat_template_kwargs": off})
	}
	r := c.chat(body())
	m := r.Choices[0].Message
	// The prompt holds both markers now, so the repetition penalty halves
	// them: the words come first, then <think> (3.5 > the unbiased ≲ 2),
	// all of it content.
	if m.ReasoningContent != nil || m.Content == nil || !strings.Contains(*m.Content, "<think>") {
		t.Fatalf("message %s: want all of the output, <think> included, as content", m)
	}
	checkReasoning(t, (*m.Content)[:min(len(*m.Content), len(strings.Join(reasoningWords, "")))])
	if got := r.Usage.reasoningTokens(); got != 0 || r.Usage.CompletionTokens != len(reasoningWords)+10 {
		t.Fatalf("usage %+v: want %d completion tokens, none of them reasoning", r.Usage, len(reasoningWords)+10)
	}
	ev := c.stream(body())
	if got := ev.kinds(); !slices.Equal(got, []string{"content"}) || ev.text("content") != *m.Content {
		t.Fatalf("stream events %v: want the response's content %q only", ev, *m.Content)
	}
}

// weatherTool is a tool whose arguments the grammar of tool_choice
// required or named must make valid.
var weatherTool = map[string]any{"type": "function", "function": map[string]any{
	"name": "get_weather", "description": "Current weather in a city",
	"parameters": map[string]any{"type": "object", "additionalProperties": false, "required": []string{"city", "unit"},
		"properties": map[string]any{
			"city": map[string]any{"type": "string", "maxLength": 12},
			"unit": map[string]any{"type": "string", "enum": []string{"celsius", "fahrenheit"}},
		}}}}

var askWeather = []map[string]any{{"role": "user", "content": "What is the weather in Paris?"}}

// checkWeatherCall: a get_weather call whose arguments are a JSON object
// valid against the tool's schema.
func checkWeatherCall(t *testing.T, name, args string) {
	t.Helper()
	var a map[string]any
	if name != "get_weather" || json.Unmarshal([]byte(args), &a) != nil {
		t.Fatalf("call %s(%s): want get_weather with JSON arguments", name, args)
	}
	city, ok := a["city"].(string)
	unit, _ := a["unit"].(string)
	if len(a) != 2 || !ok || utf8.RuneCountInString(city) > 12 || (unit != "celsius" && unit != "fahrenheit") {
		t.Fatalf("arguments %s: not valid against the tool's schema", args)
	}
}

// testToolRequired: tool_choice required with thinking off (a grammar
// starts with the answer, here the first token) gives the call as
// message.tool_calls, finish_reason tool_calls; streamed, as tool-call
// deltas. parallel_tool_calls false makes it one call: this model would
// otherwise go on adding calls to the array.
func testToolRequired(t *testing.T, c *chatClient) {
	body := func() map[string]any {
		return map[string]any{"messages": askWeather, "tools": []any{weatherTool}, "tool_choice": "required",
			"parallel_tool_calls": false, "max_tokens": 256, "temperature": 0, "chat_template_kwargs": map[string]any{"enable_thinking": false}}
	}
	r := c.chat(body())
	ch := r.Choices[0]
	if len(ch.Message.ToolCalls) != 1 || ch.FinishReason != "tool_calls" || ch.Message.Content != nil {
		t.Fatalf("choice %v: want one tool call, no content, finish_reason tool_calls", ch)
	}
	for _, call := range ch.Message.ToolCalls {
		if !strings.HasPrefix(call.ID, "chatcmpl-tool-") || call.Type != "function" {
			t.Fatalf("call %+v: want an id and type function", call)
		}
		checkWeatherCall(t, call.Function.Name, call.Function.Arguments)
	}
	ev := c.stream(body())
	calls := ev.calls()
	if !slices.Equal(ev.kinds(), []string{"tool"}) || len(calls) != len(ch.Message.ToolCalls) || ev.finish != "tool_calls" {
		t.Fatalf("stream events %v, finish %q: want %d tool calls", ev, ev.finish, len(ch.Message.ToolCalls))
	}
	for i, call := range calls {
		checkWeatherCall(t, call.Function.Name, call.Function.Arguments)
		if call.Function != ch.Message.ToolCalls[i].Function {
			t.Fatalf("streamed call %+v, the response's %+v", call.Function, ch.Message.ToolCalls[i].Function)
		}
	}
}

// testNamedToolAfterThinking: a named tool choice on a thinking request:
// the reasoning is free (forced here as in testThinking), the grammar of the
// tool's arguments starts after </think>; streamed, reasoning deltas come
// before the call's.
func testNamedToolAfterThinking(t *testing.T, c *chatClient, s thinkShape) {
	body := func() map[string]any {
		return s.into(map[string]any{"messages": askWeather, "tools": []any{weatherTool}, "max_tokens": 256, "temperature": 0,
			"tool_choice": map[string]any{"type": "function", "function": map[string]any{"name": "get_weather"}}})
	}
	r := c.chat(body())
	m := r.Choices[0].Message
	if m.ReasoningContent == nil || len(m.ToolCalls) != 1 {
		t.Fatalf("message %s: want reasoning_content and one call", m)
	}
	checkReasoning(t, *m.ReasoningContent)
	checkWeatherCall(t, m.ToolCalls[0].Function.Name, m.ToolCalls[0].Function.Arguments)
	ev := c.stream(body())
	calls := ev.calls()
	if !slices.Equal(ev.kinds(), []string{"reasoning", "tool"}) || len(calls) != 1 || ev.text("reasoning") != *m.ReasoningContent ||
		calls[0].Function != m.ToolCalls[0].Function {
		t.Fatalf("stream events %v: want the reasoning %q, then the call %+v", ev, *m.ReasoningContent, m.ToolCalls[0].Function)
	}
}

// hermesCall is Qwen3's tool-call format (its chat template's
// instructions), as a regex: what the hermes parser reads.
const hermesCall = `<tool_call>\n\{"name": "get_weather", "arguments": \{"city": "[A-Z][a-z]{1,10}", "unit": "(celsius|fahrenheit)"\}\}\n</tool_call>`

// testHermes: tool_choice auto with the hermes parser: an output in Qwen3's
// <tool_call>{"name": …, "arguments": …}</tool_call> format, written with
// the <tool_call> and </tool_call> tokens, becomes message.tool_calls; the
// stream holds it back from the content and sends the call at the end.
func testHermes(t *testing.T, c *chatClient) {
	open, end := c.single("<tool_call>", 151657), c.single("</tool_call>", 151658)
	body := func() map[string]any {
		return map[string]any{"messages": askWeather, "tools": []any{weatherTool}, "tool_choice": "auto", "guided_regex": hermesCall,
			"logit_bias": map[string]float64{strconv.Itoa(open): 20, strconv.Itoa(end): 20}, "max_tokens": 160, "temperature": 0,
			"chat_template_kwargs": map[string]any{"enable_thinking": false}}
	}
	req := body()
	req["logprobs"] = true
	r := c.chat(req)
	ch := r.Choices[0]
	if toks := ch.tokens(); len(toks) < 3 || toks[0] != "<tool_call>" || toks[len(toks)-1] != "</tool_call>" {
		t.Fatalf("generated tokens %q: want the <tool_call> and </tool_call> tokens around the call", toks)
	}
	if len(ch.Message.ToolCalls) != 1 || ch.Message.Content != nil || ch.FinishReason != "tool_calls" {
		t.Fatalf("choice %v: want one call read by the hermes parser, no content", ch)
	}
	checkWeatherCall(t, ch.Message.ToolCalls[0].Function.Name, ch.Message.ToolCalls[0].Function.Arguments)
	ev := c.stream(body())
	calls := ev.calls()
	if !slices.Equal(ev.kinds(), []string{"tool"}) || len(calls) != 1 || calls[0].Function != ch.Message.ToolCalls[0].Function {
		t.Fatalf("stream events %v: want the call %+v only", ev, ch.Message.ToolCalls[0].Function)
	}
}
