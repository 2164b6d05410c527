package server

import (
	"strings"
	"testing"

	"pagoda/engine"
	"pagoda/tokenizer"
)

var (
	qwen3Parser    = &reasoningParser{name: "qwen3", start: "<think>", end: "</think>", endIDs: []int32{4}}
	deepseekParser = &reasoningParser{name: "deepseek_r1", start: "<think>", end: "</think>", endIDs: []int32{4}, thinkFirst: true}
)

// reasoningCases are outputs and how each parser splits them, from where
// the prompt left the output (open: qwen3's neutral prompt; thinking: a
// prompt that opened the reasoning, and deepseek_r1's neutral one; answer:
// a prompt that closed it).
var reasoningCases = []struct {
	name               string
	p                  *reasoningParser
	start              splitState
	text               string
	reasoning, content string
	thought            bool
}{
	{"qwen3 thinks", qwen3Parser, stateOpen, "<think>\nHm.\n</think>\n\nHi.", "\nHm.\n", "\n\nHi.", true},
	{"qwen3 answers", qwen3Parser, stateOpen, "Hi there.", "", "Hi there.", false},
	{"qwen3 empty", qwen3Parser, stateOpen, "", "", "", false},
	{"qwen3 whitespace only", qwen3Parser, stateOpen, "\n\n", "", "\n\n", false},
	{"qwen3 truncated", qwen3Parser, stateOpen, "<think>abc", "abc", "", true},
	{"qwen3 truncated in the end marker", qwen3Parser, stateOpen, "<think>a</thi", "a</thi", "", true},
	{"qwen3 part of <think>", qwen3Parser, stateOpen, "<thin", "", "<thin", false},
	{"qwen3 almost <think>", qwen3Parser, stateOpen, "<thinking>x", "", "<thinking>x", false},
	{"qwen3 whitespace before <think>", qwen3Parser, stateOpen, " \n<think>a</think>b", "a", "b", true},
	{"qwen3 </think> without <think>", qwen3Parser, stateOpen, "a</think>b", "", "a</think>b", false},
	{"qwen3 empty thought", qwen3Parser, stateOpen, "<think></think>", "", "", true},
	{"qwen3 markers in the answer", qwen3Parser, stateOpen, "<think>a<think>b</think>c</think><think>d", "ab", "c</think><think>d", true},
	{"qwen3 '<' in the reasoning", qwen3Parser, stateOpen, "<think>1 < 2 </ 3</think>yes", "1 < 2 </ 3", "yes", true},
	{"qwen3 prompt opened", qwen3Parser, stateThinking, "a</think>\nb", "a", "\nb", true},
	{"qwen3 prompt closed", qwen3Parser, stateAnswer, "<think>a</think>b", "", "<think>a</think>b", false},
	{"deepseek_r1 thinks", deepseekParser, stateThinking, "Hm.\n</think>\n\nHi.", "Hm.\n", "\n\nHi.", true},
	{"deepseek_r1 writes <think>", deepseekParser, stateThinking, "<think>\nHm.</think>Hi.", "\nHm.", "Hi.", true},
	{"deepseek_r1 truncated", deepseekParser, stateThinking, "Hm, let", "Hm, let", "", true},
	{"deepseek_r1 stops after thinking", deepseekParser, stateThinking, "a</think>", "a", "", true},
	{"deepseek_r1 second </think>", deepseekParser, stateThinking, "a</think>b</think>c", "a", "b</think>c", true},
	{"deepseek_r1 prompt closed", deepseekParser, stateAnswer, "a</think>b", "", "a</think>b", false},
}

func TestReasoningSplit(t *testing.T) {
	for _, tc := range reasoningCases {
		t.Run(tc.name, func(t *testing.T) {
			r, c, thought := tc.p.split(tc.text, tc.start)
			if r != tc.reasoning || c != tc.content || thought != tc.thought {
				t.Fatalf("split(%q) = %q, %q, %v; want %q, %q, %v", tc.text, r, c, thought, tc.reasoning, tc.content, tc.thought)
			}
		})
	}
}

