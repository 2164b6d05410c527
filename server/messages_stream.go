package server

// messagesStream turns a chat stream into Anthropic's events:
//
//	message_start         the message, no content, usage with the prompt's tokens
//	ping
//	content_block_start   per block: thinking, text, tool_use (input {})
//	content_block_delta   thinking_delta, text_delta, input_json_delta (partial_json)
//	content_block_stop
//	message_delta         stop_reason, stop_sequence, usage (output_tokens and the input's)
//	message_stop
//
// A stream the server cuts ends with an error event in Anthropic's shape.
type messagesStream struct {
	run    *messagesRun
	out    *sse
	blocks int    // blocks started
	open   string // the type of the block being streamed, "" when none
	called bool   // a tool_use block was sent
	calls  map[int]int
	fin    finish
	usage  *usage
}

func (s *messagesStream) emit(typ string, fields map[string]any) bool {
	fields["type"] = typ
	return s.out.sendNamed(typ, fields)
}

// start sends message_start and a ping.
func (s *messagesStream) start() bool {
	msg := anthropicResponse{ID: s.run.id, Type: "message", Role: "assistant", Model: s.run.chat.b.name, Content: []any{},
		Usage: anthropicUsage{InputTokens: s.run.promptN}}
	return s.emit("message_start", map[string]any{"message": msg}) && s.emit("ping", map[string]any{})
}

// begin closes the open block and starts one of type typ.
func (s *messagesStream) begin(typ string, block any) bool {
	if !s.close() {
		return false
	}
	s.open = typ
	s.blocks++
	return s.emit("content_block_start", map[string]any{"index": s.blocks - 1, "content_block": block})
}

func (s *messagesStream) delta(delta map[string]any) bool {
	return s.emit("content_block_delta", map[string]any{"index": s.blocks - 1, "delta": delta})
}

func (s *messagesStream) reasoning(text string) bool {
	if s.open != "thinking" && !s.begin("thinking", thinkingBlock{Type: "thinking"}) {
		return false
	}
	return s.delta(map[string]any{"type": "thinking_delta", "thinking": text})
}

func (s *messagesStream) content(text string) bool {
	if s.open != "text" && !s.begin("text", textBlock{Type: "text"}) {
		return false
	}
	return s.delta(map[string]any{"type": "text_delta", "text": text})
}

func (s *messagesStream) toolCall(d toolCallDelta) bool {
	if d.ID != "" {
		if !s.begin("tool_use", toolUseBlock{Type: "tool_use", ID: toolUseID(), Name: d.Function.Name, Input: []byte("{}")}) {
			return false
		}
		s.called = true
		if s.calls == nil {
			s.calls = map[int]int{}
		}
		s.calls[d.Index] = s.blocks - 1
	}
	if i, ok := s.calls[d.Index]; !ok || i != s.blocks-1 || d.Function.Arguments == "" {
		return true
	}
	return s.delta(map[string]any{"type": "input_json_delta", "partial_json": d.Function.Arguments})
}

func (s *messagesStream) finish(f finish)   { s.fin = f }
func (s *messagesStream) setUsage(u *usage) { s.usage = u }

// close stops the open block (a thinking block first gets its empty
// signature).
func (s *messagesStream) close() bool {
	if s.open == "" {
		return true
	}
	if s.open == "thinking" && !s.delta(map[string]any{"type": "signature_delta", "signature": ""}) {
		return false
	}
	s.open = ""
	return s.emit("content_block_stop", map[string]any{"index": s.blocks - 1})
}

func (s *messagesStream) fail(ae *apiError) bool {
	return s.emit("error", anthropicError(ae))
}

// end closes the last block and sends message_delta and message_stop.
func (s *messagesStream) end() bool {
	if !s.close() {
		return false
	}
	reason, seq := s.run.stopReason(s.fin, s.called)
	u := anthropicUsageOf(s.usage)
	return s.emit("message_delta", map[string]any{"delta": map[string]any{"stop_reason": reason, "stop_sequence": seq},
		"usage": u}) && s.emit("message_stop", map[string]any{})
}
