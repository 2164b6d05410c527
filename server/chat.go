package server

import (
	"context"
	"net/http"
	"time"

	"pagoda/engine"
	"pagoda/sample"
)

// chat serves POST /v1/chat/completions.
func (b *backend) chat(w http.ResponseWriter, r *http.Request) error {
	var req chatRequest
	if err := b.decodeRequest(w, r, &req); err != nil {
		return err
	}
	c, prompt, p, aerr := b.planChat(&req, "chatcmpl-"+baseID(r))
	if aerr != nil {
		return aerr
	}
	return b.answer(w, r, c.id, c, []promptInput{prompt}, p, &req.samplingFields)
}

// planChat validates a chat request and prepares its answer: the run that
// answers it (named id), its prompt and its sampling parameters. The APIs
// built on chat completions (responses.go, messages.go) convert their
// requests into a chatRequest and answer through planChat too.
func (b *backend) planChat(req *chatRequest, id string) (*chatRun, promptInput, engine.SamplingParams, *apiError) {
	maxTokens := req.MaxTokens
	if req.MaxCompletionTokens != nil {
		maxTokens = req.MaxCompletionTokens
	}
	p, aerr := req.samplingParams(b.defaults, maxTokens, 0, &b.grammars) // 0: up to the model length
	if aerr != nil {
		return nil, promptInput{}, p, aerr
	}
	plan, aerr := planTools(req, b.toolParser)
	if aerr != nil {
		return nil, promptInput{}, p, aerr
	}
	if g, aerr := plan.grammar(&b.grammars); aerr != nil {
		return nil, promptInput{}, p, aerr
	} else if g != nil {
		if p.Grammar != nil {
			return nil, promptInput{}, p, badRequest("tool_choice", "tool_choice %s cannot be combined with another structured-output constraint", plan.mode)
		}
		p.Grammar = g
	}
	if aerr := setChatLogprobs(req, &p); aerr != nil {
		return nil, promptInput{}, p, aerr
	}
	prompt, aerr := b.chatPrompt(req)
	if aerr != nil {
		return nil, promptInput{}, p, aerr
	}
	c := &chatRun{b: b, req: req, id: id, created: time.Now().Unix(), n: p.N, tools: plan, think: b.reasoning}
	if b.harmony != nil {
		c.planHarmony(&p)
	} else {
		c.planReasoning(prompt.text, &p)
	}
	if aerr := c.planThinkingBudget(&p); aerr != nil {
		return nil, promptInput{}, p, aerr
	}
	return c, prompt, p, nil
}

// setChatLogprobs maps logprobs (bool) and top_logprobs (count) onto p.
func setChatLogprobs(req *chatRequest, p *engine.SamplingParams) *apiError {
	top := 0
	if req.TopLogprobs != nil {
		top = *req.TopLogprobs
		if top < 0 || top > sample.MaxLogprobs {
			return badRequest("top_logprobs", "top_logprobs must be in [0, %d], got %d", sample.MaxLogprobs, top)
		}
		if top > 0 && !req.Logprobs {
			return badRequest("top_logprobs", "top_logprobs needs logprobs: true")
		}
	}
	p.ReturnLogprobs, p.Logprobs = req.Logprobs, top
	return nil
}

// chatRun is one chat request being answered.
type chatRun struct {
	b       *backend
	req     *chatRequest
	id      string
	created int64
	n       int
	tools   *toolPlan
	streams map[int]*toolStream // stream: per choice, when tools may be called
	think   *reasoningParser    // nil: no reasoning parser
	start   splitState          // where the output begins (think set)
	splits  map[int]*choiceSplit
	// hstreams: stream, per choice, when the model speaks harmony (b.harmony set).
	hstreams map[int]*harmonyStream
}

// response is the answer to a request without stream: its one prompt's
// choices.
func (c *chatRun) response(ts []*tracker) any {
	t := ts[0]
	resp := chatResponse{response: response[chatChoice]{ID: c.id, Object: "chat.completion", Created: c.created,
		Model: c.b.name, Usage: c.reasoningUsage(totalUsage([]*tracker{t}), t.outs)}}
	if c.req.PromptLogprobs != nil {
		resp.PromptLogprobs = vllmPromptLogprobs(c.b.tok, t.prompt, t.promptLP, *c.req.PromptLogprobs)
	}
	for _, o := range t.outs {
		ch := chatChoice{Index: o.Index, Message: c.message(o), finish: finishOf(o)}
		if c.callsFinish(ch.Message.ToolCalls) {
			ch.FinishReason = ptr("tool_calls")
		}
		if c.req.Logprobs {
			ch.Logprobs = chatTokenLogprobs(c.b.tok, o.Logprobs)
		}
		resp.Choices = append(resp.Choices, ch)
	}
	return resp
}

