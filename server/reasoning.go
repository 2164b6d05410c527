package server

import (
	"fmt"
	"slices"
	"strings"

	"pagoda/tokenizer"
)

// Reasoning parsers split a thinking model's chat output into its reasoning
// (message.reasoning_content) and its answer (message.content), by vLLM's
// --reasoning-parser names. Both models think between <think> and </think>:
//
//	qwen3        as vLLM's Qwen3ReasoningParser: the model writes <think> itself when
//	             it thinks; an output that does not begin with <think> is all content
//	             (thinking was disabled)
//	deepseek_r1  as vLLM's DeepSeekR1ReasoningParser: the output begins inside the
//	             reasoning (the template may have written <think>); everything before
//	             </think> is reasoning, all of it when </think> never comes
//
// The chat template may already have opened or closed the reasoning in the
// prompt, which decides where the output begins (promptState). The text after
// </think> is content as generated, its leading newlines kept (as vLLM keeps
// them). The markers that delimit the reasoning never reach either field.
//
// The answer starts exactly where the reasoning ends, for every consumer:
// the tool-call parser reads the content only, and a structured-output
// grammar starts after the output's </think> token (engine's ReasoningEnd),
// or from the first token when the prompt closed the reasoning.
type reasoningParser struct {
	name       string
	start, end string  // the markers: "<think>", "</think>"
	startIDs   []int32 // start as tokens: where a thinking budget's count begins
	endIDs     []int32 // end as tokens: where the engine starts a grammar
	thinkFirst bool    // deepseek_r1: the output begins inside the reasoning
}

// ReasoningParsers lists the --reasoning-parser values (openai_gptoss selects
// harmony, harmony.go).
func ReasoningParsers() []string { return []string{"deepseek_r1", "openai_gptoss", "qwen3"} }

// newReasoningParser is the parser called name for tok's vocabulary, which
// must hold <think> and </think> as tokens (vLLM refuses to start without
// them too).
func newReasoningParser(name string, tok *tokenizer.Tokenizer) (*reasoningParser, error) {
	if !slices.Contains(ReasoningParsers(), name) {
		return nil, fmt.Errorf("--reasoning-parser must be %s, got %q", strings.Join(ReasoningParsers(), " or "), name)
	}
	if name == harmonyReasoningParser {
		return nil, fmt.Errorf("--reasoning-parser %s reads harmony, with tool calls (harmony.go), not <think> markers", name)
	}
	p := &reasoningParser{name: name, start: "<think>", end: "</think>", thinkFirst: name == "deepseek_r1"}
	startID, okStart := tok.TokenID(p.start)
	endID, okEnd := tok.TokenID(p.end)
	if !okStart || !okEnd {
		return nil, fmt.Errorf("--reasoning-parser %s: the model's vocabulary has no %s and %s tokens", name, p.start, p.end)
	}
	p.startIDs, p.endIDs = []int32{startID}, []int32{endID}
	return p, nil
}

// splitState is where an output stands between reasoning and answer.
type splitState uint8

const (
	stateOpen     splitState = iota // qwen3, nothing generated yet: a leading <think> starts a reasoning, anything else is the answer
	stateThinking                   // inside the reasoning, until </think>
	stateAnswer                     // after the reasoning, or without one: everything is content
)

// promptState is where the output of prompt (the rendered chat prompt)
// begins. A prompt that ends with </think> (whitespace aside) closed the
// reasoning: Qwen3's template with enable_thinking false writes an empty
// <think>\n\n</think>\n\n. One whose last marker is <think> opened it:
// DeepSeek-R1's and Qwen3-Thinking's templates end with <think>\n, as does a
// continued final message cut inside its reasoning. Otherwise (no marker, or
// a closed reasoning of an earlier turn) the parser's own start applies.
// vLLM scans the prompt's tokens for the last marker alone, which takes an
// earlier turn's </think> for a closed reasoning.
func (p *reasoningParser) promptState(prompt string) splitState {
	if strings.HasSuffix(strings.TrimRight(prompt, " \t\r\n"), p.end) {
		return stateAnswer
	}
	if strings.LastIndex(prompt, p.start) > strings.LastIndex(prompt, p.end) {
		return stateThinking
	}
	if p.thinkFirst {
		return stateThinking
	}
	return stateOpen
}

