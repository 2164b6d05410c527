package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
	"time"
)

// The soak's requests to the other protocols a server may speak beside
// OpenAI's completions and chat: OpenAI's Responses API, Anthropic's
// Messages, Ollama's /api/chat and OpenAI's embeddings. Each is planned,
// hung up on and malformed as chat is, and its answer checked in its own
// protocol: a Responses stream ends with response.completed (or
// response.incomplete), not [DONE]; a Messages stream with message_stop
// after a message_delta carrying the stop_reason; an Ollama stream is
// NDJSON whose last line has done true and a done_reason; embeddings come
// one per input.

// Endpoint paths of the other protocols.
const (
	ResponsesPath  = "/v1/responses"
	MessagesPath   = "/v1/messages"
	OllamaChatPath = "/api/chat"
	EmbeddingsPath = "/v1/embeddings"
)

// AllEndpoints are the endpoints a soak can mix, in the order of
// `pagoda bench soak --endpoints` names (completions, chat, responses,
// messages, ollama, embeddings).
var AllEndpoints = []string{CompletionsPath, ChatPath, ResponsesPath, MessagesPath, OllamaChatPath, EmbeddingsPath}

// openAIEndpoints are the two endpoints of the original soak, whose shapes
// and malformed kinds are planShape's and malformedKinds'.
func isOpenAI(ep string) bool { return ep == CompletionsPath || ep == ChatPath }

// planProtocol draws a well-formed request to ep, one of the other
// protocols' endpoints, streamed when wantStream (except embeddings, which
// do not stream) or at random.
func planProtocol(c PlanConfig, r *rand.Rand, i int, ep string, wantStream bool) soakRequest {
	body := map[string]any{"model": c.Model}
	req := soakRequest{Index: i, Endpoint: ep, Choices: 1}
	maxTokens := 1 + r.IntN(c.MaxTokens)
	stream := wantStream || r.IntN(2) == 0
	temp, seed := []float64{0, 0.7, 1}[r.IntN(3)], r.IntN(1000)
	var parts []string
	add := func(on bool, s string) bool {
		if on {
			parts = append(parts, s)
		}
		return on
	}
	switch ep {
	case ResponsesPath:
		parts = []string{"responses"}
		body["max_output_tokens"], body["temperature"], body["seed"] = maxTokens, temp, seed
		if add(r.IntN(2) == 0, "items") {
			body["input"] = []map[string]any{{"type": "message", "role": "user",
				"content": []map[string]string{{"type": "input_text", "text": promptText(r, c.MaxPromptWords)}}}}
		} else {
			body["input"] = promptText(r, c.MaxPromptWords)
		}
		if add(r.IntN(3) == 0, "instructions") {
			body["instructions"] = promptText(r, c.MaxPromptWords)
		}
		if !add(r.IntN(2) == 0, "store") {
			body["store"] = false
		}
	case MessagesPath:
		parts = []string{"messages"}
		body["max_tokens"], body["temperature"] = maxTokens, temp
		body["messages"] = []map[string]any{{"role": "user", "content": promptText(r, c.MaxPromptWords)}}
		if add(r.IntN(3) == 0, "system") {
			body["system"] = promptText(r, c.MaxPromptWords)
		}
		if add(r.IntN(3) == 0, "stop") {
			body["stop_sequences"] = [][]string{{"."}, {" the", "!"}, {"\n"}}[r.IntN(3)]
		}
		if add(r.IntN(4) == 0, "top_k") {
			body["top_k"] = 1 + r.IntN(40)
		}
	case OllamaChatPath:
		parts = []string{"ollama-chat"}
		opts := map[string]any{"num_predict": maxTokens, "temperature": temp, "seed": seed}
		if add(r.IntN(3) == 0, "stop") {
			opts["stop"] = [][]string{{"."}, {" the", "!"}, {"\n"}}[r.IntN(3)]
		}
		body["messages"], body["options"] = chatMessages(r, c.MaxPromptWords), opts
		// Ollama streams by default: a stream leaves the field out or sets it.
		switch {
		case !stream:
			body["stream"] = false
		case r.IntN(2) == 0:
			body["stream"] = true
		}
	case EmbeddingsPath:
		parts, stream = []string{"embeddings"}, false
		switch k := r.IntN(4); {
		case k == 0:
			body["input"] = promptText(r, c.MaxPromptWords)
		case k == 1 && add(true, "token-ids"):
			ids := make([]int, 1+r.IntN(c.MaxPromptWords))
			for j := range ids {
				ids[j] = 1 + r.IntN(255) // within any byte-level vocabulary
			}
			body["input"] = ids
		default:
			list := make([]string, 2+r.IntN(3))
			for j := range list {
				list[j] = promptText(r, c.MaxPromptWords)
			}
			body["input"], req.Choices = list, len(list)
			add(true, fmt.Sprintf("batch=%d", len(list)))
		}
		if add(r.IntN(4) == 0, "base64") {
			body["encoding_format"] = "base64"
		}
	}
	if stream && ep != OllamaChatPath {
		body["stream"] = true
	}
	if stream {
		parts = append(parts[:1], append([]string{"stream"}, parts[1:]...)...)
	}
	req.Body, _ = json.Marshal(body) // maps of strings, numbers and lists always marshal
	req.Stream, req.Shape = stream, strings.Join(parts, " ")
	return req
}

