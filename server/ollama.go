package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"pagoda/engine"
)

// Ollama's API (/api/*), as the official clients speak it: chat and
// generate are chat completions converted (ollamaChatRequest.chatRequest),
// run through planChat and the chat stream, and converted back, line by
// line, by ollamaSink (ollamastream.go); embed and embeddings are the
// embeddings of embeddings.go; tags, show, ps, version and pull describe
// the served model and download others (ollamamodels.go). Errors take
// Ollama's shape, {"error": "message"}, with the same statuses as the
// OpenAI endpoints (404 for an unknown model, as Ollama).

// ollamaOptions are Ollama's options: the sampling ones map onto the
// sampling fields; num_ctx bounds prompt + generation (at most
// --max-model-len, which fixes the context when the server starts); the
// load-time ones are accepted and ignored (the model is loaded once, by
// the command line); those pagoda cannot honour are refused unless they
// hold their neutral value.
type ollamaOptions struct {
	NumPredict       *int       `json:"num_predict"`
	Temperature      *float64   `json:"temperature"`
	TopK             *int       `json:"top_k"`
	TopP             *float64   `json:"top_p"`
	MinP             *float64   `json:"min_p"`
	RepeatPenalty    *float64   `json:"repeat_penalty"`
	PresencePenalty  *float64   `json:"presence_penalty"`
	FrequencyPenalty *float64   `json:"frequency_penalty"`
	Seed             *int64     `json:"seed"`
	Stop             stringList `json:"stop"`
	NumCtx           *int       `json:"num_ctx"`

	// Refused unless neutral.
	RepeatLastN *int     `json:"repeat_last_n"`
	TypicalP    *float64 `json:"typical_p"`
	TfsZ        *float64 `json:"tfs_z"`
	Mirostat    *int     `json:"mirostat"`

	// Accepted and ignored: no value changes the output here.
	MirostatTau     json.RawMessage `json:"mirostat_tau"`
	MirostatEta     json.RawMessage `json:"mirostat_eta"`
	PenalizeNewline json.RawMessage `json:"penalize_newline"` // Ollama ignores it too
	NumKeep         json.RawMessage `json:"num_keep"`         // context shifting, which pagoda never does
	Numa            json.RawMessage `json:"numa"`
	NumBatch        json.RawMessage `json:"num_batch"`
	NumGPU          json.RawMessage `json:"num_gpu"`
	MainGPU         json.RawMessage `json:"main_gpu"`
	LowVRAM         json.RawMessage `json:"low_vram"`
	F16KV           json.RawMessage `json:"f16_kv"`
	LogitsAll       json.RawMessage `json:"logits_all"`
	VocabOnly       json.RawMessage `json:"vocab_only"`
	UseMmap         json.RawMessage `json:"use_mmap"`
	UseMlock        json.RawMessage `json:"use_mlock"`
	EmbeddingOnly   json.RawMessage `json:"embedding_only"`
	NumThread       json.RawMessage `json:"num_thread"`
}

// ollamaGenFields are the fields chat and generate share.
type ollamaGenFields struct {
	Model       string          `json:"model"`
	Stream      *bool           `json:"stream"` // absent: true
	Format      json.RawMessage `json:"format"` // "", "json" or a JSON Schema
	Options     *ollamaOptions  `json:"options"`
	KeepAlive   json.RawMessage `json:"keep_alive"` // accepted: the model stays loaded
	Think       json.RawMessage `json:"think"`      // true, false, "low", "medium", "high"
	Logprobs    bool            `json:"logprobs"`
	TopLogprobs *int            `json:"top_logprobs"`
}

// ollamaChatRequest is POST /api/chat.
type ollamaChatRequest struct {
	ollamaGenFields
	Messages []ollamaMessage `json:"messages"`
	Tools    []toolDef       `json:"tools"`
}

// ollamaGenerateRequest is POST /api/generate.
type ollamaGenerateRequest struct {
	ollamaGenFields
	Prompt   string            `json:"prompt"`
	System   string            `json:"system"`
	Raw      bool              `json:"raw"`
	Context  []int32           `json:"context"`
	Suffix   string            `json:"suffix"`
	Template string            `json:"template"`
	Images   []json.RawMessage `json:"images"`
}

