package e2e

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
)

// A small client of pagoda's chat API for the end-to-end tests that check
// responses field by field: JSON requests, typed responses, and streams
// read as their sequence of reasoning, content and tool-call deltas.

// chatClient sends a test's requests to the server at base, serving model.
type chatClient struct {
	t           *testing.T
	base, model string
}

// with is c reporting to t.
func (c *chatClient) with(t *testing.T) *chatClient {
	return &chatClient{t: t, base: c.base, model: c.model}
}

// post sends body as JSON and decodes a 200 answer into out.
func (c *chatClient) post(path string, body map[string]any, out any) {
	c.t.Helper()
	resp := c.send(path, body)
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if err := json.Unmarshal(b, out); err != nil {
		c.t.Fatalf("POST %s: %v in %s", path, err, b)
	}
}

// send posts body as JSON (naming the model, except to /tokenize) and
// returns the response, which must be 200.
func (c *chatClient) send(path string, body map[string]any) *http.Response {
	c.t.Helper()
	if path != "/tokenize" {
		body["model"] = c.model
	}
	b, _ := json.Marshal(body)
	resp, err := http.Post(c.base+path, "application/json", bytes.NewReader(b))
	if err != nil {
		c.t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		c.t.Fatalf("POST %s %s: %d %s", path, b, resp.StatusCode, msg)
	}
	return resp
}

type tokenized struct {
	Tokens    []int32  `json:"tokens"`
	TokenStrs []string `json:"token_strs"`
}

// tokenize is POST /tokenize with the token strings.
func (c *chatClient) tokenize(body map[string]any) tokenized {
	c.t.Helper()
	body["return_token_strs"] = true
	var out tokenized
	c.post("/tokenize", body, &out)
	return out
}

// single returns the id of text, which must be one token (want, unless
// negative).
func (c *chatClient) single(text string, want int) int {
	c.t.Helper()
	tk := c.tokenize(map[string]any{"prompt": text, "add_special_tokens": false})
	if len(tk.Tokens) != 1 || (want >= 0 && int(tk.Tokens[0]) != want) {
		c.t.Fatalf("%q tokenizes to %v, want one token %d", text, tk.Tokens, want)
	}
	return int(tk.Tokens[0])
}

