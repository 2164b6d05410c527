package server

import (
	"encoding/json"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"

	"pagoda/engine"
	"pagoda/tokenizer"
)

// harmonyCases are gpt-oss outputs (what follows the prompt's <|start|>assistant; <|call|>
// and <|return|> end generation, so they are mostly absent) and how harmony reads them.
var harmonyCases = []struct {
	name               string
	text               string
	reasoning, content string
	calls              []toolCallFunc
	thought            bool
}{
	{"reasoning and final", "<|channel|>analysis<|message|>Think.<|end|><|start|>assistant<|channel|>final<|message|>Hi!",
		"Think.", "Hi!", nil, true},
	{"reasoning and call", "<|channel|>analysis<|message|>Need the weather.<|end|><|start|>assistant<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{\"city\":\"Paris\"}",
		"Need the weather.", "", []toolCallFunc{{"get_weather", `{"city":"Paris"}`}}, true},
	{"recipient in the role header", "<|channel|>analysis<|message|>x<|end|><|start|>assistant to=functions.f<|channel|>commentary json<|message|> {\"a\": 1} ",
		"x", "", []toolCallFunc{{"f", `{"a": 1}`}}, true},
	{"call first", " to=functions.f<|channel|>commentary <|constrain|>json<|message|>{}", "", "", []toolCallFunc{{"f", "{}"}}, false},
	{"preamble then call", "<|channel|>commentary<|message|>Let me check.<|end|><|start|>assistant<|channel|>commentary to=functions.f <|constrain|>json<|message|>{}",
		"", "Let me check.", []toolCallFunc{{"f", "{}"}}, false},
	{"two calls", "<|channel|>commentary to=functions.a json<|message|>{}<|call|><|start|>assistant<|channel|>commentary to=functions.b json<|message|>[1]<|call|>",
		"", "", []toolCallFunc{{"a", "{}"}, {"b", "[1]"}}, false},
	{"truncated reasoning", "<|channel|>analysis<|message|>Hmm, let", "Hmm, let", "", nil, true},
	{"truncated in a marker", "<|channel|>analysis<|message|>a<|en", "a<|en", "", nil, true},
	{"final only, <|return|> kept", "<|channel|>final<|message|>Hi<|return|>", "", "Hi", nil, false},
	{"'<' in the reasoning", "<|channel|>analysis<|message|>1 < 2 <| 3<|end|><|start|>assistant<|channel|>final<|message|>yes",
		"1 < 2 <| 3", "yes", nil, true},
	{"stray commentary before analysis", "<|channel|>commentary to=assistant<|channel|>analysis<|message|>r<|end|><|start|>assistant<|channel|>final<|message|>c",
		"r", "c", nil, true},
	{"built-in tool dropped", "<|channel|>analysis<|message|>a<|end|><|start|>assistant<|channel|>commentary to=browser.search <|constrain|>json<|message|>{\"q\":1}<|call|>",
		"a", "", nil, true},
	{"plain text", "Hello there.", "", "Hello there.", nil, false},
	{"empty", "", "", "", nil, false},
	{"malformed arguments", "<|channel|>commentary to=functions.f <|constrain|>json<|message|>{bad",
		"", "<|channel|>commentary to=functions.f <|constrain|>json<|message|>{bad", nil, false},
	{"leaves the format", "<|channel|>analysis<|message|>a<|end|>oops <|end|>", "a", "oops <|end|>", nil, true},
	{"unknown role", "<|channel|>analysis<|message|>a<|end|><|start|>user<|message|>x", "a", "<|start|>user<|message|>x", nil, true},
}

func TestHarmonyParse(t *testing.T) {
	for _, tc := range harmonyCases {
		t.Run(tc.name, func(t *testing.T) {
			h := parseHarmony(tc.text)
			if h.reasoning != tc.reasoning || h.content != tc.content || !reflect.DeepEqual(h.calls, tc.calls) || h.thought != tc.thought {
				t.Fatalf("parse(%q) = %q, %q, %v, %v; want %q, %q, %v, %v", tc.text, h.reasoning, h.content, h.calls, h.thought,
					tc.reasoning, tc.content, tc.calls, tc.thought)
			}
		})
	}
}