// ollamaMessage is a message of /api/chat, in and out.
type ollamaMessage struct {
	Role      string            `json:"role"`
	Content   string            `json:"content"`
	Thinking  string            `json:"thinking,omitempty"`
	Images    []json.RawMessage `json:"images,omitempty"`
	ToolCalls []ollamaToolCall  `json:"tool_calls,omitempty"`
	ToolName  string            `json:"tool_name,omitempty"`
}

// ollamaToolCall is a call with its arguments as a JSON object.
type ollamaToolCall struct {
	ID       string             `json:"id,omitempty"`
	Function ollamaToolFunction `json:"function"`
}

type ollamaToolFunction struct {
	Index     int             `json:"index"`
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
}

// ollamaName is a model name as Ollama's clients send it, without the
// default tag ":latest".
func ollamaName(name string) string { return strings.TrimSuffix(name, ":latest") }

// ollama adapts an Ollama handler: the served names answer with or
// without ":latest".
func (b *backend) decodeOllama(w http.ResponseWriter, r *http.Request, v any, model *string) error {
	if err := b.decodeJSON(w, r, v); err != nil {
		return err
	}
	*model = ollamaName(*model)
	if aerr := b.checkModel(*model); aerr != nil {
		return aerr
	}
	return nil
}

// writeOllamaError writes err in Ollama's shape: {"error": "message"};
// an unknown model is a 404, as in Ollama.
func writeOllamaError(w http.ResponseWriter, err error) {
	var ae *apiError
	if !errors.As(err, &ae) {
		ae = &apiError{Status: http.StatusInternalServerError, Type: "server_error", Message: err.Error()}
	}
	status := ae.Status
	if ae.Code == "model_not_found" {
		status = http.StatusNotFound
	}
	if ae.RetryAfter > 0 {
		w.Header().Set("Retry-After", fmt.Sprint(ae.RetryAfter))
	}
	writeJSON(w, status, map[string]string{"error": ae.Message})
}

// samplingFields maps the options onto chat's sampling fields; numCtx is
// num_ctx (0: absent), checked against the model length.
func (f *ollamaGenFields) samplingFields(maxModelLen int) (samplingFields, int, *apiError) {
	var sf samplingFields
	sf.Model, sf.Stream = f.Model, true // always the chat stream: ollamaSink writes lines or one response
	sf.StreamOptions = &streamOptions{IncludeUsage: true}
	switch format := bytes.TrimSpace(f.Format); {
	case !present(format) || string(format) == `""`:
	case string(format) == `"json"`:
		sf.ResponseFormat = &responseFormat{Type: "json_object"}
	case format[0] == '{':
		sf.GuidedJSON = format
	default:
		return sf, 0, badRequest("format", `format must be "json" or a JSON Schema object, got %s`, format)
	}
	o := f.Options
	if o == nil {
		return sf, 0, nil
	}
	if n := o.NumPredict; n != nil && *n > 0 { // -1 (no limit) and -2 (fill the context) leave max_tokens to the model length
		sf.MaxTokens = n
	}
	sf.Temperature, sf.TopK, sf.TopP, sf.MinP = o.Temperature, o.TopK, o.TopP, o.MinP
	sf.RepetitionPenalty, sf.PresencePenalty, sf.FrequencyPenalty = o.RepeatPenalty, o.PresencePenalty, o.FrequencyPenalty
	if o.Seed != nil && *o.Seed >= 0 { // Ollama's -1: random
		sf.Seed = o.Seed
	}
	sf.Stop = o.Stop
	switch {
	case o.TypicalP != nil && *o.TypicalP != 1:
		return sf, 0, badRequest("options.typical_p", "options.typical_p is not supported (only 1, off); use top_p or min_p")
	case o.TfsZ != nil && *o.TfsZ != 1:
		return sf, 0, badRequest("options.tfs_z", "options.tfs_z is not supported (only 1, off); use top_p or min_p")
	case o.Mirostat != nil && *o.Mirostat != 0:
		return sf, 0, badRequest("options.mirostat", "options.mirostat is not supported (only 0, off)")
	case o.RepeatLastN != nil && *o.RepeatLastN != -1 && o.RepeatPenalty != nil && *o.RepeatPenalty != 1:
		return sf, 0, badRequest("options.repeat_last_n", "options.repeat_last_n must be -1: pagoda's repeat_penalty covers the whole context")
	}
	numCtx := 0
	if o.NumCtx != nil {
		numCtx = *o.NumCtx
		if numCtx < 1 || numCtx > maxModelLen {
			return sf, 0, badRequest("options.num_ctx", "options.num_ctx must be in [1, %d] (the server's --max-model-len, fixed when it starts), got %d",
				maxModelLen, numCtx)
		}
	}
	return sf, numCtx, nil
}

