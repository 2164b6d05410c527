package server

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"strings"
)

// Tool-call parsers: they read calls out of a finished output, by vLLM's
// --tool-call-parser names (toolFormats). A text they cannot read as calls
// is content.

// parseHermes reads Hermes-style calls: <tool_call>{"name": …, "arguments": {…}}</tool_call>,
// one or more; the text before the first call is the content.
func parseHermes(text string) (string, []toolCallFunc) {
	const open, end = "<tool_call>", "</tool_call>"
	i := strings.Index(text, open)
	if i < 0 {
		return text, nil
	}
	content := strings.TrimSpace(text[:i])
	var calls []toolCallFunc
	for rest := text[i:]; ; {
		j := strings.Index(rest, open)
		if j < 0 {
			break
		}
		rest = rest[j+len(open):]
		body := rest
		if k := strings.Index(rest, end); k >= 0 {
			body, rest = rest[:k], rest[k+len(end):]
		} else {
			rest = ""
		}
		c, ok := namedCall([]byte(strings.TrimSpace(body)), "arguments")
		if !ok {
			return text, nil
		}
		calls = append(calls, c)
	}
	return content, calls
}

// parseLlama3JSON reads Llama 3's JSON calls: an output that is (after an
// optional <|python_tag|>) one JSON object {"name": …, "parameters": {…}}
// or several separated by ";".
func parseLlama3JSON(text string) (string, []toolCallFunc) {
	t := strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(text), "<|python_tag|>"))
	if !strings.HasPrefix(t, "{") {
		return text, nil
	}
	dec := json.NewDecoder(strings.NewReader(t))
	var calls []toolCallFunc
	for {
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return text, nil
		}
		c, ok := namedCall(raw, "parameters")
		if !ok {
			return text, nil
		}
		calls = append(calls, c)
		rest := strings.TrimSpace(t[dec.InputOffset():])
		if rest == "" {
			return "", calls
		}
		if !strings.HasPrefix(rest, ";") {
			return text, nil
		}
		t = strings.TrimSpace(rest[1:])
		dec = json.NewDecoder(strings.NewReader(t))
	}
}

// parseCallArray reads the output of required tool choice: a JSON array of
// {"name": …, "parameters": {…}}.
func parseCallArray(text string) ([]toolCallFunc, bool) {
	var items []json.RawMessage
	if err := json.Unmarshal([]byte(text), &items); err != nil || len(items) == 0 {
		return nil, false
	}
	calls := make([]toolCallFunc, 0, len(items))
	for _, it := range items {
		c, ok := namedCall(it, "parameters")
		if !ok {
			return nil, false
		}
		calls = append(calls, c)
	}
	return calls, true
}

// namedCall decodes {"name": N, argsKey: {…}} (also accepting the other
// of "arguments"/"parameters"); the arguments become compact JSON text.
func namedCall(raw []byte, argsKey string) (toolCallFunc, bool) {
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) != nil {
		return toolCallFunc{}, false
	}
	var name string
	if json.Unmarshal(m["name"], &name) != nil || name == "" {
		return toolCallFunc{}, false
	}
	args, ok := m[argsKey]
	if !ok {
		args, ok = m[map[string]string{"arguments": "parameters", "parameters": "arguments"}[argsKey]]
	}
	if !ok {
		args = json.RawMessage("{}")
	}
	var buf bytes.Buffer
	if json.Compact(&buf, args) != nil {
		return toolCallFunc{}, false
	}
	return toolCallFunc{Name: name, Arguments: buf.String()}, true
}

// newToolCallID is a call id in vLLM's form: chatcmpl-tool- and 32 hex digits.
func newToolCallID() string {
	var b [16]byte
	rand.Read(b[:])
	return "chatcmpl-tool-" + hex.EncodeToString(b[:])
}

// calls reads the tool calls of a finished output under the plan, and the
// content left beside them. ok is false when the output holds no call.
func (p *toolPlan) calls(text string) (content string, calls []toolCall, ok bool) {
	var fs []toolCallFunc
	switch p.mode {
	case toolsNamed:
		// The arguments as generated (OpenAI's and vLLM's), so that a
		// stream's argument deltas add up to the same text.
		if !json.Valid([]byte(text)) {
			return text, nil, false
		}
		fs = []toolCallFunc{{Name: p.name, Arguments: text}}
	case toolsRequired:
		var parsed bool
		if fs, parsed = parseCallArray(text); !parsed {
			return text, nil, false
		}
	case toolsAuto:
		content, fs = toolFormats[p.parser].parse(text)
		if len(fs) == 0 {
			return text, nil, false
		}
	default:
		return text, nil, false
	}
	for _, f := range fs {
		calls = append(calls, toolCall{ID: newToolCallID(), Type: "function", Function: f})
	}
	return content, calls, true
}