// TestHarmonyParseStream checks that any split of an output into deltas reads as the whole.
func TestHarmonyParseStream(t *testing.T) {
	for _, tc := range harmonyCases {
		t.Run(tc.name, func(t *testing.T) {
			for chunks := range splits(tc.text) {
				s := &harmonySplit{}
				var r, c strings.Builder
				var calls []toolCallFunc
				for i, ch := range chunks {
					p := s.push(ch, i == len(chunks)-1)
					r.WriteString(p.reasoning)
					c.WriteString(p.content)
					calls = append(calls, p.calls...)
				}
				if r.String() != tc.reasoning || c.String() != tc.content || !reflect.DeepEqual(calls, tc.calls) || s.thought != tc.thought {
					t.Fatalf("deltas %q: %q, %q, %v, %v", chunks, r.String(), c.String(), calls, s.thought)
				}
			}
		})
	}
}

// harmonyRun is a chat run on a harmony model with tool choice mode.
func harmonyRun(mode string) *chatRun {
	return &chatRun{b: &backend{harmony: &harmonyParser{}}, req: &chatRequest{}, tools: &toolPlan{mode: mode, parser: harmonyToolParser}}
}

const harmonyCallText = "<|channel|>analysis<|message|>Need the weather.<|end|><|start|>assistant<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{\"city\":\"Paris\"}"

// TestHarmonyMessage checks whole answers: reasoning, tool calls (finish reason tool_calls)
// and content; without tools a call stays text.
func TestHarmonyMessage(t *testing.T) {
	m := harmonyRun(toolsAuto).message(engine.CompletionOutput{Text: harmonyCallText, FinishReason: "stop"})
	if m.ReasoningContent == nil || *m.ReasoningContent != "Need the weather." || m.Content != nil ||
		len(m.ToolCalls) != 1 || m.ToolCalls[0].Function != (toolCallFunc{"get_weather", `{"city":"Paris"}`}) ||
		!strings.HasPrefix(m.ToolCalls[0].ID, "chatcmpl-tool-") {
		t.Fatalf("auto: %s", jsonString(m))
	}
	m = harmonyRun(toolsNone).message(engine.CompletionOutput{Text: harmonyCallText})
	if m.Content == nil || !strings.Contains(*m.Content, "to=functions.get_weather") || m.ToolCalls != nil {
		t.Fatalf("no tools: %s", jsonString(m))
	}
	m = harmonyRun(toolsNone).message(engine.CompletionOutput{Text: "<|channel|>analysis<|message|>Hmm"})
	if m.Content != nil || m.ReasoningContent == nil || *m.ReasoningContent != "Hmm" {
		t.Fatalf("thought only: %s", jsonString(m))
	}
	c := harmonyRun(toolsNone)
	c.req.IncludeReasoning = ptr(false)
	m = c.message(engine.CompletionOutput{Text: "<|channel|>analysis<|message|>a<|end|><|start|>assistant<|channel|>final<|message|>b"})
	if m.ReasoningContent != nil || m.Content == nil || *m.Content != "b" {
		t.Fatalf("include_reasoning false: %s", jsonString(m))
	}
	m = harmonyRun(toolsNone).message(engine.CompletionOutput{Text: "Just text."})
	if m.Content == nil || *m.Content != "Just text." || m.ReasoningContent != nil {
		t.Fatalf("plain: %s", jsonString(m))
	}
}

