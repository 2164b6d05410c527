package server

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"pagoda/engine"
	"pagoda/tokenizer"
)

// promptInput is one prompt of a request: its token ids and the text it
// stands for (for echo).
type promptInput struct {
	ids  []int32
	text string
}

// parsePrompts decodes a completions prompt: a string, a list of strings, a
// list of token ids, or a list of lists of token ids. Strings are tokenized
// with special-token texts recognised, and BOS added when addSpecial and the
// vocabulary asks for it.
//
// Prompts with more than limit tokens are refused (400) without being
// tokenized to the end; so are empty prompts and more than MaxPrompts.
func parsePrompts(raw json.RawMessage, tok *tokenizer.Tokenizer, addSpecial bool, limit int) ([]promptInput, *apiError) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return nil, badRequest("prompt", "prompt is required")
	}
	var one string
	if json.Unmarshal(raw, &one) == nil {
		if one == "" {
			return nil, badRequest("prompt", "prompt must not be empty")
		}
		p, aerr := textPrompt(tok, one, addSpecial, limit)
		return []promptInput{p}, aerr
	}
	var texts []string
	if json.Unmarshal(raw, &texts) == nil && len(texts) > 0 {
		if aerr := checkPromptCount(len(texts)); aerr != nil {
			return nil, aerr
		}
		out := make([]promptInput, len(texts))
		for i, t := range texts {
			if t == "" {
				return nil, badRequest("prompt", "prompt[%d] must not be empty", i)
			}
			var aerr *apiError
			if out[i], aerr = textPrompt(tok, t, addSpecial, limit); aerr != nil {
				aerr.Message = fmt.Sprintf("prompt %d: %s", i, aerr.Message)
				return nil, aerr
			}
		}
		return out, nil
	}
	var ids []int32
	if json.Unmarshal(raw, &ids) == nil && len(ids) > 0 {
		return []promptInput{{ids: ids, text: tok.Decode(ids)}}, nil
	}
	var lists [][]int32
	if json.Unmarshal(raw, &lists) == nil && len(lists) > 0 {
		if aerr := checkPromptCount(len(lists)); aerr != nil {
			return nil, aerr
		}
		out := make([]promptInput, len(lists))
		for i, l := range lists {
			if len(l) == 0 {
				return nil, badRequest("prompt", "prompt[%d] must not be empty", i)
			}
			out[i] = promptInput{ids: l, text: tok.Decode(l)}
		}
		return out, nil
	}
	return nil, badRequest("prompt", "prompt must be a string, a non-empty list of strings, "+
		"a list of token ids, or a list of lists of token ids")
}

// MaxPrompts bounds the prompts of one completions request (a list of
// strings or of token lists).
const MaxPrompts = 256

func checkPromptCount(n int) *apiError {
	if n > MaxPrompts {
		return badRequest("prompt", "a request may have at most %d prompts, got %d", MaxPrompts, n)
	}
	return nil
}

// textPrompt tokenizes text, refusing it as soon as it is known to have
// more than limit tokens: the work and memory spent on an over-long prompt
// are bounded by limit, not by the text's size.
func textPrompt(tok *tokenizer.Tokenizer, text string, addSpecial bool, limit int) (promptInput, *apiError) {
	ids, ok := tok.EncodeLimit(text, addSpecial, true, limit)
	if !ok {
		return promptInput{}, promptTooLong(limit)
	}
	return promptInput{ids: ids, text: text}, nil
}

// promptTooLong is the 400 of a prompt with more tokens than the model length.
func promptTooLong(limit int) *apiError {
	return badRequest("prompt", "%s: the prompt has more than %d tokens, the model's maximum length",
		engine.ErrPromptTooLong, limit)
}

// chatRoles are the message roles accepted; the template decides how each
// renders.
var chatRoles = map[string]bool{"system": true, "developer": true, "user": true, "assistant": true, "tool": true}

// messages converts the request messages for the chat template. Content
// parts of type text are joined with newlines, as vLLM does.
func messages(in []chatMessage) ([]tokenizer.Message, *apiError) {
	if len(in) == 0 {
		return nil, badRequest("messages", "messages must contain at least one message")
	}
	out := make([]tokenizer.Message, len(in))
	for i, m := range in {
		if !chatRoles[m.Role] {
			return nil, badRequest("messages", "messages[%d].role must be one of system, developer, user, assistant, tool; got %q", i, m.Role)
		}
		text, err := messageText(m.Content)
		if err != nil {
			return nil, badRequest("messages", "messages[%d].content: %s", i, err.Message)
		}
		out[i] = tokenizer.Message{Role: m.Role, Content: text}
		if aerr := messageExtra(i, m, &out[i]); aerr != nil {
			return nil, aerr
		}
	}
	return out, nil
}