// Streamed, each text gives the same parts whatever its split into deltas:
// every split of texts up to 14 bytes, and of longer ones every split into
// up to three deltas and the split byte by byte (which cut each marker
// anywhere, and put a whole marker in one delta with text on both sides).
func TestReasoningSplitStream(t *testing.T) {
	for _, tc := range reasoningCases {
		t.Run(tc.name, func(t *testing.T) {
			n := 0
			for chunks := range splits(tc.text) {
				s := tc.p.newSplit(tc.start)
				var r, c strings.Builder
				for _, ch := range chunks {
					dr, dc := s.push(ch)
					r.WriteString(dr)
					c.WriteString(dc)
				}
				dr, dc := s.flush()
				r.WriteString(dr)
				c.WriteString(dc)
				if r.String() != tc.reasoning || c.String() != tc.content || s.thought != tc.thought {
					t.Fatalf("deltas %q: %q, %q, %v; want %q, %q, %v", chunks, r.String(), c.String(), s.thought,
						tc.reasoning, tc.content, tc.thought)
				}
				n++
			}
			if n == 0 {
				t.Fatal("no split")
			}
		})
	}
}

// splits yields splits of s into non-empty deltas (one empty delta for
// ""): all of them when s is short, else those into at most three deltas
// and the one byte by byte.
func splits(s string) func(yield func([]string) bool) {
	return func(yield func([]string) bool) {
		if len(s) <= 1 {
			yield([]string{s})
			return
		}
		if len(s) <= 14 {
			for mask := range 1 << (len(s) - 1) { // bit i: a cut after byte i
				var chunks []string
				from := 0
				for i := range len(s) - 1 {
					if mask&(1<<i) != 0 {
						chunks = append(chunks, s[from:i+1])
						from = i + 1
					}
				}
				if !yield(append(chunks, s[from:])) {
					return
				}
			}
			return
		}
		for i := 0; i < len(s); i++ {
			for j := i; j < len(s); j++ {
				var chunks []string
				for _, part := range []string{s[:i], s[i:j], s[j:]} {
					if part != "" {
						chunks = append(chunks, part)
					}
				}
				if !yield(chunks) {
					return
				}
			}
		}
		bytes := make([]string, len(s))
		for i := range s {
			bytes[i] = s[i : i+1]
		}
		yield(bytes)
	}
}

func TestPromptState(t *testing.T) {
	for _, tc := range []struct {
		p      *reasoningParser
		prompt string
		want   splitState
	}{
		{qwen3Parser, "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n", stateOpen},
		{qwen3Parser, "<|im_start|>assistant\n<think>\n\n</think>\n\n", stateAnswer}, // enable_thinking false
		{qwen3Parser, "<|im_start|>assistant\n<think>\n", stateThinking},             // Qwen3-Thinking
		{qwen3Parser, "<|im_start|>assistant\n<think>\nso far", stateThinking},       // a continued final message
		// An earlier turn's closed reasoning says nothing of this one.
		{qwen3Parser, "<|im_start|>assistant\n<think>\nr\n</think>\n\ncall<|im_end|>\n<|im_start|>assistant\n", stateOpen},
		{deepseekParser, "<｜User｜>Hi<｜Assistant｜>", stateThinking},
		{deepseekParser, "<｜User｜>Hi<｜Assistant｜><think>\n", stateThinking},
		{deepseekParser, "<｜Assistant｜><think>\n\n</think>\n\n", stateAnswer},
	} {
		if got := tc.p.promptState(tc.prompt); got != tc.want {
			t.Errorf("%s: promptState(%q) = %d, want %d", tc.p.name, tc.prompt, got, tc.want)
		}
	}
}

func TestReasoningTokens(t *testing.T) {
	p := &reasoningParser{endIDs: []int32{7, 8}}
	for _, tc := range []struct {
		ids     []int32
		thought bool
		want    int
	}{
		{[]int32{1, 2, 7, 8, 3}, true, 4},
		{[]int32{1, 7, 2, 7, 8}, true, 5},
		{[]int32{1, 2, 3}, true, 3}, // truncated while thinking
		{[]int32{7, 8, 3}, false, 0},
		{nil, true, 0},
	} {
		if got := p.reasoningTokens(tc.ids, tc.thought); got != tc.want {
			t.Errorf("reasoningTokens(%v, %v) = %d, want %d", tc.ids, tc.thought, got, tc.want)
		}
	}
}