// TestHarmonyStream streams outputs in deltas of several sizes and checks what the chunks
// add up to.
func TestHarmonyStream(t *testing.T) {
	final := "<|channel|>analysis<|message|>Think.<|end|><|start|>assistant<|channel|>final<|message|>The answer is 4."
	for _, tc := range []struct {
		name, mode, text           string
		reasoning, content, finish string
		calls                      []toolCallFunc
	}{
		{"call", toolsAuto, harmonyCallText, "Need the weather.", "", "tool_calls", []toolCallFunc{{"get_weather", `{"city":"Paris"}`}}},
		{"final", toolsAuto, final, "Think.", "The answer is 4.", "stop", nil},
		{"no tools", toolsNone, final, "Think.", "The answer is 4.", "stop", nil},
		{"malformed", toolsNone, "4, I think.", "", "4, I think.", "stop", nil},
	} {
		for _, step := range []int{1, 3, 7, 1000} {
			c := harmonyRun(tc.mode)
			var reasoning, content, finish string
			var calls []toolCallDelta
			for i := 0; i < len(tc.text); i += step {
				o := engine.CompletionOutput{Text: tc.text[i:min(i+step, len(tc.text))]}
				if i+step >= len(tc.text) {
					o.FinishReason = "stop"
				}
				v := c.harmonyChunk(o)
				if v == nil {
					continue
				}
				ch := v.(chatChunk).Choices[0]
				if ch.Delta.ReasoningContent != nil {
					reasoning += *ch.Delta.ReasoningContent
				}
				if ch.Delta.Content != nil {
					content += *ch.Delta.Content
				}
				if ch.FinishReason != nil {
					finish = *ch.FinishReason
				}
				calls = reassemble(calls, ch.Delta.ToolCalls)
			}
			var got []toolCallFunc
			for _, d := range calls {
				got = append(got, d.Function)
			}
			if reasoning != tc.reasoning || content != tc.content || finish != tc.finish || !reflect.DeepEqual(got, tc.calls) {
				t.Errorf("%s, deltas of %d bytes: reasoning %q, content %q, finish %q, calls %v", tc.name, step, reasoning, content, finish, got)
			}
		}
	}
}

// harmonyTokenizer is a tiny byte-level vocabulary with harmony's markers.
func harmonyTokenizer(t *testing.T) *tokenizer.Tokenizer {
	t.Helper()
	var tokens []string
	var types []tokenizer.TokenType
	for b := range 256 {
		tokens = append(tokens, string(rune(0x100+b))) // placeholder texts, unique
		types = append(types, tokenizer.TypeNormal)
	}
	for c := 'a'; c <= 'z'; c++ {
		tokens[c] = string(c)
	}
	for _, m := range []string{hStart, hChannel, hMessage, hEnd, hCall, hReturn, hConstrain, "final"} {
		tokens = append(tokens, m)
		types = append(types, tokenizer.TypeControl)
	}
	tk, err := tokenizer.New(tokenizer.Config{Model: tokenizer.ModelBPE, Pre: "gpt-4o", Tokens: tokens, Types: types, Merges: []string{}})
	if err != nil {
		t.Fatal(err)
	}
	return tk
}

// TestHarmonyChoice checks when harmony is chosen, what a grammar waits for, and that the
// harmony vocabulary ends generation on <|return|> and <|call|> but not <|end|>.
func TestHarmonyChoice(t *testing.T) {
	for _, tc := range []struct {
		opts     Options
		template string
		arch     string
		want     bool
	}{
		{Options{}, "", "gpt-oss", true},
		{Options{}, "{{ '<|start|>assistant<|channel|>final<|message|>' }}", "llama", true},
		{Options{}, "{{ '<|im_start|>' }}", "qwen3", false},
		{Options{ReasoningParser: "openai_gptoss"}, "", "llama", true},
		{Options{ToolCallParser: "openai"}, "", "llama", true},
		{Options{ReasoningParser: "qwen3"}, "", "gpt-oss", false},
	} {
		if got := harmonyChosen(tc.opts, tc.template, tc.arch); got != tc.want {
			t.Errorf("harmonyChosen(%+v, %q, %q) = %v", tc.opts, tc.template, tc.arch, got)
		}
	}
	if p, why := chooseParser("", "gpt-oss"); p != harmonyToolParser {
		t.Errorf("chooseParser(gpt-oss) = %s (%s)", p, why)
	}
	tk := harmonyTokenizer(t)
	hp, err := newHarmonyParser(tk)
	if err != nil {
		t.Fatal(err)
	}
	want := []int32{257, 263, 258} // <|channel|> final <|message|>
	if !reflect.DeepEqual(hp.finalIDs, want) {
		t.Errorf("finalIDs %v, want %v", hp.finalIDs, want)
	}
	// A spent thinking budget forces the analysis message's end, the next
	// message's start and the final channel's header.
	end, _ := tk.TokenID(hEnd)
	start, _ := tk.TokenID(hStart)
	if f := hp.toFinalIDs; len(f) < 5 || f[0] != end || f[1] != start || !slices.Equal(f[len(f)-3:], want) ||
		tk.Decode(f) != hEnd+hStart+"assistant"+hChannel+"final"+hMessage {
		t.Errorf("toFinalIDs %v", f)
	}
	if a := hp.analysisIDs; len(a) < 3 || a[0] != want[0] || a[len(a)-1] != want[2] || tk.Decode(a) != hChannel+"analysis"+hMessage {
		t.Errorf("analysisIDs %v", a)
	}
	for _, m := range []string{hReturn, hCall} {
		if id, _ := tk.TokenID(m); !tk.IsEOG(id) {
			t.Errorf("%s does not end generation", m)
		}
	}
	if id, _ := tk.TokenID(hEnd); tk.IsEOG(id) || tk.IsSpecial(id) {
		t.Errorf("<|end|> ends generation or is skipped in output")
	}
	if _, err := newHarmonyParser(tokenizerWithout(t)); err == nil {
		t.Error("a vocabulary without harmony's markers accepted")
	}
	// A vocabulary without the markers: chosen by the template, harmony is left off; named
	// on the command line, the server refuses to start.
	b := &backend{tok: tokenizerWithout(t)}
	if err := New(Options{}).planHarmony(b, "<|channel|>", "llama"); err != nil || b.harmony != nil {
		t.Errorf("chosen by the template: %v, harmony %v", err, b.harmony)
	}
	if err := New(Options{ReasoningParser: "openai_gptoss"}).planHarmony(b, "", "llama"); err == nil {
		t.Error("--reasoning-parser openai_gptoss accepted without harmony's vocabulary")
	}
	b = &backend{tok: tk}
	if err := New(Options{}).planHarmony(b, "", "gpt-oss"); err != nil || b.harmony == nil {
		t.Errorf("gpt-oss: %v, harmony %v", err, b.harmony)
	}
}

