package server

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"
)

// OpenAI's Responses API (POST /v1/responses, GET and DELETE
// /v1/responses/{id}) on the chat-completions machinery: a request becomes a
// chatRequest (instructions a system message first, the input items
// messages, function_call items an assistant turn's tool_calls,
// function_call_output items tool messages, previous_response_id the stored
// conversation before them, text.format response_format, function tools
// tools), is answered by a chatRun, and its output becomes output items:
// a reasoning item (when a reasoning parser runs), a message with one
// output_text part, function_call items. Streamed, the chat chunks become
// the Responses events (responses_stream.go).

// responsesRequest is POST /v1/responses.
type responsesRequest struct {
	Model              string              `json:"model"`
	Input              json.RawMessage     `json:"input"`
	Instructions       *string             `json:"instructions"`
	MaxOutputTokens    *int                `json:"max_output_tokens"`
	Temperature        *float64            `json:"temperature"`
	TopP               *float64            `json:"top_p"`
	Tools              []json.RawMessage   `json:"tools"`
	ToolChoice         json.RawMessage     `json:"tool_choice"`
	ParallelToolCalls  *bool               `json:"parallel_tool_calls"`
	Text               *responsesText      `json:"text"`
	Reasoning          *responsesReasoning `json:"reasoning"`
	PreviousResponseID *string             `json:"previous_response_id"`
	Store              *bool               `json:"store"`
	Stream             bool                `json:"stream"`
	StreamOptions      *struct {
		IncludeObfuscation *bool `json:"include_obfuscation"`
	} `json:"stream_options"`
	Metadata     map[string]string `json:"metadata"`
	User         string            `json:"user"`
	Include      []string          `json:"include"`
	Truncation   *string           `json:"truncation"`
	Background   *bool             `json:"background"`
	MaxToolCalls *int              `json:"max_tool_calls"`
	TopLogprobs  *int              `json:"top_logprobs"`

	// vLLM's extra sampling parameters.
	TopK *int `json:"top_k"`
	vllmSampling
}

func (r *responsesRequest) modelName() string { return r.Model }

// responsesText is the request's text: its format.
type responsesText struct {
	Format    *responsesFormat `json:"format"`
	Verbosity *string          `json:"verbosity,omitempty"`
}

// responsesFormat is text.format: text, json_object, or json_schema with
// the schema beside the type (not nested as in chat's response_format).
type responsesFormat struct {
	Type        string          `json:"type"`
	Name        string          `json:"name,omitempty"`
	Description string          `json:"description,omitempty"`
	Schema      json.RawMessage `json:"schema,omitempty"`
	Strict      *bool           `json:"strict,omitempty"`
}

// responsesReasoning is the request's reasoning: effort goes to the chat
// template (reasoning_effort, as on chat completions); summaries are not
// written (the reasoning comes whole, as reasoning_text content).
type responsesReasoning struct {
	Effort          *string `json:"effort"`
	Summary         *string `json:"summary"`
	GenerateSummary *string `json:"generate_summary,omitempty"`
}

// responsesItem is one input item, decoded loosely: clients send back the
// output items of earlier responses with every field they had.
type responsesItem struct {
	Type      string          `json:"type"`
	Role      string          `json:"role"`
	Content   json.RawMessage `json:"content"`
	CallID    string          `json:"call_id"`
	Name      string          `json:"name"`
	Arguments string          `json:"arguments"`
	Output    json.RawMessage `json:"output"`
}

// responsesTool is a function tool as the Responses API writes it (flat,
// not under "function").
type responsesTool struct {
	Type        string          `json:"type"`
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Parameters  json.RawMessage `json:"parameters"`
	Strict      *bool           `json:"strict"`
}