// protocolBase is a well-formed base body for a malformed request to ep,
// and the keys of its prompt and of its token limit.
func protocolBase(c PlanConfig, r *rand.Rand, ep string) map[string]any {
	base := map[string]any{"model": c.Model}
	mt := 1 + r.IntN(c.MaxTokens)
	switch ep {
	case CompletionsPath:
		base["prompt"], base["max_tokens"] = promptText(r, c.MaxPromptWords), mt
	case ChatPath:
		base["messages"], base["max_tokens"] = chatMessages(r, c.MaxPromptWords), mt
	case ResponsesPath:
		base["input"], base["max_output_tokens"] = promptText(r, c.MaxPromptWords), mt
	case MessagesPath:
		base["messages"], base["max_tokens"] = []map[string]any{{"role": "user", "content": promptText(r, c.MaxPromptWords)}}, mt
	case OllamaChatPath:
		base["messages"], base["options"] = chatMessages(r, c.MaxPromptWords), map[string]any{"num_predict": mt}
	case EmbeddingsPath:
		base["input"] = promptText(r, c.MaxPromptWords)
	}
	return base
}

// promptField is the field holding the prompt on ep.
func promptField(ep string) string {
	switch ep {
	case CompletionsPath:
		return "prompt"
	case ResponsesPath, EmbeddingsPath:
		return "input"
	}
	return "messages"
}

// withOption is base with Ollama's options[key] set to v, as JSON.
func withOption(base map[string]any, key string, v any) []byte {
	opts := map[string]any{}
	if o, ok := base["options"].(map[string]any); ok {
		for k, x := range o {
			opts[k] = x
		}
	}
	opts[key] = v
	return jsonWith(base, "options", opts)
}

// withLimit is base with ep's token limit (max_tokens, max_output_tokens,
// options.num_predict) set to v.
func withLimit(base map[string]any, ep string, v any) []byte {
	switch ep {
	case OllamaChatPath:
		return withOption(base, "num_predict", v)
	case ResponsesPath:
		return jsonWith(base, "max_output_tokens", v)
	}
	return jsonWith(base, "max_tokens", v)
}

// withSampling is base with a sampling field set to v, in ep's place for it.
func withSampling(base map[string]any, ep, key string, v any) []byte {
	if ep == OllamaChatPath {
		return withOption(base, key, v)
	}
	return jsonWith(base, key, v)
}