func tokenizerWithout(t *testing.T) *tokenizer.Tokenizer {
	t.Helper()
	tk, err := tokenizer.New(tokenizer.Config{Model: tokenizer.ModelBPE, Tokens: []string{"a", "b"}, Merges: []string{}})
	if err != nil {
		t.Fatal(err)
	}
	return tk
}

// TestHarmonyServer runs chat completions, whole and streamed, on a server whose model's
// output (the stories model's, no harmony) falls back to content: the same content as
// without harmony, no reasoning.
func TestHarmonyServer(t *testing.T) {
	ts := newTestServer(t, nil, Options{})
	url := ts.url + "/v1/chat/completions"
	req := map[string]any{"messages": reasoningMsgs, "max_tokens": 12, "temperature": 0}
	var plain chatResponse
	postOK(t, url, req, &plain)
	b := ts.s.backend.Load()
	b.harmony = &harmonyParser{}
	ts.s.backend.Store(b)
	var got chatResponse
	postOK(t, url, req, &got)
	m, want := got.Choices[0].Message, plain.Choices[0].Message
	if m.Content == nil || *m.Content != *want.Content || m.ReasoningContent != nil {
		t.Fatalf("harmony fallback %s, without harmony %s", jsonString(m), jsonString(want))
	}
	req["stream"] = true
	var content strings.Builder
	for _, ev := range stream(t, url, req) {
		var ch chatChunk
		if err := json.Unmarshal([]byte(ev), &ch); err != nil {
			t.Fatal(err)
		}
		if len(ch.Choices) > 0 && ch.Choices[0].Delta.Content != nil {
			content.WriteString(*ch.Choices[0].Delta.Content)
		}
	}
	if content.String() != *want.Content {
		t.Fatalf("streamed %q, want %q", content.String(), *want.Content)
	}
}

