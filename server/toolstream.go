package server

import (
	"strings"

	"pagoda/engine"
	"pagoda/tokenizer"
)

// toolStream streams one choice of a chat request that may call tools, as
// OpenAI streams them:
//
//	named     the call's id, type and name first, then the arguments as they are generated
//	auto      text as content until the output may start a call (hermes: "<tool_call>";
//	          llama3_json: a first "{" or "<|python_tag|>"), then held; at the end the
//	          calls as tool-call deltas, or the held text as content when it holds none
//	required  held to its end (the calls sit inside a JSON array)
type toolStream struct {
	sent    int  // bytes of the output sent as content or arguments
	started bool // named: the call's id, type and name were sent
	hold    bool // the rest of the output is held to its end
	hermes  *tokenizer.StopMatcher
}

// toolChunk is the event of one output delta o of a choice whose whole
// output so far is full (nil: nothing to send yet).
func (c *chatRun) toolChunk(o, full engine.CompletionOutput) any {
	if c.streams == nil {
		c.streams = map[int]*toolStream{}
	}
	s := c.streams[o.Index]
	if s == nil {
		s = &toolStream{}
		if c.tools.parser == "hermes" {
			s.hermes = tokenizer.NewStopMatcher([]string{"<tool_call>"}, false)
		}
		c.streams[o.Index] = s
	}
	switch {
	case c.tools.mode == toolsNamed:
		return c.namedChunk(s, o)
	case o.FinishReason != "" && (c.tools.mode == toolsRequired || s.sent == 0):
		return c.heldChunk(full)
	case o.FinishReason != "":
		return c.autoEnd(s, o, full)
	case c.tools.mode == toolsAuto && !s.hold:
		return c.autoText(s, o, full)
	}
	return nil
}

// namedChunk sends the arguments of a named tool choice as they come.
func (c *chatRun) namedChunk(s *toolStream, o engine.CompletionOutput) any {
	ch := chatChunkChoice{Index: o.Index, finish: finishOf(o)}
	if d := (toolCallDelta{Function: toolCallFunc{Arguments: o.Text}}); !s.started || o.Text != "" {
		if !s.started {
			d.ID, d.Type, d.Function.Name = newToolCallID(), "function", c.tools.name
			s.started = true
		}
		ch.Delta.ToolCalls = []toolCallDelta{d}
	} else if o.FinishReason == "" {
		return nil
	}
	s.sent += len(o.Text)
	if c.req.Logprobs && len(o.Logprobs) > 0 {
		ch.Logprobs = chatTokenLogprobs(c.b.tok, o.Logprobs)
	}
	return c.chunk(ch)
}

// autoText streams the text of an auto tool choice until a call may begin.
func (c *chatRun) autoText(s *toolStream, o, full engine.CompletionOutput) any {
	var text string
	switch {
	case s.hermes != nil:
		var stopped bool
		text, stopped = s.hermes.Push(o.Text)
		s.hold = stopped
	default: // llama3_json: a call is the whole output, so decide on its first character
		rest := strings.TrimLeft(full.Text, " \t\r\n")
		if rest == "" {
			return nil
		}
		if s.sent == 0 && (rest[0] == '{' || strings.HasPrefix("<|python_tag|>", rest[:min(len(rest), 14)])) {
			s.hold = true
			return nil
		}
		text = full.Text[s.sent:]
	}
	if text == "" {
		return nil
	}
	s.sent += len(text)
	ch := chatChunkChoice{Index: o.Index, Delta: chatDelta{Content: &text}}
	if c.req.Logprobs && len(o.Logprobs) > 0 {
		ch.Logprobs = chatTokenLogprobs(c.b.tok, o.Logprobs)
	}
	return c.chunk(ch)
}

// autoEnd ends an auto tool choice's stream: the calls read from the whole
// output, or the text not sent yet.
func (c *chatRun) autoEnd(s *toolStream, o, full engine.CompletionOutput) any {
	ch := chatChunkChoice{Index: o.Index, finish: finishOf(o)}
	if _, calls, ok := c.tools.calls(full.Text); ok {
		for i, tc := range calls {
			ch.Delta.ToolCalls = append(ch.Delta.ToolCalls, toolCallDelta{Index: i, ID: tc.ID, Type: tc.Type, Function: tc.Function})
		}
		ch.FinishReason = ptr("tool_calls")
	} else if rest := full.Text[min(s.sent, len(full.Text)):]; rest != "" {
		ch.Delta.Content = &rest
	}
	return c.chunk(ch)
}
