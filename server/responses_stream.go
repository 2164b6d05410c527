package server

// responsesStream turns a chat stream into the Responses API's events:
//
//	response.created, response.in_progress                 the response, in progress, no output
//	response.output_item.added                             per item: reasoning, message, function_call
//	response.content_part.added                            reasoning_text or output_text part
//	response.reasoning_text.delta / response.output_text.delta / response.function_call_arguments.delta
//	response.reasoning_text.done / response.output_text.done / response.function_call_arguments.done
//	response.content_part.done, response.output_item.done
//	response.completed (or response.incomplete at max_output_tokens)   the whole response, usage included
//
// A stream the server cuts ends with an error event and response.failed.
// Every event carries its sequence_number; items their output_index.
type responsesStream struct {
	run          *responsesRun
	out          *sse
	b            *outputBuilder
	seq          int
	open         any // the item being streamed: *reasoningItem, *messageItem or *functionCallItem
	calls        map[int]*functionCallItem
	finishReason string
	usage        *usage
}

func (s *responsesStream) emit(typ string, fields map[string]any) bool {
	fields["type"], fields["sequence_number"] = typ, s.seq
	s.seq++
	return s.out.sendNamed(typ, fields)
}

// start sends response.created and response.in_progress.
func (s *responsesStream) start() bool {
	return s.emit("response.created", map[string]any{"response": s.run.resp}) &&
		s.emit("response.in_progress", map[string]any{"response": s.run.resp})
}

// index is the output_index of the item being streamed.
func (s *responsesStream) index() int { return len(s.b.items) - 1 }

func (s *responsesStream) reasoning(text string) bool {
	it, ok := s.open.(*reasoningItem)
	if !ok {
		if !s.close() {
			return false
		}
		it = s.b.reasoning("")
		it.Content, it.Status = []reasoningText{}, "in_progress"
		s.open = it
		if !s.emit("response.output_item.added", map[string]any{"output_index": s.index(), "item": it}) ||
			!s.emit("response.content_part.added", map[string]any{"item_id": it.ID, "output_index": s.index(),
				"content_index": 0, "part": reasoningText{Type: "reasoning_text"}}) {
			return false
		}
		it.Content = []reasoningText{{Type: "reasoning_text"}}
	}
	it.Content[0].Text += text
	return s.emit("response.reasoning_text.delta", map[string]any{"item_id": it.ID, "output_index": s.index(),
		"content_index": 0, "delta": text})
}

func (s *responsesStream) content(text string) bool {
	it, ok := s.open.(*messageItem)
	if !ok {
		if !s.close() {
			return false
		}
		it = s.openMessage()
		if it == nil {
			return false
		}
	}
	it.Content[0].Text += text
	return s.emit("response.output_text.delta", map[string]any{"item_id": it.ID, "output_index": s.index(),
		"content_index": 0, "delta": text, "logprobs": []any{}})
}

// openMessage starts a message item (nil: the client left).
func (s *responsesStream) openMessage() *messageItem {
	it := s.b.message("")
	part := it.Content[0]
	it.Content, it.Status = []outputText{}, "in_progress"
	s.open = it
	if !s.emit("response.output_item.added", map[string]any{"output_index": s.index(), "item": it}) ||
		!s.emit("response.content_part.added", map[string]any{"item_id": it.ID, "output_index": s.index(),
			"content_index": 0, "part": part}) {
		return nil
	}
	it.Content = []outputText{part}
	return it
}

func (s *responsesStream) toolCall(d toolCallDelta) bool {
	if d.ID != "" {
		if !s.close() {
			return false
		}
		it := s.b.call(d.ID, d.Function.Name, "")
		it.Status = "in_progress"
		s.open = it
		if s.calls == nil {
			s.calls = map[int]*functionCallItem{}
		}
		s.calls[d.Index] = it
		if !s.emit("response.output_item.added", map[string]any{"output_index": s.index(), "item": it}) {
			return false
		}
	}
	it := s.calls[d.Index]
	if it == nil || d.Function.Arguments == "" {
		return true
	}
	it.Arguments += d.Function.Arguments
	return s.emit("response.function_call_arguments.delta", map[string]any{"item_id": it.ID,
		"output_index": s.itemIndex(it), "delta": d.Function.Arguments})
}

// itemIndex is the output_index of it.
func (s *responsesStream) itemIndex(it any) int {
	for i, x := range s.b.items {
		if x == it {
			return i
		}
	}
	return -1
}

func (s *responsesStream) finish(f finish) {
	if f.FinishReason != nil {
		s.finishReason = *f.FinishReason
	}
}

func (s *responsesStream) setUsage(u *usage) { s.usage = u }

// close ends the item being streamed, if any.
func (s *responsesStream) close() bool {
	if s.open == nil {
		return true
	}
	status := "completed"
	if s.finishReason == "length" {
		status = "incomplete"
	}
	i := s.itemIndex(s.open)
	ok := true
	switch it := s.open.(type) {
	case *reasoningItem:
		it.Status = ""
		part := it.Content[0]
		ok = s.emit("response.reasoning_text.done", map[string]any{"item_id": it.ID, "output_index": i,
			"content_index": 0, "text": part.Text}) &&
			s.emit("response.content_part.done", map[string]any{"item_id": it.ID, "output_index": i,
				"content_index": 0, "part": part})
	case *messageItem:
		it.Status = status
		part := it.Content[0]
		ok = s.emit("response.output_text.done", map[string]any{"item_id": it.ID, "output_index": i,
			"content_index": 0, "text": part.Text, "logprobs": []any{}}) &&
			s.emit("response.content_part.done", map[string]any{"item_id": it.ID, "output_index": i,
				"content_index": 0, "part": part})
	case *functionCallItem:
		it.Status = status
		ok = s.emit("response.function_call_arguments.done", map[string]any{"item_id": it.ID, "output_index": i,
			"arguments": it.Arguments, "name": it.Name})
	}
	item := s.open
	s.open = nil
	return ok && s.emit("response.output_item.done", map[string]any{"output_index": i, "item": item})
}

func (s *responsesStream) fail(ae *apiError) bool {
	resp := s.run.resp
	resp.Status, resp.Error = "failed", &responseError{Code: "server_error", Message: ae.Message}
	resp.Output = s.b.items
	fields := map[string]any{"code": ae.Code, "message": ae.Message, "param": nil}
	if ae.Code == "" {
		fields["code"] = ae.Type
	}
	if ae.Param != "" {
		fields["param"] = ae.Param
	}
	return s.emit("error", fields) && s.emit("response.failed", map[string]any{"response": resp})
}

// end closes the last item (a response with no item gets an empty message,
// as a whole one does) and sends the whole response.
func (s *responsesStream) end() bool {
	if !s.close() {
		return false
	}
	if len(s.b.items) == 0 {
		if s.openMessage() == nil || !s.close() {
			return false
		}
	}
	s.run.complete(s.b, s.finishReason, s.usage)
	typ := "response.completed"
	if s.run.resp.Status == "incomplete" {
		typ = "response.incomplete"
	}
	return s.emit(typ, map[string]any{"response": s.run.resp})
}