// reasoningSplit splits one output as it streams: push takes each delta of
// text and returns its reasoning and content parts; flush returns what was
// held back at the end. Invariant: the concatenated parts of any split of a
// text into deltas are those of the whole text pushed at once, and the
// reasoning parts never contain a delimiting marker.
type reasoningSplit struct {
	p       *reasoningParser
	state   splitState
	held    string // text not assigned yet: a possible beginning of a marker (open: and the whitespace before it)
	thought bool   // the output has a reasoning part (it entered stateThinking)
}

func (p *reasoningParser) newSplit(start splitState) *reasoningSplit {
	return &reasoningSplit{p: p, state: start, thought: start == stateThinking}
}

// push adds text to the output and returns the parts now known.
func (s *reasoningSplit) push(text string) (reasoning, content string) {
	s.held += text
	var r strings.Builder
	for {
		switch s.state {
		case stateAnswer:
			content, s.held = s.held, ""
			return r.String(), content
		case stateOpen:
			rest := strings.TrimLeft(s.held, " \t\r\n")
			switch {
			case strings.HasPrefix(rest, s.p.start):
				s.held, s.state, s.thought = rest[len(s.p.start):], stateThinking, true
			case strings.HasPrefix(s.p.start, rest): // whitespace, or part of <think>: wait for more
				return r.String(), ""
			default:
				s.state = stateAnswer
			}
		case stateThinking:
			i, m := firstMarker(s.held, s.p.start, s.p.end)
			if i < 0 {
				keep := partialMarker(s.held, s.p.start, s.p.end)
				r.WriteString(s.held[:len(s.held)-keep])
				s.held = s.held[len(s.held)-keep:]
				return r.String(), ""
			}
			r.WriteString(s.held[:i])
			s.held = s.held[i+len(m):]
			if m == s.p.end {
				s.state = stateAnswer
			} // a <think> inside the reasoning (the model repeating the template's) is dropped
		}
	}
}

// flush ends the output: the text held back was no marker after all.
func (s *reasoningSplit) flush() (reasoning, content string) {
	held := s.held
	s.held = ""
	if s.state == stateThinking {
		return held, ""
	}
	return "", held
}

// firstMarker returns the position and text of the first of the markers in
// s (-1 when none occurs).
func firstMarker(s string, markers ...string) (int, string) {
	at, which := -1, ""
	for _, m := range markers {
		if i := strings.Index(s, m); i >= 0 && (at < 0 || i < at) {
			at, which = i, m
		}
	}
	return at, which
}

// partialMarker is the length of the longest end of s that is the
// beginning, short of the whole, of one of the markers.
func partialMarker(s string, markers ...string) int {
	for n := min(len(s), maxLen(markers)-1); n > 0; n-- {
		for _, m := range markers {
			if strings.HasPrefix(m, s[len(s)-n:]) {
				return n
			}
		}
	}
	return 0
}

func maxLen(ss []string) int {
	n := 0
	for _, s := range ss {
		n = max(n, len(s))
	}
	return n
}

// split splits a whole output that began in state start.
func (p *reasoningParser) split(text string, start splitState) (reasoning, content string, thought bool) {
	s := p.newSplit(start)
	r1, c1 := s.push(text)
	r2, c2 := s.flush()
	return r1 + r2, c1 + c2, s.thought
}

// reasoningTokens counts the tokens ids of an output spent on its reasoning
// (OpenAI's usage.completion_tokens_details.reasoning_tokens): those up to
// and including </think>, or all of them when it never came; none when the
// output had no reasoning part.
func (p *reasoningParser) reasoningTokens(ids []int32, thought bool) int {
	if !thought {
		return 0
	}
	for i := range len(ids) - len(p.endIDs) + 1 {
		if slices.Equal(ids[i:i+len(p.endIDs)], p.endIDs) {
			return i + len(p.endIDs)
		}
	}
	return len(ids)
}