// message is the assistant message of a finished output: its reasoning,
// if a reasoning parser runs, and its answer.
func (c *chatRun) message(o engine.CompletionOutput) chatOutput {
	if c.b.harmony != nil {
		return c.harmonyMessage(o)
	}
	if c.think == nil {
		return c.answerMessage(o.Text)
	}
	reasoning, content, thought := c.think.split(o.Text, c.start)
	m := c.answerMessage(content)
	if content == "" && thought {
		m.Content = nil // as vLLM: the model thought and gave no answer (yet)
	}
	if reasoning != "" && c.includeReasoning() {
		m.ReasoningContent = &reasoning
	}
	return m
}

// answerMessage is the message of an answer's text: the text, or the tool
// calls read from it (content null when nothing else was said).
func (c *chatRun) answerMessage(text string) chatOutput {
	content, calls, ok := c.tools.calls(text)
	if !ok {
		return chatOutput{Role: "assistant", Content: ptr(text)}
	}
	m := chatOutput{Role: "assistant", ToolCalls: calls}
	if content != "" {
		m.Content = ptr(content)
	}
	return m
}

// callsFinish reports whether a choice answered with calls finishes with
// "tool_calls": as in OpenAI's API and vLLM, for auto and required tool
// choice; a named tool choice keeps the output's own reason ("stop").
func (c *chatRun) callsFinish(calls []toolCall) bool {
	return calls != nil && c.tools.mode != toolsNamed
}

func ptr[T any](v T) *T { return &v }

// stream sends each choice's role first, then one chunk per output delta:
// its reasoning part, if a reasoning parser runs, and its answer part (see
// toolStream when tools may be called).
func (c *chatRun) stream(ctx context.Context, out *sse, ts []*tracker) {
	empty := ""
	for i := range c.n {
		if !out.send(c.chunk(chatChunkChoice{Index: i, Delta: chatDelta{Role: "assistant", Content: &empty}})) {
			return
		}
	}
	ok := c.b.relay(ctx, out, ts, func(_ int, o engine.CompletionOutput) any {
		if c.b.harmony != nil {
			return c.harmonyChunk(o)
		}
		full := ts[0].outs[o.Index]
		var reasoning string
		if c.think != nil {
			o, full, reasoning = c.splitDelta(o, full)
		}
		var v any
		switch {
		case c.tools.mode == toolsNone:
			v = c.textChunk(o)
		case c.think == nil || o.Text != "" || o.FinishReason != "":
			v = c.toolChunk(o, full) // not before the answer begins: a named call's header waits for it
		}
		return c.addReasoning(v, o, reasoning)
	})
	if !ok {
		return
	}
	if c.req.includeUsage() {
		u := c.chunk()
		u.Usage = c.reasoningUsage(totalUsage(ts), ts[0].outs)
		out.send(u)
	}
	out.done()
}

// textChunk is the chunk of an output delta o without tools (nil: nothing
// to send).
func (c *chatRun) textChunk(o engine.CompletionOutput) any {
	ch := chatChunkChoice{Index: o.Index, finish: finishOf(o)}
	if o.Text != "" {
		text := o.Text
		ch.Delta.Content = &text
	}
	if c.req.Logprobs && len(o.Logprobs) > 0 {
		ch.Logprobs = chatTokenLogprobs(c.b.tok, o.Logprobs)
	}
	if ch.Delta.Content == nil && ch.FinishReason == nil && ch.Logprobs == nil {
		return nil
	}
	return c.chunk(ch)
}

// chunk wraps choices in a chat.completion.chunk.
func (c *chatRun) chunk(choices ...chatChunkChoice) chatChunk {
	if choices == nil {
		choices = []chatChunkChoice{}
	}
	return chatChunk{ID: c.id, Object: "chat.completion.chunk", Created: c.created, Model: c.b.name, Choices: choices}
}

// heldChunk is the whole of a held choice, sent when it finishes: its
// content and tool calls in one delta (OpenAI's shape: index, id, type and
// the function's name and arguments for each call). o is the whole output,
// its reasoning left out when a reasoning parser runs.
func (c *chatRun) heldChunk(o engine.CompletionOutput) chatChunk {
	m := c.answerMessage(o.Text)
	ch := chatChunkChoice{Index: o.Index, Delta: chatDelta{Content: m.Content}, finish: finishOf(o)}
	for i, tc := range m.ToolCalls {
		ch.Delta.ToolCalls = append(ch.Delta.ToolCalls, toolCallDelta{Index: i, ID: tc.ID, Type: tc.Type, Function: tc.Function})
	}
	if c.callsFinish(m.ToolCalls) {
		ch.FinishReason = ptr("tool_calls")
	}
	if c.req.Logprobs && len(o.Logprobs) > 0 {
		ch.Logprobs = chatTokenLogprobs(c.b.tok, o.Logprobs)
	}
	return c.chunk(ch)
}
