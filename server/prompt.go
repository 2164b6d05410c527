package server

import (
	"bytes"
	"encoding/json"
	"strings"

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
func parsePrompts(raw json.RawMessage, tok *tokenizer.Tokenizer, addSpecial bool) ([]promptInput, *apiError) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return nil, badRequest("prompt", "prompt is required")
	}
	var one string
	if json.Unmarshal(raw, &one) == nil {
		return []promptInput{textPrompt(tok, one, addSpecial)}, nil
	}
	var texts []string
	if json.Unmarshal(raw, &texts) == nil && len(texts) > 0 {
		out := make([]promptInput, len(texts))
		for i, t := range texts {
			out[i] = textPrompt(tok, t, addSpecial)
		}
		return out, nil
	}
	var ids []int32
	if json.Unmarshal(raw, &ids) == nil && len(ids) > 0 {
		return []promptInput{{ids: ids, text: tok.Decode(ids)}}, nil
	}
	var lists [][]int32
	if json.Unmarshal(raw, &lists) == nil && len(lists) > 0 {
		out := make([]promptInput, len(lists))
		for i, l := range lists {
			out[i] = promptInput{ids: l, text: tok.Decode(l)}
		}
		return out, nil
	}
	return nil, badRequest("prompt", "prompt must be a string, a non-empty list of strings, "+
		"a list of token ids, or a list of lists of token ids")
}

func textPrompt(tok *tokenizer.Tokenizer, text string, addSpecial bool) promptInput {
	return promptInput{ids: tok.Encode(text, addSpecial, true), text: text}
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
	}
	return out, nil
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
	text, err := b.template.Render(msgs, tokenizer.ChatOptions{AddGenerationPrompt: addGen,
		BOS: b.bosText, EOS: b.eosText, Vars: req.ChatTemplateKwargs})
	if err != nil {
		return promptInput{}, badRequest("messages", "%s", err.Error())
	}
	if req.ContinueFinalMessage {
		last := msgs[len(msgs)-1].Content
		if i := strings.LastIndex(text, last); i >= 0 && last != "" {
			text = text[:i+len(last)]
		}
	}
	return promptInput{ids: b.encodeChat(text, req.AddSpecialTokens), text: text}, nil
}

// encodeChat tokenizes rendered chat text.
func (b *backend) encodeChat(text string, addSpecial bool) []int32 {
	ids := b.tok.Encode(text, addSpecial, true)
	if !addSpecial && b.tok.AddBOS() && (len(ids) == 0 || ids[0] != b.tok.BOS()) {
		ids = append([]int32{b.tok.BOS()}, ids...)
	}
	return ids
}