// messageExtra passes a turn's tool fields to the template: an assistant's
// tool_calls (arguments as the JSON value they encode, as vLLM passes them
// to Hugging Face templates), a tool result's tool_call_id, and the name.
func messageExtra(i int, m chatMessage, out *tokenizer.Message) *apiError {
	extra := map[string]any{}
	if m.Name != "" {
		extra["name"] = m.Name
	}
	if m.ToolCallID != "" {
		extra["tool_call_id"] = m.ToolCallID
	}
	if m.ReasoningContent != "" {
		extra["reasoning_content"], extra["thinking"] = m.ReasoningContent, m.ReasoningContent
	}
	if len(m.ToolCalls) > 0 {
		if m.Role != "assistant" {
			return badRequest("messages", "messages[%d]: only assistant messages have tool_calls", i)
		}
		calls := make([]any, len(m.ToolCalls))
		for j, c := range m.ToolCalls {
			var args any
			if err := json.Unmarshal([]byte(c.Function.Arguments), &args); err != nil {
				return badRequest("messages", "messages[%d].tool_calls[%d].function.arguments must be a JSON text: %v", i, j, err)
			}
			calls[j] = map[string]any{"id": c.ID, "type": "function",
				"function": map[string]any{"name": c.Function.Name, "arguments": args}}
		}
		extra["tool_calls"] = calls
	}
	if len(extra) > 0 {
		out.Extra = extra
	}
	return nil
}

// messageText decodes a message content: a string, null, or a list of
// {"type": "text", "text": ...} parts.
func messageText(raw json.RawMessage) (string, *apiError) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return "", nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, nil
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if err := json.Unmarshal(raw, &parts); err != nil {
		return "", badRequest("messages", "want a string or a list of content parts")
	}
	texts := make([]string, 0, len(parts))
	for _, p := range parts {
		if p.Type != "text" {
			return "", badRequest("messages", "content parts of type %q are not supported (only text)", p.Type)
		}
		texts = append(texts, p.Text)
	}
	return strings.Join(texts, "\n"), nil
}

// chatPrompt renders msgs with the template and tokenizes the text with
// special tokens parsed. BOS is prepended only when the vocabulary adds one
// and the template did not already emit it (most templates write
// bos_token themselves; SmolLM2's has none and add_bos_token false).
func (b *backend) chatPrompt(req *chatRequest) (promptInput, *apiError) {
	msgs, aerr := messages(req.Messages)
	if aerr != nil {
		return promptInput{}, aerr
	}
	if b.template == nil {
		return promptInput{}, badRequest("messages", "the model has no chat template; start the server with --chat-template")
	}
	addGen := req.AddGenerationPrompt == nil || *req.AddGenerationPrompt
	if req.ContinueFinalMessage {
		if addGen && req.AddGenerationPrompt != nil {
			return promptInput{}, badRequest("continue_final_message", "continue_final_message and add_generation_prompt cannot both be true")
		}
		if msgs[len(msgs)-1].Role != "assistant" {
			return promptInput{}, badRequest("continue_final_message", "continue_final_message needs a final assistant message")
		}
		addGen = false
	}
	vars, aerr := templateVars(req)
	if aerr != nil {
		return promptInput{}, aerr
	}
	switch {
	case len(req.Tools) == 0:
	case b.toolFallback != nil:
		msgs = b.toolFallback.apply(msgs, req.Messages, req.Tools)
	default:
		vars["tools"] = (&toolPlan{tools: req.Tools}).templateTools()
	}
	text, err := b.template.Render(msgs, tokenizer.ChatOptions{AddGenerationPrompt: addGen,
		BOS: b.bosText, EOS: b.eosText, Vars: vars})
	if err != nil {
		return promptInput{}, badRequest("messages", "%s", err.Error())
	}
	if req.ContinueFinalMessage {
		last := msgs[len(msgs)-1].Content
		if i := strings.LastIndex(text, last); i >= 0 && last != "" {
			text = text[:i+len(last)]
		}
	}
	ids, aerr := b.encodeChat(text, req.AddSpecialTokens)
	return promptInput{ids: ids, text: text}, aerr
}

// reasoningEfforts are the values of OpenAI's reasoning_effort.
var reasoningEfforts = []string{"none", "minimal", "low", "medium", "high", "xhigh"}

// templateVars are the chat template's variables besides the messages and
// tools: reasoning_effort (OpenAI's field, passed as vLLM passes it), then
// chat_template_kwargs over it.
func templateVars(req *chatRequest) (map[string]any, *apiError) {
	vars := map[string]any{}
	if e := req.ReasoningEffort; e != nil {
		if !slices.Contains(reasoningEfforts, *e) {
			return nil, badRequest("reasoning_effort", "reasoning_effort must be one of %s, got %q",
				strings.Join(reasoningEfforts, ", "), *e)
		}
		vars["reasoning_effort"] = *e
	}
	for k, v := range req.ChatTemplateKwargs {
		if tokenizer.ReservedVar(k) {
			return nil, badRequest("chat_template_kwargs", "chat_template_kwargs.%s is set by the server and cannot be overridden", k)
		}
		vars[k] = v
	}
	return vars, nil
}

// encodeChat tokenizes rendered chat text, refusing it past the model length.
func (b *backend) encodeChat(text string, addSpecial bool) ([]int32, *apiError) {
	limit := b.e.Config().MaxModelLen
	ids, ok := b.tok.EncodeLimit(text, addSpecial, true, limit)
	if !ok {
		return nil, promptTooLong(limit)
	}
	if !addSpecial && b.tok.AddBOS() && (len(ids) == 0 || ids[0] != b.tok.BOS()) {
		ids = append([]int32{b.tok.BOS()}, ids...)
	}
	return ids, nil
}
