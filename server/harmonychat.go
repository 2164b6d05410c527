package server

import (
	"slices"
	"strings"

	"pagoda/engine"
)

// The harmony parser's part in a chat request (harmony.go): it reads reasoning, content and
// tool calls at once, in place of the reasoning parser and the tool-call parser.

// harmonyChosen reports whether a model speaks harmony: the command line names its parsers
// (vLLM's openai_gptoss reasoning parser or openai tool-call parser), or names none and the
// architecture is gpt-oss or the chat template writes harmony's <|channel|>.
func harmonyChosen(opts Options, template, arch string) bool {
	if opts.ReasoningParser == harmonyReasoningParser || opts.ToolCallParser == harmonyToolParser {
		return true
	}
	return opts.ReasoningParser == "" && opts.ToolCallParser == "" &&
		(arch == "gpt-oss" || strings.Contains(template, hChannel))
}

// The parser names (vLLM's) that select harmony.
const (
	harmonyReasoningParser = "openai_gptoss"
	harmonyToolParser      = "openai"
)

// harmonyMessage is the assistant message of a finished harmony output.
func (c *chatRun) harmonyMessage(o engine.CompletionOutput) chatOutput {
	h := parseHarmony(o.Text)
	var m chatOutput
	if c.tools.mode == toolsAuto && len(h.calls) > 0 {
		m = chatOutput{Role: "assistant"}
		for _, f := range h.calls {
			m.ToolCalls = append(m.ToolCalls, toolCall{ID: newToolCallID(), Type: "function", Function: f})
		}
		if h.content != "" {
			m.Content = ptr(h.content)
		}
	} else {
		text := h.content + callsText(h.calls)
		m = c.answerMessage(text)
		if text == "" && h.thought && len(m.ToolCalls) == 0 {
			m.Content = nil // as vLLM: the model thought and gave no answer (yet)
		}
	}
	if h.reasoning != "" && c.includeReasoning() {
		m.ReasoningContent = &h.reasoning
	}
	return m
}

// callsText writes calls back as harmony when the request allows none (tool_choice none or
// no tools): the model's text, not calls, is the answer.
func callsText(calls []toolCallFunc) string {
	var b strings.Builder
	for _, f := range calls {
		b.WriteString(hChannel + "commentary to=functions." + f.Name + " " + hConstrain + "json" + hMessage + f.Arguments + hCall)
	}
	return b.String()
}

// harmonyStream is the stream state of one choice.
type harmonyStream struct {
	split  harmonySplit
	answer strings.Builder // tool_choice required or named: the content, held to the end
}

// harmonyChunk is the chunk of an output delta o of a harmony choice (nil: nothing to
// send): its reasoning and content as they come, each tool call whole once its arguments
// are complete.
func (c *chatRun) harmonyChunk(o engine.CompletionOutput) any {
	if c.hstreams == nil {
		c.hstreams = map[int]*harmonyStream{}
	}
	s := c.hstreams[o.Index]
	if s == nil {
		s = &harmonyStream{}
		c.hstreams[o.Index] = s
	}
	p := s.split.push(o.Text, o.FinishReason != "")
	ch := chatChunkChoice{Index: o.Index, finish: finishOf(o)}
	switch c.tools.mode {
	case toolsAuto:
		for _, f := range p.calls {
			ch.Delta.ToolCalls = append(ch.Delta.ToolCalls,
				toolCallDelta{Index: s.split.calls - len(p.calls) + len(ch.Delta.ToolCalls), ID: newToolCallID(), Type: "function", Function: f})
		}
		if p.content != "" {
			ch.Delta.Content = &p.content
		}
		if o.FinishReason != "" && s.split.calls > 0 {
			ch.FinishReason = ptr("tool_calls")
		}
	case toolsNone:
		if text := p.content + callsText(p.calls); text != "" {
			ch.Delta.Content = &text
		}
	default: // required, named: the calls are read from the whole content at its end
		s.answer.WriteString(p.content + callsText(p.calls))
		if o.FinishReason != "" {
			held := c.heldChunk(engine.CompletionOutput{Index: o.Index, Text: s.answer.String(), FinishReason: o.FinishReason, StopReason: o.StopReason})
			ch.Delta, ch.finish = held.Choices[0].Delta, held.Choices[0].finish
		}
	}
	if p.reasoning != "" && c.includeReasoning() {
		ch.Delta.ReasoningContent = &p.reasoning
	}
	if c.req.Logprobs && len(o.Logprobs) > 0 {
		ch.Logprobs = chatTokenLogprobs(c.b.tok, o.Logprobs)
	}
	if ch.Delta.Content == nil && ch.Delta.ReasoningContent == nil && ch.Delta.ToolCalls == nil &&
		ch.FinishReason == nil && ch.Logprobs == nil {
		return nil
	}
	return c.chunk(ch)
}

// harmonyUsage adds the reasoning tokens of outs to u.
func (c *chatRun) harmonyUsage(u *usage, outs []engine.CompletionOutput) *usage {
	n := 0
	for _, o := range outs {
		end := 0
		if s := c.hstreams[o.Index]; s != nil {
			end = s.split.reasoningEnd
		} else {
			end = parseHarmony(o.Text).reasoningEnd
		}
		n += harmonyReasoningTokens(c.b.tok, o.TokenIDs, end)
	}
	u.CompletionTokensDetails = &completionDetails{ReasoningTokens: n}
	return u
}

// planHarmony delays a grammar (structured outputs, tool_choice required or named) to the
// final channel's body: the analysis is free, the answer constrained.
func (c *chatRun) planHarmony(p *engine.SamplingParams) {
	if p.Grammar != nil {
		p.ReasoningEnd = slices.Clone(c.b.harmony.finalIDs)
	}
}

// planHarmony sets b.harmony when the model speaks harmony (harmonyChosen). A model chosen by
// its architecture or template whose vocabulary lacks harmony's markers keeps the other
// parsers, with a warning; one chosen on the command line is an error.
func (s *Server) planHarmony(b *backend, template, arch string) error {
	if !harmonyChosen(s.opts, template, arch) {
		return nil
	}
	hp, err := newHarmonyParser(b.tok)
	if err != nil {
		if s.opts.ReasoningParser == harmonyReasoningParser || s.opts.ToolCallParser == harmonyToolParser {
			return err
		}
		s.opts.Logger.Printf("WARNING %v; harmony output is not parsed", err)
		return nil
	}
	b.harmony = hp
	s.opts.Logger.Print("INFO harmony (gpt-oss): the analysis channel goes to reasoning_content, functions calls to tool_calls, the final channel to content")
	return nil
}
