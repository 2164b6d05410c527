package server

import (
	"context"
	"net/http"
	"time"

	"pagoda/engine"
)

// completionsDefaultMaxTokens is max_tokens when a completions request has
// none (OpenAI's legacy default, which vLLM keeps).
const completionsDefaultMaxTokens = 16

// completions serves POST /v1/completions.
func (b *backend) completions(w http.ResponseWriter, r *http.Request) error {
	var req completionRequest
	if err := b.decodeRequest(w, r, &req); err != nil {
		return err
	}
	if req.Suffix != "" {
		return badRequest("suffix", "suffix is not supported")
	}
	p, aerr := req.samplingParams(b.defaults, req.MaxTokens, completionsDefaultMaxTokens, &b.grammars)
	if aerr != nil {
		return aerr
	}
	if req.Logprobs != nil {
		p.ReturnLogprobs, p.Logprobs = true, *req.Logprobs
		if req.Echo {
			p.PromptLogprobs = max(p.PromptLogprobs, *req.Logprobs)
		}
	}
	prompts, aerr := parsePrompts(req.Prompt, b.tok, req.AddSpecialTokens == nil || *req.AddSpecialTokens, b.e.Config().MaxModelLen)
	if aerr != nil {
		return aerr
	}
	id := "cmpl-" + baseID(r)
	c := &completionRun{b: b, req: &req, id: id, created: time.Now().Unix(), n: p.N, prompts: prompts}
	return b.answer(w, r, id, c, prompts, p, &req.samplingFields)
}

// completionRun is one completions request being answered.
type completionRun struct {
	b       *backend
	req     *completionRequest
	id      string
	created int64
	n       int
	prompts []promptInput
	echoed  map[int]bool // stream: choices whose echo was sent
	offsets map[int]int  // stream: text offset of each choice's next token
}

// response builds the whole completion; choice i*n+j is output j of prompt i.
func (c *completionRun) response(ts []*tracker) any {
	resp := completionResponse{ID: c.id, Object: "text_completion", Created: c.created, Model: c.b.name,
		Usage: totalUsage(ts)}
	for i, t := range ts {
		for _, o := range t.outs {
			ch := completionChoice{Index: i*c.n + o.Index, Text: o.Text, finish: finishOf(o)}
			offset := 0
			if c.req.Echo {
				ch.Text = c.prompts[i].text + o.Text
				if c.req.Logprobs != nil {
					ch.Logprobs, offset = legacyPromptLogprobs(c.b.tok, t.prompt, t.promptLP, *c.req.Logprobs)
				}
			}
			if c.req.PromptLogprobs != nil {
				ch.PromptLogprobs = vllmPromptLogprobs(c.b.tok, t.prompt, t.promptLP, *c.req.PromptLogprobs)
			}
			if c.req.Logprobs != nil {
				ch.Logprobs, _ = legacyLogprobs(ch.Logprobs, c.b.tok, o.Logprobs, offset)
			}
			resp.Choices = append(resp.Choices, ch)
		}
	}
	return resp
}

// stream relays the completion as SSE chunks, one choice per chunk.
func (c *completionRun) stream(ctx context.Context, out *sse, ts []*tracker) {
	c.echoed, c.offsets = map[int]bool{}, map[int]int{}
	ok := c.b.relay(ctx, out, ts, func(prompt int, o engine.CompletionOutput) any {
		return c.chunk(ts[prompt], prompt, o)
	})
	if !ok {
		return
	}
	if c.req.includeUsage() {
		out.send(completionResponse{ID: c.id, Object: "text_completion", Created: c.created, Model: c.b.name,
			Choices: []completionChoice{}, Usage: totalUsage(ts)})
	}
	out.done()
}

// chunk is the event of one output delta (nil when it carries nothing).
func (c *completionRun) chunk(t *tracker, prompt int, o engine.CompletionOutput) any {
	idx := prompt*c.n + o.Index
	ch := completionChoice{Index: idx, Text: o.Text, finish: finishOf(o)}
	if c.req.Echo && !c.echoed[idx] {
		c.echoed[idx] = true
		ch.Text = c.prompts[prompt].text + o.Text
		if c.req.Logprobs != nil {
			ch.Logprobs, c.offsets[idx] = legacyPromptLogprobs(c.b.tok, t.prompt, t.promptLP, *c.req.Logprobs)
		}
	}
	if c.req.Logprobs != nil {
		ch.Logprobs, c.offsets[idx] = legacyLogprobs(ch.Logprobs, c.b.tok, o.Logprobs, c.offsets[idx])
	}
	if ch.Text == "" && ch.FinishReason == nil && len(o.Logprobs) == 0 {
		return nil
	}
	return completionResponse{ID: c.id, Object: "text_completion", Created: c.created, Model: c.b.name,
		Choices: []completionChoice{ch}}
}
