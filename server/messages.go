package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
)

// Anthropic's Messages API (POST /v1/messages, /v1/messages/count_tokens)
// on the chat-completions machinery: a request becomes a chatRequest (system
// a system message, text blocks the content, tool_use blocks an assistant
// turn's tool_calls, tool_result blocks tool messages, tools and
// tool_choice chat's, output_config.format response_format), is answered by
// a chatRun, and its output becomes content blocks: thinking (when a
// reasoning parser runs), text, tool_use. Streamed, the chat chunks become
// Anthropic's events (messages_stream.go). Errors use Anthropic's shape.

// messagesFields are what /v1/messages and count_tokens share.
type messagesFields struct {
	Model        string                 `json:"model"`
	Messages     []anthropicMessage     `json:"messages"`
	System       json.RawMessage        `json:"system"`
	Tools        []anthropicTool        `json:"tools"`
	ToolChoice   *anthropicToolChoice   `json:"tool_choice"`
	Thinking     *anthropicThinking     `json:"thinking"`
	OutputConfig *anthropicOutputConfig `json:"output_config"`
	CacheControl json.RawMessage        `json:"cache_control"`
	Metadata     *struct {
		UserID *string `json:"user_id"`
	} `json:"metadata"`
}

func (f *messagesFields) modelName() string { return f.Model }

// messagesRequest is POST /v1/messages.
type messagesRequest struct {
	messagesFields
	MaxTokens     *int     `json:"max_tokens"`
	StopSequences []string `json:"stop_sequences"`
	Stream        bool     `json:"stream"`
	Temperature   *float64 `json:"temperature"`
	TopP          *float64 `json:"top_p"`
	TopK          *int     `json:"top_k"`

	vllmSampling
}

// vllmSampling are vLLM's extra sampling parameters, which the Messages and
// Responses endpoints take as chat completions does.
type vllmSampling struct {
	MinP              *float64 `json:"min_p"`
	RepetitionPenalty *float64 `json:"repetition_penalty"`
	Seed              *int64   `json:"seed"`
	Priority          int      `json:"priority"`
	MinTokens         *int     `json:"min_tokens"`
}

type anthropicMessage struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

// anthropicBlock is one content block of a request, decoded loosely.
type anthropicBlock struct {
	Type      string          `json:"type"`
	Text      string          `json:"text"`
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Input     json.RawMessage `json:"input"`
	ToolUseID string          `json:"tool_use_id"`
	Content   json.RawMessage `json:"content"`
	IsError   bool            `json:"is_error"`
}

type anthropicTool struct {
	Type        *string         `json:"type"`
	Name        string          `json:"name"`
	Description string          `json:"description"`
	InputSchema json.RawMessage `json:"input_schema"`
	Strict      *bool           `json:"strict"`
}

type anthropicToolChoice struct {
	Type                   string `json:"type"`
	Name                   string `json:"name"`
	DisableParallelToolUse *bool  `json:"disable_parallel_tool_use"`
}

type anthropicThinking struct {
	Type         string  `json:"type"`
	BudgetTokens *int    `json:"budget_tokens"`
	Display      *string `json:"display"`
}

type anthropicOutputConfig struct {
	Effort *string `json:"effort"`
	Format *struct {
		Type   string          `json:"type"`
		Schema json.RawMessage `json:"schema"`
	} `json:"format"`
}

// The response: a message of content blocks.
type anthropicResponse struct {
	ID           string         `json:"id"`
	Type         string         `json:"type"`
	Role         string         `json:"role"`
	Model        string         `json:"model"`
	Content      []any          `json:"content"`
	StopReason   *string        `json:"stop_reason"`
	StopSequence *string        `json:"stop_sequence"`
	Usage        anthropicUsage `json:"usage"`
}