// TestHarmonyPrompt renders gpt-oss's chat template as a chat request reaches it: the
// request's reasoning_effort, developer message, tools and an earlier turn's
// reasoning_content (the template's thinking).
func TestHarmonyPrompt(t *testing.T) {
	src, err := os.ReadFile("../tokenizer/testdata/templates/gpt-oss.jinja")
	if err != nil {
		t.Fatal(err)
	}
	tpl, err := tokenizer.CompileTemplate(string(src))
	if err != nil {
		t.Fatal(err)
	}
	if templateIgnoresTools(tpl, tokenizer.ChatOptions{AddGenerationPrompt: true}) {
		t.Error("gpt-oss's template is taken to ignore tools")
	}
	req := &chatRequest{ReasoningEffort: ptr("low"), Messages: []chatMessage{
		{Role: "developer", Content: jsonText("Answer in French.")},
		{Role: "user", Content: jsonText("Weather in Paris?")},
		{Role: "assistant", ReasoningContent: "Use the tool.", ToolCalls: []toolCall{{ID: "c1", Type: "function",
			Function: toolCallFunc{Name: "get_weather", Arguments: `{"city": "Paris"}`}}}},
		{Role: "tool", ToolCallID: "c1", Content: jsonText("20 C")},
	}}
	msgs, aerr := messages(req.Messages)
	if aerr != nil {
		t.Fatal(aerr)
	}
	vars, aerr := templateVars(req)
	if aerr != nil {
		t.Fatal(aerr)
	}
	var tools []toolDef
	if err := json.Unmarshal([]byte(`[{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}}]`), &tools); err != nil {
		t.Fatal(err)
	}
	vars["tools"] = (&toolPlan{tools: tools}).templateTools()
	out, err := tpl.Render(msgs, tokenizer.ChatOptions{AddGenerationPrompt: true, Vars: vars})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Reasoning: low", "<|start|>developer<|message|># Instructions\n\nAnswer in French.",
		"type get_weather = (_: {\ncity?: string,\n}) => any;",
		"<|start|>assistant<|channel|>analysis<|message|>Use the tool.<|end|>",
		"<|start|>assistant to=functions.get_weather<|channel|>commentary json<|message|>{\"city\": \"Paris\"}<|call|>",
		"<|start|>functions.get_weather to=assistant<|channel|>commentary<|message|>\"20 C\"<|end|><|start|>assistant"} {
		if !strings.Contains(out, want) {
			t.Errorf("the prompt lacks %q:\n%s", want, out)
		}
	}
}

// TestHarmonyReasoningTokens counts the tokens up to the end of the last analysis body.
func TestHarmonyReasoningTokens(t *testing.T) {
	tk := harmonyTokenizer(t)
	text := "<|channel|>analysis<|message|>xx<|end|><|start|>assistant<|channel|>final<|message|>ok"
	ids := tk.Encode(text, false, true)
	c := harmonyRun(toolsNone)
	c.b.tok = tk
	u := c.reasoningUsage(&usage{}, []engine.CompletionOutput{{Text: tk.Decode(ids), TokenIDs: ids}})
	if u.CompletionTokensDetails == nil || u.CompletionTokensDetails.ReasoningTokens != 12 { // <|channel|>, 8 letters, <|message|>, x, x
		t.Fatalf("reasoning tokens %+v of %d", u.CompletionTokensDetails, len(ids))
	}
}

// FuzzHarmony checks that reading any output in two deltas gives what reading it whole gives,
// without panics.
func FuzzHarmony(f *testing.F) {
	for _, tc := range harmonyCases {
		f.Add(tc.text, len(tc.text)/2)
	}
	f.Fuzz(func(t *testing.T, text string, cut int) {
		if cut < 0 || cut > len(text) {
			cut = len(text) / 2
		}
		whole := parseHarmony(text)
		s := &harmonySplit{}
		a, b := s.push(text[:cut], false), s.push(text[cut:], true)
		if a.reasoning+b.reasoning != whole.reasoning || a.content+b.content != whole.content ||
			!reflect.DeepEqual(append(a.calls, b.calls...), whole.calls) {
			t.Fatalf("%q cut at %d: %q %q / %q %q, whole %q %q", text, cut, a.reasoning, b.reasoning, a.content, b.content,
				whole.reasoning, whole.content)
		}
	})
}

// BenchmarkHarmonyStream reads a 64 KiB reasoning and answer streamed 4 bytes at a time.
func BenchmarkHarmonyStream(b *testing.B) {
	text := "<|channel|>analysis<|message|>" + strings.Repeat("Let me think <about> it. ", 2700) +
		"<|end|><|start|>assistant<|channel|>final<|message|>" + strings.Repeat("Done. ", 100)
	b.SetBytes(int64(len(text)))
	for b.Loop() {
		s := &harmonySplit{}
		for i := 0; i < len(text); i += 4 {
			s.push(text[i:min(i+4, len(text))], i+4 >= len(text))
		}
	}
}