// applyNumCtx bounds prompt + generation by num_ctx (0: no bound).
func applyNumCtx(p *engine.SamplingParams, promptLen, numCtx int) *apiError {
	if numCtx == 0 {
		return nil
	}
	if promptLen >= numCtx {
		return badRequest("options.num_ctx", "%s: the prompt has %d tokens, options.num_ctx is %d", engine.ErrPromptTooLong, promptLen, numCtx)
	}
	if p.MaxTokens == 0 || p.MaxTokens > numCtx-promptLen {
		p.MaxTokens = numCtx - promptLen
	}
	return nil
}

// think applies the think field: thinking needs a reasoning parser
// (--reasoning-parser; Ollama refuses it on models that do not think);
// false turns it off in the template (enable_thinking, as Qwen3's reads
// it); a level is the template's reasoning_effort.
func (f *ollamaGenFields) think(b *backend, req *chatRequest) *apiError {
	if !present(f.Think) {
		return nil
	}
	var on bool
	var level string
	if json.Unmarshal(f.Think, &on) != nil {
		if json.Unmarshal(f.Think, &level) != nil || (level != "low" && level != "medium" && level != "high") {
			return badRequest("think", `think must be true, false, "low", "medium" or "high"`)
		}
		on = true
	}
	if on && b.reasoning == nil && b.harmony == nil {
		return badRequest("think", "%q does not support thinking (start the server with --reasoning-parser for a thinking model)", b.name)
	}
	if !on {
		req.ChatTemplateKwargs = map[string]any{"enable_thinking": false}
	}
	if level != "" {
		req.ReasoningEffort = &level
	}
	return nil
}

// chatRequest converts the request to a chat completions request.
func (o *ollamaChatRequest) chatRequest(b *backend) (*chatRequest, int, *apiError) {
	sf, numCtx, aerr := o.samplingFields(b.e.Config().MaxModelLen)
	if aerr != nil {
		return nil, 0, aerr
	}
	req := &chatRequest{samplingFields: sf, Tools: o.Tools, Logprobs: o.Logprobs, TopLogprobs: o.TopLogprobs}
	for i, m := range o.Messages {
		if len(m.Images) > 0 {
			return nil, 0, badRequest("messages", "messages[%d].images: images are not supported (pagoda serves text models)", i)
		}
		content, _ := json.Marshal(m.Content)
		cm := chatMessage{Role: m.Role, Content: content, Name: m.ToolName}
		for j, tc := range m.ToolCalls {
			args := bytes.TrimSpace(tc.Function.Arguments)
			if !present(args) {
				args = []byte("{}")
			}
			if !json.Valid(args) {
				return nil, 0, badRequest("messages", "messages[%d].tool_calls[%d].function.arguments must be a JSON object", i, j)
			}
			id := tc.ID
			if id == "" {
				id = newToolCallID()
			}
			cm.ToolCalls = append(cm.ToolCalls, toolCall{ID: id, Type: "function", Function: toolCallFunc{Name: tc.Function.Name, Arguments: string(args)}})
		}
		req.Messages = append(req.Messages, cm)
	}
	if aerr := o.think(b, req); aerr != nil {
		return nil, 0, aerr
	}
	return req, numCtx, nil
}

// ollamaChat serves POST /api/chat.
func (b *backend) ollamaChat(w http.ResponseWriter, r *http.Request) error {
	start := time.Now()
	var o ollamaChatRequest
	if err := b.decodeOllama(w, r, &o, &o.Model); err != nil {
		return err
	}
	if len(o.Messages) == 0 { // Ollama loads the model and answers at once
		writeJSON(w, http.StatusOK, map[string]any{"model": b.name, "created_at": ollamaTime(time.Now()),
			"message": ollamaMessage{Role: "assistant"}, "done": true, "done_reason": "load"})
		return nil
	}
	req, numCtx, aerr := o.chatRequest(b)
	if aerr != nil {
		return aerr
	}
	c, prompt, p, aerr := b.planChat(req, "chatcmpl-"+baseID(r))
	if aerr != nil {
		return aerr
	}
	if aerr := applyNumCtx(&p, len(prompt.ids), numCtx); aerr != nil {
		return aerr
	}
	return b.ollamaAnswer(w, r, c, prompt, p, &ollamaSink{stream: o.Stream == nil || *o.Stream, start: start})
}

