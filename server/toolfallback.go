package server

import (
	"encoding/json"
	"fmt"
	"strings"

	"pagoda/tokenizer"
)

// toolFallback writes a request's tools into the prompt when the model's
// chat template ignores them (SmolLM2's, Gemma's), as llama.cpp's server
// does for templates without tool support, in the format of the parser
// that reads the output (toolFormats), so that tool_choice auto works with
// any model:
//
//	tools              the format's instructions, listing each tool as tojson writes it, at the end
//	                   of the first system (or developer) message, or as a new first system message
//	                   (after the template's default system prompt, if it has one)
//	assistant calls    the calls written into the turn's content as the format writes them
//	                   (hermes: <tool_call>{"name": …, "arguments": …}</tool_call>)
//	tool results       consecutive results joined into one user turn (hermes: <tool_response> blocks)
//
// The rewritten conversation is plain text turns, so the template renders
// it whatever it knows of tools. Whether a template ignores tools is found
// once per model by templateIgnoresTools.
type toolFallback struct {
	format toolFormat
	tojson *tokenizer.Template // renders {{ v | tojson }}: Python's json.dumps, as templates write JSON
	system string              // the template's default system prompt (defaultSystem)
}

// newToolFallback returns the fallback of a parser's format for template.
func newToolFallback(parser string, template *tokenizer.Template, opts tokenizer.ChatOptions) (*toolFallback, error) {
	t, err := tokenizer.CompileTemplate("{{ v | tojson }}")
	if err != nil {
		return nil, err
	}
	return &toolFallback{format: toolFormats[parser], tojson: t, system: defaultSystem(template, opts)}, nil
}

// defaultSystem is the system prompt template writes when a conversation
// has none (SmolLM2's "You are a helpful AI assistant named SmolLM, …"),
// or "": a user turn rendered alone must read as the same turn after a
// system message whose text is replaced by the default, the same default
// whatever the user wrote. A new system message that carries the tools
// starts with it, so that the model keeps the persona it was tuned with
// (as Qwen 2.5's template keeps its default system line beside the tools).
func defaultSystem(t *tokenizer.Template, opts tokenizer.ChatOptions) string {
	first, ok1 := systemIn(t, opts, "Hello")
	second, ok2 := systemIn(t, opts, "Goodbye")
	if !ok1 || !ok2 || first != second {
		return ""
	}
	return first
}

// systemIn is the text in place of a system message when template renders
// one user turn alone.
func systemIn(t *tokenizer.Template, opts tokenizer.ChatOptions, text string) (string, bool) {
	const mark = "\x00pagoda-system\x00"
	user := tokenizer.Message{Role: "user", Content: text}
	alone, err1 := t.Render([]tokenizer.Message{user}, opts)
	withSystem, err2 := t.Render([]tokenizer.Message{{Role: "system", Content: mark}, user}, opts)
	before, after, ok := strings.Cut(withSystem, mark)
	if err1 != nil || err2 != nil || !ok || len(alone) < len(before)+len(after) ||
		!strings.HasPrefix(alone, before) || !strings.HasSuffix(alone, after) {
		return "", false
	}
	return alone[len(before) : len(alone)-len(after)], true
}

// templateIgnoresTools reports whether template renders a conversation
// the same with and without tools (or fails with them only): then the
// model never sees the tools unless toolFallback writes them.
func templateIgnoresTools(t *tokenizer.Template, opts tokenizer.ChatOptions) bool {
	msgs := []tokenizer.Message{{Role: "user", Content: "What is the weather in Paris?"}}
	plain, err := t.Render(msgs, opts)
	if err != nil {
		return false // the template cannot render a plain turn: leave it as it is
	}
	probe, _ := tokenizer.DecodeJSON([]byte(`[{"type": "function", "function": {"name": "get_weather",
		"description": "Get the weather in a city", "parameters": {"type": "object",
		"properties": {"city": {"type": "string"}}, "required": ["city"]}}}]`))
	opts.Vars = map[string]any{"tools": probe}
	withTools, err := t.Render(msgs, opts)
	return err != nil || withTools == plain
}

// json writes a JSON text as tojson does (key order kept); raw must be
// valid JSON.
func (f *toolFallback) json(raw []byte) string {
	v, err := tokenizer.DecodeJSON(raw)
	if err != nil {
		return string(raw)
	}
	out, err := f.tojson.Render(nil, tokenizer.ChatOptions{Vars: map[string]any{"v": v}})
	if err != nil {
		return string(raw)
	}
	return out
}

// apply rewrites msgs (converted from src, index for index) with tools
// written in as described on toolFallback.
func (f *toolFallback) apply(msgs []tokenizer.Message, src []chatMessage, tools []toolDef) []tokenizer.Message {
	out := make([]tokenizer.Message, 0, len(msgs)+1)
	for i, m := range msgs {
		switch {
		case m.Role == "assistant" && len(src[i].ToolCalls) > 0:
			calls := make([]string, len(src[i].ToolCalls))
			for j, c := range src[i].ToolCalls {
				name, _ := json.Marshal(c.Function.Name)
				calls[j] = f.format.call(string(name), f.json([]byte(c.Function.Arguments)))
			}
			text := strings.Join(calls, f.format.callSep)
			if m.Content != "" {
				text = m.Content + "\n" + text
			}
			out = append(out, tokenizer.Message{Role: "assistant", Content: text})
		case m.Role == "tool":
			result := f.format.result(m.Content)
			if i > 0 && msgs[i-1].Role == "tool" {
				last := &out[len(out)-1]
				last.Content += f.format.resultSep + result
			} else {
				out = append(out, tokenizer.Message{Role: "user", Content: result})
			}
		default:
			out = append(out, m)
		}
	}
	listed := make([]string, len(tools))
	for i := range tools {
		raw, _ := json.Marshal(tools[i])
		listed[i] = f.json(raw)
	}
	instr := f.format.instructions(listed)
	if out[0].Role == "system" || out[0].Role == "developer" {
		if out[0].Content != "" {
			instr = out[0].Content + "\n\n" + instr
		}
		out[0].Content = instr
		return out
	}
	if f.system != "" {
		instr = f.system + "\n\n" + instr
	}
	return append([]tokenizer.Message{{Role: "system", Content: instr}}, out...)
}

// planToolCalling sets the parser of tool_choice auto (--tool-call-parser,
// else chosen from the model's chat template and architecture) and, when
// the chat template ignores tools, the fallback that writes them into the
// prompt; it logs both at startup.
func (s *Server) planToolCalling(b *backend, template, arch string) error {
	parser, why := s.opts.ToolCallParser, "--tool-call-parser"
	if parser == "" {
		parser, why = chooseParser(template, arch)
	} else if _, ok := toolFormats[parser]; !ok {
		return fmt.Errorf("--tool-call-parser %q is not one of %s", parser, strings.Join(ToolCallParsers(), ", "))
	}
	b.toolParser = parser
	msg := fmt.Sprintf("INFO tool calling: tool_choice auto reads calls with the %s parser (%s)", parser, why)
	opts := tokenizer.ChatOptions{AddGenerationPrompt: true, BOS: b.bosText, EOS: b.eosText}
	if b.template != nil && templateIgnoresTools(b.template, opts) {
		fb, err := newToolFallback(parser, b.template, opts)
		if err != nil {
			return err
		}
		b.toolFallback = fb
		msg += "; the chat template ignores tools, so they go in the system prompt in the " + parser + " format"
	}
	s.opts.Logger.Print(msg)
	return nil
}
