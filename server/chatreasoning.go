package server

import (
	"strings"

	"pagoda/engine"
)

// The reasoning parser's part in a chat request (reasoning.go): where the
// output begins, the grammar's delayed start, the split of each streamed
// delta, and the reasoning tokens of the usage.

// planReasoning sets where c's outputs begin from the rendered prompt and,
// when a grammar constrains the answer (structured outputs, tool_choice
// required or named) and the prompt left the reasoning open, delays the
// grammar to the end of the reasoning, as vLLM's structured outputs wait
// for reasoning_ended: the thinking is free, the answer constrained.
func (c *chatRun) planReasoning(prompt string, p *engine.SamplingParams) {
	if c.think == nil {
		return
	}
	c.start = c.think.promptState(prompt)
	if p.Grammar != nil && c.start != stateAnswer {
		p.ReasoningEnd = c.think.endIDs
	}
}

// includeReasoning reports whether the reasoning goes in the response
// (include_reasoning, true when absent).
func (c *chatRun) includeReasoning() bool {
	return c.req.IncludeReasoning == nil || *c.req.IncludeReasoning
}

// choiceSplit is the reasoning split of one streamed choice and the answer
// text it has given so far.
type choiceSplit struct {
	split  *reasoningSplit
	answer strings.Builder
}

// splitDelta splits the output delta o of a choice whose whole output so
// far is full: it returns o and full with the answer's text only (what the
// tool-call streaming and the content see), and the delta's reasoning. At
// the choice's end it releases the text held back.
func (c *chatRun) splitDelta(o, full engine.CompletionOutput) (engine.CompletionOutput, engine.CompletionOutput, string) {
	if c.splits == nil {
		c.splits = map[int]*choiceSplit{}
	}
	s := c.splits[o.Index]
	if s == nil {
		s = &choiceSplit{split: c.think.newSplit(c.start)}
		c.splits[o.Index] = s
	}
	reasoning, answer := s.split.push(o.Text)
	if o.FinishReason != "" {
		r, a := s.split.flush()
		reasoning, answer = reasoning+r, answer+a
	}
	s.answer.WriteString(answer)
	o.Text, full.Text = answer, s.answer.String()
	return o, full, reasoning
}

// addReasoning puts a delta's reasoning into its chunk v (made when v is
// nil: the delta gave nothing of the answer), unless include_reasoning is
// false.
func (c *chatRun) addReasoning(v any, o engine.CompletionOutput, reasoning string) any {
	if reasoning == "" || !c.includeReasoning() {
		return v
	}
	if v == nil {
		ch := chatChunkChoice{Index: o.Index}
		if c.req.Logprobs && len(o.Logprobs) > 0 {
			ch.Logprobs = chatTokenLogprobs(c.b.tok, o.Logprobs)
		}
		v = c.chunk(ch)
	}
	chunk := v.(chatChunk)
	chunk.Choices[0].Delta.ReasoningContent = &reasoning
	return chunk
}

// reasoningUsage adds the reasoning tokens of outs to u when a reasoning
// parser (or harmony's) runs.
func (c *chatRun) reasoningUsage(u *usage, outs []engine.CompletionOutput) *usage {
	if c.b.harmony != nil {
		return c.harmonyUsage(u, outs)
	}
	if c.think == nil {
		return u
	}
	n := 0
	for _, o := range outs {
		var thought bool
		if s := c.splits[o.Index]; s != nil {
			thought = s.split.thought
		} else {
			_, _, thought = c.think.split(o.Text, c.start)
		}
		n += c.think.reasoningTokens(o.TokenIDs, thought)
	}
	u.CompletionTokensDetails = &completionDetails{ReasoningTokens: n}
	return u
}

// planThinkingBudget applies thinking_token_budget (vLLM's; Anthropic's
// thinking.budget_tokens arrives as it): once the output has drawn that many
// tokens of reasoning the engine forces the reasoning's end (engine's
// SamplingParams.ThinkingBudget) — </think> for the <think> parsers, the
// end of the analysis message and the final channel's header for harmony —
// and the answer follows. It needs a parser that knows where the reasoning
// is (400 otherwise).
func (c *chatRun) planThinkingBudget(p *engine.SamplingParams) *apiError {
	b := c.req.ThinkingTokenBudget
	switch {
	case b == nil:
		return nil
	case *b < 0:
		return badRequest("thinking_token_budget", "thinking_token_budget must be ≥ 0, got %d", *b)
	case c.b.harmony != nil:
		h := c.b.harmony
		p.ThinkingStart, p.ThinkingEnd = h.analysisIDs, h.toFinalIDs
	case c.think != nil:
		p.ThinkingStart, p.ThinkingEnd = c.think.startIDs, c.think.endIDs
		p.ThinkingFromStart = c.start == stateThinking
	default:
		return badRequest("thinking_token_budget", "thinking_token_budget needs a reasoning parser (--reasoning-parser) "+
			"or a harmony model: without one the server does not know where the reasoning ends")
	}
	p.ThinkingBudget = *b
	return nil
}