// ollamaGenerate serves POST /api/generate: the prompt as a user message
// (after system, if given) through the chat template, or as it is with
// raw; context (the ids a previous response returned) goes before it.
func (b *backend) ollamaGenerate(w http.ResponseWriter, r *http.Request) error {
	start := time.Now()
	var o ollamaGenerateRequest
	if err := b.decodeOllama(w, r, &o, &o.Model); err != nil {
		return err
	}
	switch {
	case len(o.Images) > 0:
		return badRequest("images", "images are not supported (pagoda serves text models)")
	case o.Suffix != "":
		return badRequest("suffix", "suffix (fill in the middle) is not supported")
	case o.Template != "":
		return badRequest("template", "template is not supported: the model's chat template applies (or send raw: true)")
	case o.Prompt == "" && len(o.Context) == 0: // Ollama loads the model and answers at once
		writeJSON(w, http.StatusOK, map[string]any{"model": b.name, "created_at": ollamaTime(time.Now()),
			"response": "", "done": true, "done_reason": "load"})
		return nil
	}
	sf, numCtx, aerr := o.samplingFields(b.e.Config().MaxModelLen)
	if aerr != nil {
		return aerr
	}
	req := &chatRequest{samplingFields: sf, Logprobs: o.Logprobs, TopLogprobs: o.TopLogprobs}
	if o.System != "" {
		req.Messages = append(req.Messages, chatMessage{Role: "system", Content: ollamaJSONString(o.System)})
	}
	req.Messages = append(req.Messages, chatMessage{Role: "user", Content: ollamaJSONString(o.Prompt)})
	if aerr := o.think(b, req); aerr != nil {
		return aerr
	}
	id := "cmpl-" + baseID(r)
	var c *chatRun
	var prompt promptInput
	var p engine.SamplingParams
	if o.Raw {
		if p, aerr = req.samplingParams(b.defaults, req.MaxTokens, 0, &b.grammars); aerr != nil {
			return aerr
		}
		if aerr = setChatLogprobs(req, &p); aerr != nil {
			return aerr
		}
		if o.Prompt != "" {
			if prompt, aerr = textPrompt(b.tok, o.Prompt, len(o.Context) == 0, b.e.Config().MaxModelLen); aerr != nil {
				return aerr
			}
		}
		c = &chatRun{b: b, req: req, id: id, created: time.Now().Unix(), n: 1, tools: &toolPlan{mode: toolsNone}}
	} else if c, prompt, p, aerr = b.planChat(req, id); aerr != nil {
		return aerr
	}
	prompt.ids = append(append([]int32(nil), o.Context...), prompt.ids...)
	if aerr := applyNumCtx(&p, len(prompt.ids), numCtx); aerr != nil {
		return aerr
	}
	return b.ollamaAnswer(w, r, c, prompt, p, &ollamaSink{stream: o.Stream == nil || *o.Stream, start: start, generate: true})
}

func ollamaJSONString(s string) json.RawMessage {
	b, _ := json.Marshal(s)
	return b
}

// ollamaAnswer runs the chat c and answers through sink: NDJSON lines, or
// one response.
func (b *backend) ollamaAnswer(w http.ResponseWriter, r *http.Request, c *chatRun, prompt promptInput, p engine.SamplingParams, sink *ollamaSink) error {
	if p.N != 1 {
		return badRequest("n", "n must be 1")
	}
	ts, aerr := b.submit(c.id, []promptInput{prompt}, p, 0)
	if aerr != nil {
		return aerr
	}
	defer b.abort(ts)
	sink.w, sink.rc, sink.t, sink.model = w, http.NewResponseController(w), ts[0], b.name
	c.stream(r.Context(), newSinkSSE(sink), ts)
	return nil
}
