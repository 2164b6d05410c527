package server

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
	"time"
)

// ollamaSink turns the chunks of a chat stream into Ollama's answer: with
// stream, one NDJSON line per chunk that says something ({"message":
// {"role", "content", "thinking"}} for chat, {"response", "thinking"} for
// generate), the tool calls whole in one line once the output ends, then a
// final line with done true, done_reason, the counts and the durations
// (nanoseconds) and, for generate, the context; without stream, the same
// final object holding the whole message. An error mid-stream is a line
// {"error": …}, as Ollama writes it.
type ollamaSink struct {
	w        http.ResponseWriter
	rc       *http.ResponseController
	t        *tracker
	model    string
	stream   bool
	generate bool

	start, first time.Time
	content      strings.Builder // without stream: the whole answer
	thinking     strings.Builder
	calls        []ollamaToolCall
	args         []strings.Builder // the calls' arguments as they arrive
	logprobs     []ollamaLogprob
	finish       string
	fail         *errorDetail
	began        bool  // the response's header was written
	err          error // a write failed: the client left
}

// ollamaLogprob is Ollama's logprob of a token, with its alternatives.
type ollamaLogprob struct {
	Token       string          `json:"token"`
	Logprob     float64         `json:"logprob"`
	Bytes       []int           `json:"bytes,omitempty"`
	TopLogprobs []ollamaTopProb `json:"top_logprobs,omitempty"`
}

type ollamaTopProb struct {
	Token   string  `json:"token"`
	Logprob float64 `json:"logprob"`
	Bytes   []int   `json:"bytes,omitempty"`
}

// ollamaTime is Ollama's created_at.
func ollamaTime(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

func (s *ollamaSink) event(v any) bool {
	switch v := v.(type) {
	case errorBody:
		s.fail = &v.Error
		if s.stream {
			return s.line(map[string]string{"error": v.Error.Message})
		}
	case chatChunk:
		if len(v.Choices) == 0 {
			return s.err == nil // the usage chunk: the tracker counts
		}
		return s.choice(v.Choices[0])
	}
	return s.err == nil
}

// choice takes one chunk's choice.
func (s *ollamaSink) choice(ch chatChunkChoice) bool {
	d := ch.Delta
	var content, thinking string
	if d.Content != nil {
		content = *d.Content
	}
	if d.ReasoningContent != nil {
		thinking = *d.ReasoningContent
	}
	for _, tc := range d.ToolCalls {
		for len(s.calls) <= tc.Index {
			s.calls = append(s.calls, ollamaToolCall{Function: ollamaToolFunction{Index: len(s.calls)}})
			s.args = append(s.args, strings.Builder{})
		}
		c := &s.calls[tc.Index]
		if tc.ID != "" {
			c.ID = tc.ID
		}
		if tc.Function.Name != "" {
			c.Function.Name = tc.Function.Name
		}
		s.args[tc.Index].WriteString(tc.Function.Arguments)
	}
	var lps []ollamaLogprob
	if ch.Logprobs != nil {
		for _, lp := range ch.Logprobs.Content {
			o := ollamaLogprob{Token: lp.Token, Logprob: lp.Logprob, Bytes: lp.Bytes}
			for _, top := range lp.TopLogprobs {
				o.TopLogprobs = append(o.TopLogprobs, ollamaTopProb{Token: top.Token, Logprob: top.Logprob, Bytes: top.Bytes})
			}
			lps = append(lps, o)
		}
	}
	if ch.FinishReason != nil {
		s.finish = *ch.FinishReason
	}
	if content == "" && thinking == "" && len(lps) == 0 && ch.FinishReason == nil {
		return s.err == nil // the opening role chunk
	}
	if s.first.IsZero() {
		s.first = time.Now()
	}
	if !s.stream {
		s.content.WriteString(content)
		s.thinking.WriteString(thinking)
		s.logprobs = append(s.logprobs, lps...)
		return true
	}
	if content == "" && thinking == "" && len(lps) == 0 {
		return s.err == nil
	}
	return s.line(s.object(content, thinking, nil, lps, false))
}

// toolCalls are the calls, their arguments as JSON objects.
func (s *ollamaSink) toolCalls() []ollamaToolCall {
	for i := range s.calls {
		args := bytes.TrimSpace([]byte(s.args[i].String()))
		if !json.Valid(args) || len(args) == 0 || args[0] != '{' {
			args = []byte("{}") // Ollama's arguments are an object
		}
		s.calls[i].Function.Arguments = args
	}
	return s.calls
}

// object is one line (or the whole response) with what it carries; final
// adds done, the reason, the counts and the durations.
func (s *ollamaSink) object(content, thinking string, calls []ollamaToolCall, lps []ollamaLogprob, final bool) map[string]any {
	o := map[string]any{"model": s.model, "created_at": ollamaTime(time.Now()), "done": final}
	if s.generate {
		o["response"] = content
		if thinking != "" {
			o["thinking"] = thinking
		}
	} else {
		o["message"] = ollamaMessage{Role: "assistant", Content: content, Thinking: thinking, ToolCalls: calls}
	}
	if len(lps) > 0 {
		o["logprobs"] = lps
	}
	if !final {
		return o
	}
	now := time.Now()
	first := s.first
	if first.IsZero() {
		first = now
	}
	reason := s.finish
	if reason == "tool_calls" || reason == "" {
		reason = "stop"
	}
	o["done_reason"] = reason
	o["total_duration"] = now.Sub(s.start).Nanoseconds()
	o["load_duration"] = 0
	o["prompt_eval_count"] = len(s.t.prompt)
	o["prompt_eval_duration"] = first.Sub(s.start).Nanoseconds()
	o["eval_count"] = s.t.completionTokens()
	o["eval_duration"] = now.Sub(first).Nanoseconds()
	if s.generate {
		ctx := append([]int32(nil), s.t.prompt...)
		if len(s.t.outs) > 0 {
			ctx = append(ctx, s.t.outs[0].TokenIDs...)
		}
		o["context"] = ctx
	}
	return o
}

func (s *ollamaSink) done() bool {
	switch {
	case s.err != nil:
		return false
	case s.fail != nil && s.stream:
		return true // the error line was the last
	case s.fail != nil:
		status := http.StatusInternalServerError
		if s.fail.Type == "service_unavailable_error" {
			status = http.StatusServiceUnavailable
		}
		writeJSON(s.w, status, map[string]string{"error": s.fail.Message})
		return true
	case s.stream:
		if calls := s.toolCalls(); len(calls) > 0 && !s.line(s.object("", "", calls, nil, false)) {
			return false
		}
		return s.line(s.object("", "", nil, nil, true))
	}
	writeJSON(s.w, http.StatusOK, s.object(s.content.String(), s.thinking.String(), s.toolCalls(), s.logprobs, true))
	return true
}

// line writes one NDJSON line and flushes it.
func (s *ollamaSink) line(v any) bool {
	if s.err != nil {
		return false
	}
	if !s.began {
		s.began = true
		s.w.Header().Set("Content-Type", "application/x-ndjson")
		s.w.WriteHeader(http.StatusOK)
	}
	b, err := json.Marshal(v)
	if err != nil {
		b, _ = json.Marshal(map[string]string{"error": err.Error()})
	}
	if _, s.err = s.w.Write(append(b, '\n')); s.err == nil {
		s.err = s.rc.Flush()
	}
	return s.err == nil
}