// The response object and its output items.
type responseObject struct {
	ID                 string              `json:"id"`
	Object             string              `json:"object"`
	CreatedAt          int64               `json:"created_at"`
	Status             string              `json:"status"`
	Error              *responseError      `json:"error"`
	IncompleteDetails  *incompleteDetails  `json:"incomplete_details"`
	Instructions       *string             `json:"instructions"`
	MaxOutputTokens    *int                `json:"max_output_tokens"`
	MaxToolCalls       *int                `json:"max_tool_calls"`
	Model              string              `json:"model"`
	Output             []any               `json:"output"`
	ParallelToolCalls  bool                `json:"parallel_tool_calls"`
	PreviousResponseID *string             `json:"previous_response_id"`
	Reasoning          *responsesReasoning `json:"reasoning"`
	Store              bool                `json:"store"`
	Temperature        *float64            `json:"temperature"`
	Text               responsesText       `json:"text"`
	ToolChoice         json.RawMessage     `json:"tool_choice"`
	Tools              []json.RawMessage   `json:"tools"`
	TopP               *float64            `json:"top_p"`
	Truncation         string              `json:"truncation"`
	Usage              *responsesUsage     `json:"usage"`
	User               *string             `json:"user"`
	Metadata           map[string]string   `json:"metadata"`
	Background         bool                `json:"background"`
}

type responseError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

type incompleteDetails struct {
	Reason string `json:"reason"`
}

type responsesUsage struct {
	InputTokens        int `json:"input_tokens"`
	InputTokensDetails struct {
		CachedTokens int `json:"cached_tokens"`
	} `json:"input_tokens_details"`
	OutputTokens        int `json:"output_tokens"`
	OutputTokensDetails struct {
		ReasoningTokens int `json:"reasoning_tokens"`
	} `json:"output_tokens_details"`
	TotalTokens int `json:"total_tokens"`
}

type messageItem struct {
	ID      string       `json:"id"`
	Type    string       `json:"type"`
	Status  string       `json:"status"`
	Role    string       `json:"role"`
	Content []outputText `json:"content"`
}

type outputText struct {
	Type        string `json:"type"`
	Text        string `json:"text"`
	Annotations []any  `json:"annotations"`
	Logprobs    []any  `json:"logprobs"`
}

type reasoningItem struct {
	ID      string          `json:"id"`
	Type    string          `json:"type"`
	Summary []any           `json:"summary"`
	Content []reasoningText `json:"content"`
	Status  string          `json:"status,omitempty"`
}

type reasoningText struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