// The parser needs the vocabulary's <think> and </think> tokens, and a
// known name.
func TestNewReasoningParser(t *testing.T) {
	tokens := []string{"<unk>", "<s>", "</s>", "<think>", "</think>", "▁a"}
	types := []tokenizer.TokenType{tokenizer.TypeUnknown, tokenizer.TypeControl, tokenizer.TypeControl,
		tokenizer.TypeUserDefined, tokenizer.TypeUserDefined, tokenizer.TypeNormal}
	tok, err := tokenizer.New(tokenizer.Config{Model: tokenizer.ModelSPM, Tokens: tokens, Types: types,
		Scores: make([]float32, len(tokens)), UNK: 0, BOS: 1, EOS: 2})
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range ReasoningParsers() {
		if name == harmonyReasoningParser {
			continue // harmony.go
		}
		p, err := newReasoningParser(name, tok)
		if err != nil || len(p.endIDs) != 1 || p.endIDs[0] != 4 || p.thinkFirst != (name == "deepseek_r1") {
			t.Errorf("%s: %+v, %v", name, p, err)
		}
	}
	if _, err := newReasoningParser("granite", tok); err == nil || err.Error() != `--reasoning-parser must be deepseek_r1 or openai_gptoss or qwen3, got "granite"` {
		t.Errorf("unknown name: %v", err)
	}
	tok, err = tokenizer.New(tokenizer.Config{Model: tokenizer.ModelSPM, Tokens: tokens[:3], Types: types[:3],
		Scores: make([]float32, 3), UNK: 0, BOS: 1, EOS: 2})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := newReasoningParser("qwen3", tok); err == nil || !strings.Contains(err.Error(), "no <think> and </think> tokens") {
		t.Errorf("a vocabulary without <think>: %v", err)
	}
}

// The tool-call parser reads the answer only: a call mentioned in the
// reasoning is no call, whole or streamed.
func TestReasoningBeforeToolCalls(t *testing.T) {
	text := "<think>I could write <tool_call>{\"name\": \"x\"}</tool_call>.</think>\n\nSure.\n" +
		`<tool_call>{"name": "get_weather", "arguments": {"city": "Paris"}}</tool_call>`
	wantReasoning := "I could write <tool_call>{\"name\": \"x\"}</tool_call>."
	newRun := func() *chatRun {
		return &chatRun{b: &backend{}, req: &chatRequest{}, tools: &toolPlan{mode: toolsAuto, parser: "hermes"},
			think: qwen3Parser, start: stateOpen}
	}
	m := newRun().message(engine.CompletionOutput{Text: text, FinishReason: "stop"})
	if m.ReasoningContent == nil || *m.ReasoningContent != wantReasoning || m.Content == nil || *m.Content != "Sure." ||
		len(m.ToolCalls) != 1 || m.ToolCalls[0].Function.Name != "get_weather" {
		t.Fatalf("message %s", jsonString(m))
	}
	for _, step := range []int{1, 3, 7, 1000} {
		c := newRun()
		var full engine.CompletionOutput
		var reasoning, content string
		var calls []toolCallDelta
		for i := 0; i < len(text); i += step {
			o := engine.CompletionOutput{Text: text[i:min(i+step, len(text))]}
			if i+step >= len(text) {
				o.FinishReason = "stop"
			}
			full.Text += o.Text
			full.FinishReason = o.FinishReason
			o2, f2, r := c.splitDelta(o, full)
			v := c.addReasoning(c.toolChunk(o2, f2), o2, r)
			if v == nil {
				continue
			}
			d := v.(chatChunk).Choices[0].Delta
			if d.ReasoningContent != nil {
				reasoning += *d.ReasoningContent
			}
			if d.Content != nil {
				content += *d.Content
			}
			calls = reassemble(calls, d.ToolCalls)
		}
		if reasoning != wantReasoning || strings.TrimSpace(content) != "Sure." || len(calls) != 1 || calls[0].Function.Name != "get_weather" {
			t.Errorf("deltas of %d bytes: reasoning %q, content %q, calls %+v", step, reasoning, content, calls)
		}
	}
}