// protocolMalformedKinds are the defects sent to the other protocols'
// endpoints (the generic ones of malformedKinds apply to them too); on
// lists the endpoints each applies to.
var protocolMalformedKinds = []malformedKind{
	{name: "wrong-type-max-tokens", on: []string{ResponsesPath, MessagesPath, OllamaChatPath},
		build: func(base map[string]any, ep string, _ *rand.Rand) []byte { return withLimit(base, ep, "ten") }},
	{name: "huge-max-tokens", on: []string{ResponsesPath, MessagesPath, OllamaChatPath},
		build: func(base map[string]any, ep string, _ *rand.Rand) []byte {
			return []byte(strings.Replace(string(withLimit(base, ep, "@")), `"@"`, "9223372036854775807", 1))
		}},
	{name: "zero-max-tokens", on: []string{ResponsesPath, MessagesPath},
		build: func(base map[string]any, ep string, _ *rand.Rand) []byte { return withLimit(base, ep, 0) }},
	{name: "missing-max-tokens", on: []string{MessagesPath},
		build: func(base map[string]any, _ string, _ *rand.Rand) []byte { return jsonWith(base, "max_tokens", nil) }},
	{name: "negative-temperature", on: []string{ResponsesPath, MessagesPath, OllamaChatPath},
		build: func(base map[string]any, ep string, _ *rand.Rand) []byte {
			return withSampling(base, ep, "temperature", -1)
		}},
	{name: "top-p-above-1", on: []string{ResponsesPath, MessagesPath, OllamaChatPath},
		build: func(base map[string]any, ep string, _ *rand.Rand) []byte { return withSampling(base, ep, "top_p", 2) }},
	{name: "wrong-type-stop", on: []string{MessagesPath, OllamaChatPath},
		build: func(base map[string]any, ep string, _ *rand.Rand) []byte {
			if ep == OllamaChatPath {
				return withOption(base, "stop", 5)
			}
			return jsonWith(base, "stop_sequences", 5)
		}},
	{name: "empty-stop-string", on: []string{MessagesPath},
		build: func(base map[string]any, _ string, _ *rand.Rand) []byte {
			return jsonWith(base, "stop_sequences", []string{""})
		}},
	{name: "wrong-type-stream", on: []string{ResponsesPath, MessagesPath, OllamaChatPath},
		build: func(base map[string]any, _ string, _ *rand.Rand) []byte { return jsonWith(base, "stream", "yes") }},
	{name: "empty-messages", on: []string{ResponsesPath, MessagesPath},
		build: func(base map[string]any, ep string, _ *rand.Rand) []byte {
			return jsonWith(base, promptField(ep), []string{})
		}},
	{name: "bad-role", on: []string{ResponsesPath, MessagesPath, OllamaChatPath},
		build: func(base map[string]any, ep string, _ *rand.Rand) []byte {
			return jsonWith(base, promptField(ep), []map[string]string{{"role": "wizard", "content": "hi"}})
		}},
	{name: "unknown-option", on: []string{OllamaChatPath},
		build: func(base map[string]any, _ string, _ *rand.Rand) []byte { return withOption(base, "frobnicate", 11) }},
	{name: "num-ctx-too-large", on: []string{OllamaChatPath},
		build: func(base map[string]any, _ string, _ *rand.Rand) []byte { return withOption(base, "num_ctx", 1<<40) }},
	{name: "unknown-previous-response", on: []string{ResponsesPath},
		build: func(base map[string]any, _ string, _ *rand.Rand) []byte {
			return jsonWith(base, "previous_response_id", "resp_soak_never_stored")
		}},
	{name: "empty-input", on: []string{EmbeddingsPath},
		build: func(base map[string]any, _ string, _ *rand.Rand) []byte { return jsonWith(base, "input", "") }},
	{name: "empty-input-item", on: []string{EmbeddingsPath},
		build: func(base map[string]any, _ string, _ *rand.Rand) []byte {
			return jsonWith(base, "input", []string{"a", ""})
		}},
	{name: "token-id-out-of-vocab", on: []string{EmbeddingsPath},
		build: func(base map[string]any, _ string, _ *rand.Rand) []byte {
			return jsonWith(base, "input", []int64{1, 1 << 30})
		}},
	{name: "negative-dimensions", on: []string{EmbeddingsPath},
		build: func(base map[string]any, _ string, _ *rand.Rand) []byte { return jsonWith(base, "dimensions", -1) }},
	{name: "bad-encoding-format", on: []string{EmbeddingsPath},
		build: func(base map[string]any, _ string, _ *rand.Rand) []byte {
			return jsonWith(base, "encoding_format", "hex")
		}},
}