type anthropicUsage struct {
	InputTokens              int `json:"input_tokens"`
	OutputTokens             int `json:"output_tokens"`
	CacheCreationInputTokens int `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     int `json:"cache_read_input_tokens"`
}

type textBlock struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

type thinkingBlock struct {
	Type      string `json:"type"`
	Thinking  string `json:"thinking"`
	Signature string `json:"signature"`
}

type toolUseBlock struct {
	Type  string          `json:"type"`
	ID    string          `json:"id"`
	Name  string          `json:"name"`
	Input json.RawMessage `json:"input"`
}

// messagesRun is one /v1/messages request being answered.
type messagesRun struct {
	chat    *chatRun
	id      string
	stops   []string
	promptN int
}

// messages serves POST /v1/messages.
func (b *backend) messages(w http.ResponseWriter, r *http.Request) error {
	var req messagesRequest
	if err := b.decodeRequest(w, r, &req); err != nil {
		return err
	}
	if req.MaxTokens == nil {
		return badRequest("max_tokens", "max_tokens: field required")
	}
	creq, aerr := messagesChat(&req.messagesFields)
	if aerr != nil {
		return aerr
	}
	f := &creq.samplingFields
	f.MaxTokens, f.Stop, f.Stream, f.Temperature, f.TopP, f.TopK = req.MaxTokens, req.StopSequences, req.Stream, req.Temperature, req.TopP, req.TopK
	f.MinP, f.RepetitionPenalty, f.Seed, f.Priority, f.MinTokens = req.MinP, req.RepetitionPenalty, req.Seed, req.Priority, req.MinTokens
	f.StreamOptions = &streamOptions{IncludeUsage: true}
	id := "msg_" + baseID(r)
	c, prompt, p, aerr := b.planChat(creq, id)
	if aerr != nil {
		return messagesParam(aerr)
	}
	run := &messagesRun{chat: c, id: id, stops: req.StopSequences, promptN: len(prompt.ids)}
	return b.answer(w, r, id, run, []promptInput{prompt}, p, f)
}

// countTokens serves POST /v1/messages/count_tokens: the prompt's tokens,
// tools and system included, as /v1/messages would render it.
func (b *backend) countTokens(w http.ResponseWriter, r *http.Request) error {
	var req messagesFields
	if err := b.decodeRequest(w, r, &req); err != nil {
		return err
	}
	creq, aerr := messagesChat(&req)
	if aerr != nil {
		return aerr
	}
	if _, aerr := planTools(creq, b.toolParser); aerr != nil {
		return messagesParam(aerr)
	}
	prompt, aerr := b.chatPrompt(creq)
	if aerr != nil {
		return messagesParam(aerr)
	}
	writeJSON(w, http.StatusOK, map[string]int{"input_tokens": len(prompt.ids)})
	return nil
}

// messagesParam renames the chat fields a chat error names to Anthropic's.
func messagesParam(aerr *apiError) *apiError {
	switch {
	case aerr.Param == "stop":
		aerr.Param = "stop_sequences"
		aerr.Message = strings.ReplaceAll(aerr.Message, "stop strings", "stop_sequences")
	case aerr.Param == "prompt":
		aerr.Param = "messages"
	case strings.HasPrefix(aerr.Param, "response_format"):
		aerr.Param = "output_config.format"
		aerr.Message = strings.ReplaceAll(aerr.Message, "response_format.json_schema.schema", "output_config.format.schema")
	}
	return aerr
}

// messagesChat converts the shared fields into a chat request.
func messagesChat(f *messagesFields) (*chatRequest, *apiError) {
	creq := &chatRequest{}
	creq.Model = f.Model
	if present(f.System) {
		text, aerr := anthropicText(f.System, "system")
		if aerr != nil {
			return nil, aerr
		}
		creq.Messages = append(creq.Messages, chatMessage{Role: "system", Content: jsonText(text)})
	}
	if len(f.Messages) == 0 {
		return nil, badRequest("messages", "messages: at least one message is required")
	}
	for i, m := range f.Messages {
		msgs, aerr := anthropicTurn(i, m)
		if aerr != nil {
			return nil, aerr
		}
		creq.Messages = append(creq.Messages, msgs...)
	}
	for i, t := range f.Tools {
		if t.Type != nil && *t.Type != "custom" {
			return nil, badRequest("tools", "tools.%d.type %q is not supported: this server runs client tools only (name, description, input_schema)", i, *t.Type)
		}
		creq.Tools = append(creq.Tools, toolDef{Type: "function", Function: toolFunction{Name: t.Name,
			Description: t.Description, Parameters: t.InputSchema, Strict: t.Strict}})
	}
	if tc := f.ToolChoice; tc != nil {
		var choice any
		switch tc.Type {
		case "auto":
			choice = toolsAuto
		case "any":
			choice = toolsRequired
		case "none":
			choice = toolsNone
		case "tool":
			if tc.Name == "" {
				return nil, badRequest("tool_choice", "tool_choice.name: field required for type tool")
			}
			choice = map[string]any{"type": "function", "function": map[string]string{"name": tc.Name}}
		default:
			return nil, badRequest("tool_choice", "tool_choice.type must be auto, any, tool or none, got %q", tc.Type)
		}
		creq.ToolChoice, _ = json.Marshal(choice)
		if tc.DisableParallelToolUse != nil && *tc.DisableParallelToolUse {
			creq.ParallelToolCalls = ptr(false)
		}
	}
	if th := f.Thinking; th != nil {
		switch th.Type {
		case "enabled":
			if th.BudgetTokens == nil || *th.BudgetTokens < 1 {
				return nil, badRequest("thinking", "thinking.budget_tokens: a positive number is required with type enabled")
			}
			creq.ChatTemplateKwargs = map[string]any{"enable_thinking": true}
			creq.ThinkingTokenBudget = th.BudgetTokens
		case "disabled":
			creq.ChatTemplateKwargs = map[string]any{"enable_thinking": false}
		case "adaptive":
		default:
			return nil, badRequest("thinking", "thinking.type must be enabled, disabled or adaptive, got %q", th.Type)
		}
	}
	if oc := f.OutputConfig; oc != nil {
		if e := oc.Effort; e != nil {
			effort := *e
			if effort == "max" {
				effort = "xhigh"
			}
			creq.ReasoningEffort = &effort
		}
		if fm := oc.Format; fm != nil {
			if fm.Type != "json_schema" || !present(fm.Schema) {
				return nil, badRequest("output_config.format", "output_config.format must be {\"type\": \"json_schema\", \"schema\": {…}}")
			}
			creq.ResponseFormat = &responseFormat{Type: "json_schema", JSONSchema: &jsonSchemaSpec{Name: "output",
				Schema: fm.Schema, Strict: ptr(true)}}
		}
	}
	return creq, nil
}

// anthropicTurn converts one message: a user turn's tool_result blocks
// become tool messages (first, as Anthropic places them), its text a user
// message; an assistant turn's text and tool_use blocks one assistant
// message with tool_calls. Thinking blocks of earlier turns are left out
// (chat templates drop earlier turns' reasoning).
func anthropicTurn(i int, m anthropicMessage) ([]chatMessage, *apiError) {
	param := fmt.Sprintf("messages.%d", i)
	if m.Role != "user" && m.Role != "assistant" {
		return nil, badRequest("messages", "%s.role must be user or assistant, got %q", param, m.Role)
	}
	var s string
	if json.Unmarshal(m.Content, &s) == nil {
		return []chatMessage{{Role: m.Role, Content: jsonText(s)}}, nil
	}
	var blocks []anthropicBlock
	if err := json.Unmarshal(m.Content, &blocks); err != nil {
		return nil, badRequest("messages", "%s.content must be a string or a list of content blocks", param)
	}
	var out []chatMessage
	var texts []string
	var calls []toolCall
	for j, bl := range blocks {
		bp := fmt.Sprintf("%s.content.%d", param, j)
		switch {
		case bl.Type == "text":
			texts = append(texts, bl.Text)
		case bl.Type == "tool_use" && m.Role == "assistant":
			if bl.ID == "" || bl.Name == "" {
				return nil, badRequest("messages", "%s: tool_use needs id and name", bp)
			}
			args := "{}"
			if present(bl.Input) {
				args = compactJSON(bl.Input)
			}
			calls = append(calls, toolCall{ID: bl.ID, Type: "function", Function: toolCallFunc{Name: bl.Name, Arguments: args}})
		case bl.Type == "tool_result" && m.Role == "user":
			if bl.ToolUseID == "" {
				return nil, badRequest("messages", "%s: tool_result needs tool_use_id", bp)
			}
			text, aerr := anthropicText(bl.Content, bp+".content")
			if aerr != nil {
				return nil, aerr
			}
			if bl.IsError {
				text = "Error: " + text
			}
			out = append(out, chatMessage{Role: "tool", ToolCallID: bl.ToolUseID, Content: jsonText(text)})
		case (bl.Type == "thinking" || bl.Type == "redacted_thinking") && m.Role == "assistant":
		default:
			return nil, badRequest("messages", "%s.type %q is not supported in a %s message: this server reads text, tool_use (assistant), tool_result (user) and thinking (assistant) blocks",
				bp, bl.Type, m.Role)
		}
	}
	text := strings.Join(texts, "\n")
	switch {
	case m.Role == "assistant":
		msg := chatMessage{Role: "assistant", Content: jsonText(text), ToolCalls: calls}
		if text == "" && len(calls) > 0 {
			msg.Content = json.RawMessage("null")
		}
		out = append(out, msg)
	case len(texts) > 0 || len(out) == 0:
		out = append(out, chatMessage{Role: "user", Content: jsonText(text)})
	}
	return out, nil
}

// anthropicText reads a system prompt or a tool result's content: a string
// or a list of text blocks, joined with newlines.
func anthropicText(raw json.RawMessage, param string) (string, *apiError) {
	field := strings.SplitN(param, ".", 2)[0]
	return stringOrParts(raw, field, param, "text blocks", func(p textPart) (string, bool) {
		return p.Text, p.Type == "text"
	}, "%s.%d.type %q is not supported: text blocks only")
}

// compactJSON is raw compacted (raw as it is when it is not JSON).
func compactJSON(raw json.RawMessage) string {
	var buf bytes.Buffer
	if json.Compact(&buf, raw) != nil {
		return string(raw)
	}
	return buf.String()
}

// response is the whole message once the chat run finished.
func (m *messagesRun) response(ts []*tracker) any {
	cr := m.chat.response(ts).(chatResponse)
	ch := cr.Choices[0]
	msg := ch.Message
	resp := anthropicResponse{ID: m.id, Type: "message", Role: "assistant", Model: m.chat.b.name, Content: []any{}}
	if msg.ReasoningContent != nil && *msg.ReasoningContent != "" {
		resp.Content = append(resp.Content, thinkingBlock{Type: "thinking", Thinking: *msg.ReasoningContent})
	}
	if msg.Content != nil && (*msg.Content != "" || len(msg.ToolCalls) == 0) {
		resp.Content = append(resp.Content, textBlock{Type: "text", Text: *msg.Content})
	}
	for _, tc := range msg.ToolCalls {
		resp.Content = append(resp.Content, toolUseBlock{Type: "tool_use", ID: toolUseID(), Name: tc.Function.Name,
			Input: toolInput(tc.Function.Arguments)})
	}
	resp.StopReason, resp.StopSequence = m.stopReason(ch.finish, len(msg.ToolCalls) > 0)
	resp.Usage = anthropicUsageOf(cr.Usage)
	return resp
}

// stopReason is Anthropic's stop_reason (and stop_sequence) of a finished
// output: tool_use when it called tools, max_tokens at the limit,
// stop_sequence when one of stop_sequences ended it, else end_turn.
func (m *messagesRun) stopReason(f finish, called bool) (*string, *string) {
	switch {
	case called:
		return ptr("tool_use"), nil
	case f.FinishReason != nil && *f.FinishReason == "length":
		return ptr("max_tokens"), nil
	}
	if s, ok := f.StopReason.(string); ok && slices.Contains(m.stops, s) {
		return ptr("stop_sequence"), &s
	}
	return ptr("end_turn"), nil
}

// anthropicUsageOf is Anthropic's usage: input_tokens counts the prompt
// tokens computed, cache_read_input_tokens those the prefix cache served
// (their sum is the prompt).
func anthropicUsageOf(u *usage) anthropicUsage {
	if u == nil {
		return anthropicUsage{}
	}
	cached := 0
	if u.PromptTokensDetails != nil {
		cached = u.PromptTokensDetails.CachedTokens
	}
	return anthropicUsage{InputTokens: u.PromptTokens - cached, OutputTokens: u.CompletionTokens, CacheReadInputTokens: cached}
}

// toolUseID is a tool_use id in Anthropic's form: toolu_ and 24 hex digits.
func toolUseID() string { return newID("toolu_") }

// toolInput is a call's arguments as a tool_use input: the JSON object, or
// {} when the arguments are not one.
func toolInput(args string) json.RawMessage {
	var obj map[string]json.RawMessage
	if json.Unmarshal([]byte(args), &obj) != nil {
		return json.RawMessage("{}")
	}
	return json.RawMessage(args)
}

// stream streams the message's events (messages_stream.go).
func (m *messagesRun) stream(ctx context.Context, out *sse, ts []*tracker) {
	s := &messagesStream{run: m, out: out}
	if !s.start() {
		return
	}
	m.chat.stream(ctx, newSinkSSE(&chatEvents{handle: s}), ts)
}

// anthropicErrorTypes are Anthropic's error types by HTTP status.
var anthropicErrorTypes = map[int]string{
	400: "invalid_request_error", 401: "authentication_error", 403: "permission_error", 404: "not_found_error",
	405: "invalid_request_error", 413: "request_too_large", 429: "rate_limit_error", 500: "api_error",
	503: "overloaded_error", 529: "overloaded_error",
}

// anthropicError is the body of an error in Anthropic's shape:
// {"type": "error", "error": {"type", "message"}}.
func anthropicError(ae *apiError) map[string]any {
	typ, ok := anthropicErrorTypes[ae.Status]
	if !ok {
		typ = "api_error"
		if ae.Status >= 400 && ae.Status < 500 {
			typ = "invalid_request_error"
		}
	}
	msg := ae.Message
	if ae.Param != "" && !strings.HasPrefix(msg, ae.Param) {
		msg = ae.Param + ": " + msg
	}
	return map[string]any{"type": "error", "error": map[string]string{"type": typ, "message": msg}}
}

// writeAnthropicError writes err in Anthropic's error shape (errors that
// are not *apiError become 500s).
func writeAnthropicError(w http.ResponseWriter, err error) {
	var ae *apiError
	if !errors.As(err, &ae) {
		ae = &apiError{Status: http.StatusInternalServerError, Type: "server_error", Message: err.Error()}
	}
	if ae.RetryAfter > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(ae.RetryAfter))
	}
	writeJSON(w, ae.Status, anthropicError(ae))
}