type functionCallItem struct {
	ID        string `json:"id"`
	Type      string `json:"type"`
	Status    string `json:"status"`
	CallID    string `json:"call_id"`
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// responsesRun is one /v1/responses request being answered: a chat run,
// the response object it fills, and the conversation it stores.
type responsesRun struct {
	chat    *chatRun
	resp    *responseObject
	store   bool
	history []chatMessage // the conversation before the output (without instructions)
}

// responses serves POST /v1/responses.
func (b *backend) responses(w http.ResponseWriter, r *http.Request) error {
	var req responsesRequest
	if err := b.decodeRequest(w, r, &req); err != nil {
		return err
	}
	id := "resp_" + baseID(r)
	if b.respStore.get(id) != nil {
		id = newID(id + "-")
	}
	creq, history, aerr := b.responsesChat(&req)
	if aerr != nil {
		return aerr
	}
	c, prompt, p, aerr := b.planChat(creq, id)
	if aerr != nil {
		return responsesParam(aerr)
	}
	run := &responsesRun{chat: c, resp: newResponseObject(&req, id, b.name, c.tools), store: req.Store == nil || *req.Store,
		history: history}
	return b.answer(w, r, id, run, []promptInput{prompt}, p, &creq.samplingFields)
}

// newResponseObject is the response to req as it starts (in_progress, no
// output): the request's settings echoed as OpenAI echoes them.
func newResponseObject(req *responsesRequest, id, model string, tools *toolPlan) *responseObject {
	resp := &responseObject{ID: id, Object: "response", CreatedAt: time.Now().Unix(), Status: "in_progress",
		Instructions: req.Instructions, MaxOutputTokens: req.MaxOutputTokens, MaxToolCalls: req.MaxToolCalls,
		Model: model, Output: []any{}, ParallelToolCalls: tools.parallel, PreviousResponseID: req.PreviousResponseID,
		Reasoning: req.Reasoning, Store: req.Store == nil || *req.Store, Temperature: req.Temperature,
		Text: responsesText{Format: &responsesFormat{Type: "text"}}, ToolChoice: json.RawMessage(`"` + tools.mode + `"`),
		Tools: req.Tools, TopP: req.TopP, Truncation: "disabled", Metadata: req.Metadata}
	if resp.Tools == nil {
		resp.Tools = []json.RawMessage{}
	}
	if resp.Metadata == nil {
		resp.Metadata = map[string]string{}
	}
	if resp.Reasoning == nil {
		resp.Reasoning = &responsesReasoning{}
	}
	if req.Text != nil && req.Text.Format != nil {
		resp.Text.Format = req.Text.Format
	}
	if tools.mode == toolsNamed {
		resp.ToolChoice, _ = json.Marshal(map[string]string{"type": "function", "name": tools.name})
	}
	if req.User != "" {
		resp.User = &req.User
	}
	return resp
}

// responsesParam renames the chat fields a chat error names to the
// Responses API's.
func responsesParam(aerr *apiError) *apiError {
	switch {
	case aerr.Param == "max_tokens":
		aerr.Param = "max_output_tokens"
		aerr.Message = strings.ReplaceAll(aerr.Message, "max_tokens", "max_output_tokens")
	case aerr.Param == "messages" || aerr.Param == "prompt":
		aerr.Param = "input"
	case aerr.Param == "reasoning_effort":
		aerr.Param = "reasoning.effort"
		aerr.Message = strings.ReplaceAll(aerr.Message, "reasoning_effort", "reasoning.effort")
	case strings.HasPrefix(aerr.Param, "response_format"):
		aerr.Param = "text.format"
		aerr.Message = strings.ReplaceAll(aerr.Message, "response_format.json_schema.schema", "text.format.schema")
	}
	return aerr
}

// responsesChat converts req into a chat request, and returns the
// conversation it continues (the stored one of previous_response_id, then
// req's input), which the response stores.
func (b *backend) responsesChat(req *responsesRequest) (*chatRequest, []chatMessage, *apiError) {
	if aerr := req.refuse(); aerr != nil {
		return nil, nil, aerr
	}
	var history []chatMessage
	if req.PreviousResponseID != nil {
		prev := b.respStore.get(*req.PreviousResponseID)
		if prev == nil {
			return nil, nil, responseNotFound("previous_response_id", *req.PreviousResponseID)
		}
		history = append(history, prev.messages...)
	}
	input, aerr := responsesInput(req.Input)
	if aerr != nil {
		return nil, nil, aerr
	}
	history = append(history, input...)
	msgs := history
	if req.Instructions != nil && *req.Instructions != "" {
		msgs = append([]chatMessage{{Role: "system", Content: jsonText(*req.Instructions)}}, history...)
	}
	creq := &chatRequest{Messages: msgs, ParallelToolCalls: req.ParallelToolCalls, ToolChoice: req.ToolChoice}
	f := &creq.samplingFields
	f.Model, f.Temperature, f.TopP, f.MaxTokens, f.Stream = req.Model, req.Temperature, req.TopP, req.MaxOutputTokens, req.Stream
	f.TopK, f.MinP, f.RepetitionPenalty, f.Seed, f.Priority, f.MinTokens = req.TopK, req.MinP, req.RepetitionPenalty, req.Seed, req.Priority, req.MinTokens
	f.StreamOptions = &streamOptions{IncludeUsage: true}
	for i, raw := range req.Tools {
		var t responsesTool
		if err := json.Unmarshal(raw, &t); err != nil {
			return nil, nil, badRequest("tools", "tools[%d]: %v", i, err)
		}
		if t.Type != "function" {
			return nil, nil, badRequest("tools", "tools[%d].type %q is not supported: this server runs function tools only", i, t.Type)
		}
		creq.Tools = append(creq.Tools, toolDef{Type: "function", Function: toolFunction{Name: t.Name,
			Description: t.Description, Parameters: t.Parameters, Strict: t.Strict}})
	}
	if len(creq.Tools) == 0 && (isJSON(`"auto"`)(req.ToolChoice) || isJSON(`"none"`)(req.ToolChoice)) {
		creq.ToolChoice = nil // what agent frameworks send beside an empty tools list: no tools to choose from
	}
	if present(creq.ToolChoice) {
		var named struct {
			Type string `json:"type"`
			Name string `json:"name"`
		}
		if json.Unmarshal(req.ToolChoice, &named) == nil && named.Type != "" {
			if named.Type != "function" || named.Name == "" {
				return nil, nil, badRequest("tool_choice", "tool_choice must be none, auto, required or {\"type\": \"function\", \"name\": …}; %q is not supported", named.Type)
			}
			creq.ToolChoice, _ = json.Marshal(map[string]any{"type": "function", "function": map[string]string{"name": named.Name}})
		}
	}
	if t := req.Text; t != nil && t.Format != nil {
		switch t.Format.Type {
		case "text":
		case "json_object":
			creq.ResponseFormat = &responseFormat{Type: "json_object"}
		case "json_schema":
			if !present(t.Format.Schema) {
				return nil, nil, badRequest("text.format", "text.format json_schema needs schema")
			}
			creq.ResponseFormat = &responseFormat{Type: "json_schema", JSONSchema: &jsonSchemaSpec{Name: t.Format.Name,
				Description: t.Format.Description, Schema: t.Format.Schema, Strict: t.Format.Strict}}
		default:
			return nil, nil, badRequest("text.format", "text.format type must be text, json_object or json_schema, got %q", t.Format.Type)
		}
	}
	if req.Reasoning != nil {
		creq.ReasoningEffort = req.Reasoning.Effort
	}
	return creq, history, nil
}

// refuse refuses the fields pagoda knows but does not implement, saying why.
func (req *responsesRequest) refuse() *apiError {
	switch {
	case req.Truncation != nil && *req.Truncation != "disabled":
		return badRequest("truncation", "truncation %q is not supported: only \"disabled\" (a conversation longer than the model is a 400)", *req.Truncation)
	case req.Background != nil && *req.Background:
		return badRequest("background", "background responses are not supported: use stream, or wait for the response")
	case req.TopLogprobs != nil && *req.TopLogprobs > 0:
		return badRequest("top_logprobs", "logprobs are not available on /v1/responses; use /v1/chat/completions")
	case req.Text != nil && req.Text.Verbosity != nil:
		return badRequest("text.verbosity", "text.verbosity is not supported: pagoda cannot make answers shorter or longer on request; leave it out (or use max_output_tokens)")
	}
	for _, inc := range req.Include {
		if inc == "message.output_text.logprobs" {
			return badRequest("include", "include %q: logprobs are not available on /v1/responses; use /v1/chat/completions", inc)
		}
	}
	return nil
}

// responsesInput converts the input (a string: one user message; or a list
// of items) into chat messages. Consecutive function_call items (and an
// assistant message before them) make one assistant turn; reasoning items
// are left out (chat templates drop earlier turns' reasoning).
func responsesInput(raw json.RawMessage) ([]chatMessage, *apiError) {
	if !present(raw) {
		return nil, badRequest("input", "input is required")
	}
	var text string
	if json.Unmarshal(raw, &text) == nil {
		return []chatMessage{{Role: "user", Content: jsonText(text)}}, nil
	}
	var items []responsesItem
	if err := json.Unmarshal(raw, &items); err != nil {
		return nil, badRequest("input", "input must be a string or a list of items: %v", err)
	}
	var out []chatMessage
	lastAssistant := func() *chatMessage {
		if n := len(out); n > 0 && out[n-1].Role == "assistant" {
			return &out[n-1]
		}
		return nil
	}
	for i, it := range items {
		param := fmt.Sprintf("input[%d]", i)
		switch it.Type {
		case "", "message":
			switch it.Role {
			case "user", "system", "developer", "assistant":
			default:
				return nil, badRequest("input", "%s.role must be user, system, developer or assistant, got %q", param, it.Role)
			}
			text, aerr := responsesContent(it.Content, param+".content")
			if aerr != nil {
				return nil, aerr
			}
			out = append(out, chatMessage{Role: it.Role, Content: jsonText(text)})
		case "function_call":
			if it.Name == "" || it.CallID == "" {
				return nil, badRequest("input", "%s: a function_call needs call_id and name", param)
			}
			args := it.Arguments
			if args == "" {
				args = "{}"
			}
			if !json.Valid([]byte(args)) {
				return nil, badRequest("input", "%s.arguments must be a JSON text", param)
			}
			call := toolCall{ID: it.CallID, Type: "function", Function: toolCallFunc{Name: it.Name, Arguments: args}}
			if m := lastAssistant(); m != nil {
				m.ToolCalls = append(m.ToolCalls, call)
			} else {
				out = append(out, chatMessage{Role: "assistant", Content: json.RawMessage("null"), ToolCalls: []toolCall{call}})
			}
		case "function_call_output":
			if it.CallID == "" {
				return nil, badRequest("input", "%s: a function_call_output needs call_id", param)
			}
			text, aerr := responsesContent(it.Output, param+".output")
			if aerr != nil {
				return nil, aerr
			}
			out = append(out, chatMessage{Role: "tool", ToolCallID: it.CallID, Content: jsonText(text)})
		case "reasoning":
		default:
			return nil, badRequest("input", "%s.type %q is not supported: use message, function_call, function_call_output or reasoning items", param, it.Type)
		}
	}
	if len(out) == 0 {
		return nil, badRequest("input", "input must hold at least one message")
	}
	return out, nil
}

// responsesContent reads a message's content or a function_call_output's
// output: a string or a list of text parts (input_text, output_text,
// refusal), joined with newlines.
func responsesContent(raw json.RawMessage, param string) (string, *apiError) {
	return stringOrParts(raw, "input", param, "content parts", func(p textPart) (string, bool) {
		switch p.Type {
		case "input_text", "output_text", "text":
			return p.Text, true
		case "refusal":
			return p.Refusal, true
		}
		return "", false
	}, "%s[%d].type %q is not supported: this server reads text only (input_text, output_text)")
}

// textPart is one part of a content list (Responses' parts, Anthropic's
// blocks): its type, text and refusal text.
type textPart struct {
	Type    string `json:"type"`
	Text    string `json:"text"`
	Refusal string `json:"refusal"`
}

// stringOrParts reads content given as a string or as a list of parts,
// whose texts (text: a part's text, false for a type not read) are joined
// with newlines. Errors are 400s on field: not a string or a list of what
// (param named), or a part of a type not read (unread formats param, the
// part's index and type).
func stringOrParts(raw json.RawMessage, field, param, what string, text func(textPart) (string, bool), unread string) (string, *apiError) {
	if !present(raw) {
		return "", nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, nil
	}
	var parts []textPart
	if err := json.Unmarshal(raw, &parts); err != nil {
		return "", badRequest(field, "%s must be a string or a list of %s", param, what)
	}
	texts := make([]string, 0, len(parts))
	for j, p := range parts {
		t, ok := text(p)
		if !ok {
			return "", badRequest(field, unread, param, j, p.Type)
		}
		texts = append(texts, t)
	}
	return strings.Join(texts, "\n"), nil
}

// jsonText is s as a JSON string.
func jsonText(s string) json.RawMessage {
	b, _ := json.Marshal(s)
	return b
}

// response is the whole response once the chat run finished.
func (r *responsesRun) response(ts []*tracker) any {
	cr := r.chat.response(ts).(chatResponse)
	ch := cr.Choices[0]
	m := ch.Message
	var reasoning, content string
	if m.ReasoningContent != nil {
		reasoning = *m.ReasoningContent
	}
	if m.Content != nil {
		content = *m.Content
	}
	b := newOutputBuilder()
	if reasoning != "" {
		b.reasoning(reasoning)
	}
	if content != "" || (reasoning == "" && len(m.ToolCalls) == 0 && m.Content != nil) {
		b.message(content)
	}
	for _, tc := range m.ToolCalls {
		b.call(tc.ID, tc.Function.Name, tc.Function.Arguments)
	}
	finishReason := ""
	if ch.FinishReason != nil {
		finishReason = *ch.FinishReason
	}
	r.complete(b, finishReason, cr.Usage)
	return r.resp
}

// stream streams the response's events (responses_stream.go).
func (r *responsesRun) stream(ctx context.Context, out *sse, ts []*tracker) {
	s := &responsesStream{run: r, out: out, b: newOutputBuilder()}
	if !s.start() {
		return
	}
	r.chat.stream(ctx, newSinkSSE(&chatEvents{handle: s}), ts)
}

// outputBuilder collects a response's output items.
type outputBuilder struct {
	items []any
}

func newOutputBuilder() *outputBuilder { return &outputBuilder{} }

func (b *outputBuilder) reasoning(text string) *reasoningItem {
	it := &reasoningItem{ID: newID("rs_"), Type: "reasoning", Summary: []any{},
		Content: []reasoningText{{Type: "reasoning_text", Text: text}}}
	b.items = append(b.items, it)
	return it
}

func (b *outputBuilder) message(text string) *messageItem {
	it := &messageItem{ID: newID("msg_"), Type: "message", Status: "completed", Role: "assistant",
		Content: []outputText{{Type: "output_text", Text: text, Annotations: []any{}, Logprobs: []any{}}}}
	b.items = append(b.items, it)
	return it
}

func (b *outputBuilder) call(callID, name, args string) *functionCallItem {
	if callID == "" {
		callID = newToolCallID()
	}
	it := &functionCallItem{ID: newID("fc_"), Type: "function_call", Status: "completed", CallID: callID, Name: name, Arguments: args}
	b.items = append(b.items, it)
	return it
}

// assistant is the output as the assistant turn of the stored
// conversation: its text and its calls (its reasoning left out).
func (b *outputBuilder) assistant() chatMessage {
	var text strings.Builder
	m := chatMessage{Role: "assistant"}
	for _, it := range b.items {
		switch it := it.(type) {
		case *messageItem:
			for _, p := range it.Content {
				text.WriteString(p.Text)
			}
		case *functionCallItem:
			m.ToolCalls = append(m.ToolCalls, toolCall{ID: it.CallID, Type: "function",
				Function: toolCallFunc{Name: it.Name, Arguments: it.Arguments}})
		}
	}
	m.Content = jsonText(text.String())
	if text.Len() == 0 && len(m.ToolCalls) > 0 {
		m.Content = json.RawMessage("null")
	}
	return m
}

// complete finishes the response object: its output, status and usage; and
// stores it when store is true.
func (r *responsesRun) complete(b *outputBuilder, finishReason string, u *usage) {
	resp := r.resp
	resp.Output = b.items
	if resp.Output == nil {
		resp.Output = []any{}
	}
	resp.Status = "completed"
	if finishReason == "length" {
		resp.Status = "incomplete"
		resp.IncompleteDetails = &incompleteDetails{Reason: "max_output_tokens"}
		for _, it := range b.items {
			switch it := it.(type) {
			case *messageItem:
				it.Status = "incomplete"
			case *functionCallItem:
				it.Status = "incomplete"
			}
		}
	}
	if u != nil {
		ru := &responsesUsage{InputTokens: u.PromptTokens, OutputTokens: u.CompletionTokens, TotalTokens: u.TotalTokens}
		if u.PromptTokensDetails != nil {
			ru.InputTokensDetails.CachedTokens = u.PromptTokensDetails.CachedTokens
		}
		if u.CompletionTokensDetails != nil {
			ru.OutputTokensDetails.ReasoningTokens = u.CompletionTokensDetails.ReasoningTokens
		}
		resp.Usage = ru
	}
	if r.store {
		msgs := append(append([]chatMessage(nil), r.history...), b.assistant())
		r.chat.b.respStore.put(resp.ID, marshalResponse(resp), msgs)
	}
}

// getResponse serves GET /v1/responses/{id}: a stored response.
func (b *backend) getResponse(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("id")
	e := b.respStore.get(id)
	if e == nil {
		return responseNotFound("response_id", id)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	w.Write(append(bytes.Clone(e.response), '\n'))
	return nil
}

// deleteResponse serves DELETE /v1/responses/{id}.
func (b *backend) deleteResponse(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("id")
	if !b.respStore.delete(id) {
		return responseNotFound("response_id", id)
	}
	writeJSON(w, http.StatusOK, map[string]any{"id": id, "object": "response.deleted", "deleted": true})
	return nil
}