type toolCallOut struct {
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

type chatUsage struct {
	CompletionTokens int `json:"completion_tokens"`
	Details          *struct {
		ReasoningTokens int `json:"reasoning_tokens"`
	} `json:"completion_tokens_details"`
}

func (u chatUsage) reasoningTokens() int {
	if u.Details == nil {
		return -1
	}
	return u.Details.ReasoningTokens
}

type chatMessageOut struct {
	Content          *string       `json:"content"`
	ReasoningContent *string       `json:"reasoning_content"`
	ToolCalls        []toolCallOut `json:"tool_calls"`
}

// String is the message as JSON, for failure messages.
func (m chatMessageOut) String() string {
	b, _ := json.Marshal(m)
	return string(b)
}

type chatChoiceOut struct {
	Message  chatMessageOut `json:"message"`
	Logprobs *struct {
		Content []struct {
			Token string `json:"token"`
		} `json:"content"`
	} `json:"logprobs"`
	FinishReason string `json:"finish_reason"`
}

// String is the choice as JSON, for failure messages.
func (ch chatChoiceOut) String() string {
	b, _ := json.Marshal(ch)
	return string(b)
}

// tokens are the generated tokens' texts (the request asked for logprobs).
func (ch chatChoiceOut) tokens() []string {
	var out []string
	if ch.Logprobs != nil {
		for _, tk := range ch.Logprobs.Content {
			out = append(out, tk.Token)
		}
	}
	return out
}

type chatOut struct {
	Choices []chatChoiceOut `json:"choices"`
	Usage   chatUsage       `json:"usage"`
}

// chat is a chat completion with one choice.
func (c *chatClient) chat(body map[string]any) chatOut {
	c.t.Helper()
	var out chatOut
	c.post("/v1/chat/completions", body, &out)
	if len(out.Choices) != 1 {
		c.t.Fatalf("%d choices", len(out.Choices))
	}
	return out
}

// streamEvent is one non-empty part of a streamed delta: reasoning, content or
// tool (a tool-call delta).
type streamEvent struct {
	kind, text string
	call       toolCallDelta
}

type toolCallDelta struct {
	Index int `json:"index"`
	toolCallOut
}

// streamEvents are a stream's deltas in order, its finish reason and usage.
type streamEvents struct {
	seq    []streamEvent
	finish string
	usage  *chatUsage
}

// stream sends a streamed chat completion and reads its events to [DONE].
func (c *chatClient) stream(body map[string]any) streamEvents {
	c.t.Helper()
	body["stream"] = true
	resp := c.send("/v1/chat/completions", body)
	defer resp.Body.Close()
	var ev streamEvents
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		if data == "[DONE]" {
			return ev
		}
		var chunk struct {
			Choices []struct {
				Delta struct {
					Content          *string         `json:"content"`
					ReasoningContent *string         `json:"reasoning_content"`
					ToolCalls        []toolCallDelta `json:"tool_calls"`
				} `json:"delta"`
				FinishReason *string `json:"finish_reason"`
			} `json:"choices"`
			Usage *chatUsage `json:"usage"`
		}
		if err := json.Unmarshal([]byte(data), &chunk); err != nil {
			c.t.Fatalf("chunk %s: %v", data, err)
		}
		if chunk.Usage != nil {
			ev.usage = chunk.Usage
		}
		for _, ch := range chunk.Choices {
			d := ch.Delta
			if d.ReasoningContent != nil && *d.ReasoningContent != "" {
				ev.seq = append(ev.seq, streamEvent{kind: "reasoning", text: *d.ReasoningContent})
			}
			if d.Content != nil && *d.Content != "" {
				ev.seq = append(ev.seq, streamEvent{kind: "content", text: *d.Content})
			}
			for _, tc := range d.ToolCalls {
				ev.seq = append(ev.seq, streamEvent{kind: "tool", call: tc})
			}
			if ch.FinishReason != nil {
				ev.finish = *ch.FinishReason
			}
		}
	}
	c.t.Fatalf("the stream ended without [DONE] (%v)", sc.Err())
	return ev
}

// String lists the events, for failure messages.
func (ev streamEvents) String() string {
	var b strings.Builder
	for _, e := range ev.seq {
		if e.kind == "tool" {
			fmt.Fprintf(&b, "[tool %d %s %q] ", e.call.Index, e.call.Function.Name, e.call.Function.Arguments)
		} else {
			fmt.Fprintf(&b, "[%s %q] ", e.kind, e.text)
		}
	}
	return b.String() + "finish " + ev.finish
}

// kinds are the kinds of the events, runs of one kind counted once.
func (ev streamEvents) kinds() []string {
	var out []string
	for _, e := range ev.seq {
		if len(out) == 0 || out[len(out)-1] != e.kind {
			out = append(out, e.kind)
		}
	}
	return out
}

func (ev streamEvents) count(kind string) int {
	n := 0
	for _, e := range ev.seq {
		if e.kind == kind {
			n++
		}
	}
	return n
}

func (ev streamEvents) text(kind string) string {
	var b strings.Builder
	for _, e := range ev.seq {
		if e.kind == kind {
			b.WriteString(e.text)
		}
	}
	return b.String()
}

// calls assembles the streamed tool calls: the first delta of each index
// brings its id, type and name, every delta a piece of the arguments.
func (ev streamEvents) calls() []toolCallOut {
	var out []toolCallOut
	for _, e := range ev.seq {
		if e.kind != "tool" {
			continue
		}
		if e.call.Index == len(out) {
			out = append(out, e.call.toolCallOut)
			continue
		}
		if e.call.Index != len(out)-1 {
			return nil
		}
		out[e.call.Index].Function.Arguments += e.call.Function.Arguments
	}
	return out
}
