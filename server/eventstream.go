package server

import (
	"encoding/json"
	"fmt"
)

// Named Server-Sent Events, as the Responses and Anthropic Messages APIs
// stream them: "event: <type>" then "data: <json>" (whose own type field
// repeats the name). Neither ends with [DONE].

// sendNamed writes one event named name; it reports whether the client
// still listens.
func (s *sse) sendNamed(name string, v any) bool {
	if s.err != nil {
		return false
	}
	b, err := json.Marshal(v)
	if err != nil {
		b, _ = json.Marshal(errorBody{Error: errorDetail{Message: err.Error(), Type: "server_error"}})
	}
	if _, s.err = fmt.Fprintf(s.w, "event: %s\ndata: %s\n\n", name, b); s.err == nil {
		s.err = s.rc.Flush()
	}
	return s.err == nil
}

// chatEvents turns the events of a chat stream (the chunks of chatRun.stream,
// or an errorBody when it fails) into another protocol's: the methods of a
// sink see each chunk's one choice and the closing usage chunk.
type chatEvents struct {
	handle chatEventHandler
	failed bool
}

// chatEventHandler is what a protocol built on chat streams does with each
// part of a chat stream; each method reports whether the client still
// listens.
type chatEventHandler interface {
	reasoning(text string) bool
	content(text string) bool
	toolCall(d toolCallDelta) bool
	finish(f finish)
	setUsage(u *usage)
	fail(ae *apiError) bool
	end() bool
}

func (c *chatEvents) event(v any) bool {
	switch v := v.(type) {
	case chatChunk:
		if v.Usage != nil {
			c.handle.setUsage(v.Usage)
		}
		for _, ch := range v.Choices {
			if r := ch.Delta.ReasoningContent; r != nil && *r != "" && !c.handle.reasoning(*r) {
				return false
			}
			if t := ch.Delta.Content; t != nil && *t != "" && !c.handle.content(*t) {
				return false
			}
			for _, d := range ch.Delta.ToolCalls {
				if !c.handle.toolCall(d) {
					return false
				}
			}
			if ch.FinishReason != nil {
				c.handle.finish(ch.finish)
			}
		}
		return true
	case errorBody:
		c.failed = true
		ae := &apiError{Status: 500, Type: v.Error.Type, Message: v.Error.Message}
		if v.Error.Param != nil {
			ae.Param = *v.Error.Param
		}
		if v.Error.Code != nil {
			ae.Code = *v.Error.Code
		}
		switch ae.Type {
		case "service_unavailable_error":
			ae.Status = 503
		case "invalid_request_error":
			ae.Status = 400
		}
		return c.handle.fail(ae)
	}
	return true
}

func (c *chatEvents) done() bool {
	if c.failed {
		return true
	}
	return c.handle.end()
}