// protocolResult is the part of a non-streamed answer of the other
// protocols the soak checks.
type protocolResult struct {
	Object     string `json:"object"`
	Status     string `json:"status"`      // Responses
	Type       string `json:"type"`        // Messages
	StopReason string `json:"stop_reason"` // Messages
	Done       bool   `json:"done"`        // Ollama
	DoneReason string `json:"done_reason"` // Ollama
	Data       []struct {
		Index     int             `json:"index"`
		Embedding json.RawMessage `json:"embedding"`
	} `json:"data"` // embeddings
}

// readProtocolJSON checks a non-streamed answer of the other protocols: a
// finished response, message or Ollama reply, or one embedding per input.
func readProtocolJSON(ctx context.Context, req soakRequest, body io.Reader) soakResult {
	b, err := io.ReadAll(body)
	if err != nil {
		return failed(ctx, err, phaseReadingBody)
	}
	var r protocolResult
	if err := json.Unmarshal(b, &r); err != nil {
		return soakResult{Outcome: Lost, Reason: fmt.Sprintf("bad JSON response: %v", err)}
	}
	var bad string
	switch req.Endpoint {
	case ResponsesPath:
		if r.Object != "response" || (r.Status != "completed" && r.Status != "incomplete") {
			bad = fmt.Sprintf("response object %q with status %q, want completed or incomplete", r.Object, r.Status)
		}
	case MessagesPath:
		if r.Type != "message" || r.StopReason == "" {
			bad = fmt.Sprintf("message of type %q with stop_reason %q", r.Type, r.StopReason)
		}
	case OllamaChatPath:
		if !r.Done || r.DoneReason == "" {
			bad = fmt.Sprintf("Ollama reply with done %v, done_reason %q", r.Done, r.DoneReason)
		}
	case EmbeddingsPath:
		seen := map[int]bool{}
		for _, d := range r.Data {
			if len(d.Embedding) > 2 {
				seen[d.Index] = true
			}
		}
		if len(r.Data) != req.Choices || len(seen) != req.Choices {
			bad = fmt.Sprintf("%d embeddings (%d distinct, non-empty) for %d inputs", len(r.Data), len(seen), req.Choices)
		}
	}
	if bad != "" {
		return soakResult{Outcome: Lost, Reason: bad}
	}
	return soakResult{Outcome: Completed}
}

// protocolEvent is the part of a Responses or Messages stream event, or an
// Ollama NDJSON line, the soak reads.
type protocolEvent struct {
	Type    string          `json:"type"`
	Code    string          `json:"code"`    // Responses' error event
	Message json.RawMessage `json:"message"` // Responses' error event: a string; an object elsewhere
	Error   json.RawMessage `json:"error"`   // Messages: {"type", "message"}; Ollama: a string
	// Delta is Messages' {"stop_reason", …} in message_delta, a string
	// in Responses' deltas.
	Delta      json.RawMessage `json:"delta"`
	Done       bool            `json:"done"`        // Ollama
	DoneReason string          `json:"done_reason"` // Ollama
}

// streamEnd names what ends a complete stream of each protocol.
var streamEnd = map[string]string{ResponsesPath: "response.completed", MessagesPath: "message_stop",
	OllamaChatPath: `a line with "done": true`}

// readProtocolStream reads a Responses or Messages SSE stream, or an
// Ollama NDJSON stream, to its end. Complete: a Responses stream whose
// last event is response.completed or response.incomplete; a Messages
// stream with a message_delta carrying a stop_reason, then message_stop;
// an Ollama stream whose last line has done true and a done_reason. An
// error event is a rejection, or a server error when Responses' code is
// server_error or Anthropic's type api_error (an Ollama error line has no
// type: a rejection). Chunks are the text deltas: a mid-stream hang-up
// cancels after the first and req.HangupChunks more.
func readProtocolStream(ctx context.Context, req soakRequest, body io.Reader, cancel context.CancelCauseFunc,
	start time.Time) soakResult {
	var res soakResult
	next := newSSEStream(body, false).next
	if req.Endpoint == OllamaChatPath {
		next = ndjsonLines(body)
	}
	chunks, ended, stopped := 0, false, false
	for {
		data, err := next()
		if err == io.EOF && ended {
			break
		}
		if err == nil && ended {
			return soakResult{Outcome: Lost, TTFC: res.TTFC, Reason: fmt.Sprintf("an event after %s: %.80q", streamEnd[req.Endpoint], data)}
		}
		if err != nil {
			phase := phaseMidStream
			if chunks == 0 {
				phase = phaseBeforeChunk
			}
			switch {
			case err == errSSEDone:
				err = fmt.Errorf("[DONE] in a %s stream, before %s", req.Endpoint, streamEnd[req.Endpoint])
			case err == io.EOF && context.Cause(ctx) == nil:
				err = fmt.Errorf("the stream ended without %s after %d chunks", streamEnd[req.Endpoint], chunks)
			}
			r := failed(ctx, err, phase)
			r.TTFC = res.TTFC
			return r
		}
		var ev protocolEvent
		if err := json.Unmarshal([]byte(data), &ev); err != nil {
			return soakResult{Outcome: Lost, Reason: fmt.Sprintf("bad event %.80q: %v", data, err)}
		}
		if r, ok := protocolError(req.Endpoint, ev); ok {
			r.TTFC = res.TTFC
			return r
		}
		chunk := false
		switch req.Endpoint {
		case ResponsesPath:
			chunk = strings.HasSuffix(ev.Type, ".delta")
			ended = ev.Type == "response.completed" || ev.Type == "response.incomplete"
		case MessagesPath:
			chunk = ev.Type == "content_block_delta"
			if ev.Type == "message_delta" {
				var d struct {
					StopReason string `json:"stop_reason"`
				}
				json.Unmarshal(ev.Delta, &d)
				stopped = stopped || d.StopReason != ""
			}
			if ev.Type == "message_stop" {
				if !stopped {
					return soakResult{Outcome: Lost, TTFC: res.TTFC, Reason: "message_stop without a message_delta stop_reason"}
				}
				ended = true
			}
		case OllamaChatPath:
			chunk = !ev.Done
			if ev.Done {
				if ev.DoneReason == "" {
					return soakResult{Outcome: Lost, TTFC: res.TTFC, Reason: "the last Ollama line has no done_reason"}
				}
				ended = true
			}
		}
		if !chunk {
			continue
		}
		if chunks == 0 {
			res.TTFC = time.Since(start)
		}
		chunks++
		if req.Hangup == HangupMidStream && chunks > req.HangupChunks {
			cancel(errHangup)
			return soakResult{Outcome: Aborted, Reason: phaseMidStream, TTFC: res.TTFC}
		}
	}
	res.Outcome = Completed
	return res
}

// protocolError classifies an error event of ep's stream (ok false when
// ev is none).
func protocolError(ep string, ev protocolEvent) (soakResult, bool) {
	switch {
	case ep == OllamaChatPath && len(ev.Error) > 0:
		var msg string
		json.Unmarshal(ev.Error, &msg)
		return soakResult{Outcome: Rejected, Reason: "stream error line: " + msg}, true
	case ev.Type == "error" && ep == ResponsesPath:
		var msg string
		json.Unmarshal(ev.Message, &msg)
		r := soakResult{Outcome: Rejected, Reason: "stream error event: " + msg}
		if ev.Code == "server_error" {
			r.Outcome, r.ServerError = Lost, true
		}
		return r, true
	case ev.Type == "error":
		var e struct{ Type, Message string }
		json.Unmarshal(ev.Error, &e)
		r := soakResult{Outcome: Rejected, Reason: "stream error event: " + e.Message}
		if e.Type == "api_error" {
			r.Outcome, r.ServerError = Lost, true
		}
		return r, true
	case ev.Type == "response.failed":
		return soakResult{Outcome: Lost, ServerError: true, Reason: "response.failed without an error event"}, true
	}
	return soakResult{}, false
}

// ndjsonLines returns a reader of body's non-empty lines; io.EOF at the
// end (a last line without its newline is a stream cut short: its read
// error).
func ndjsonLines(body io.Reader) func() (string, error) {
	sse := newSSEStream(body, false)
	return func() (string, error) {
		for {
			line, err := sse.r.ReadString('\n')
			if err != nil {
				if err == io.EOF && line != "" {
					err = io.ErrUnexpectedEOF
				}
				return "", err
			}
			if line = strings.TrimSpace(line); line != "" {
				return line, nil
			}
		}
	}
}
