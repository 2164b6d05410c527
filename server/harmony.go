package server

import (
	"bytes"
	"encoding/json"
	"strings"

	"pagoda/tokenizer"
)

// The harmony output format of gpt-oss (OpenAI's harmony: openai/harmony), which the
// o200k_harmony vocabulary and the gpt-oss chat template speak. After the prompt's
// <|start|>assistant the model writes one or more messages
//
//	[<|start|>assistant][ to=RECIPIENT]<|channel|>CHANNEL[ to=RECIPIENT][ [<|constrain|>]TYPE]<|message|>BODY END
//
// where END is <|end|> (another message follows), <|call|> (a tool call: generation ends)
// or <|return|> (the answer is complete: generation ends); the last two are end-of-generation
// tokens and never reach the text. As vLLM's openai_gptoss reasoning parser and openai tool
// parser and llama.cpp's gpt-oss chat parser (common/parsers/gpt-oss.cpp) read it:
//
//	analysis                      reasoning_content
//	to=functions.NAME             a tool call, its body the arguments (JSON)
//	final, commentary (no to=)    content (commentary without a recipient is a preamble)
//	to=OTHER (built-in tools)     dropped, as llama.cpp drops unsolicited calls
//
// The message markers are user-defined tokens (tokenizer: llama.cpp's o200k_harmony
// workaround), so they are in the text even with skip_special_tokens. Text that does not
// follow the format from some point on is content from there, as generated.
type harmonyParser struct {
	finalIDs    []int32 // "<|channel|>final<|message|>" as tokens: where a structured-output grammar starts
	analysisIDs []int32 // "<|channel|>analysis<|message|>": where reasoning begins (a thinking budget's count)
	toFinalIDs  []int32 // "<|end|><|start|>assistant" and finalIDs: what a spent thinking budget forces
}

// Harmony's markers.
const (
	hStart     = "<|start|>"
	hChannel   = "<|channel|>"
	hMessage   = "<|message|>"
	hEnd       = "<|end|>"
	hCall      = "<|call|>"
	hReturn    = "<|return|>"
	hConstrain = "<|constrain|>"

	maxHarmonyHeader = 512 // bytes: a longer header is no header
)

// newHarmonyParser is the harmony parser for tok's vocabulary, which must hold harmony's
// message markers as tokens.
func newHarmonyParser(tok *tokenizer.Tokenizer) (*harmonyParser, error) {
	for _, m := range []string{hStart, hChannel, hMessage, hEnd} {
		if _, ok := tok.TokenID(m); !ok {
			return nil, errNoHarmony(m)
		}
	}
	return &harmonyParser{finalIDs: tok.Encode(hChannel+"final"+hMessage, false, true),
		analysisIDs: tok.Encode(hChannel+"analysis"+hMessage, false, true),
		toFinalIDs:  tok.Encode(hEnd+hStart+"assistant"+hChannel+"final"+hMessage, false, true)}, nil
}

type errNoHarmony string

func (e errNoHarmony) Error() string {
	return "the harmony format (openai_gptoss / openai parsers) needs the token " + string(e) + ", which the model's vocabulary lacks"
}

// harmonyKind is what a message's body is.
type harmonyKind uint8

const (
	harmonyContent harmonyKind = iota
	harmonyReasoning
	harmonyCall
	harmonyDrop
)

// harmonySplit reads one output as it streams. push takes each delta and returns the
// reasoning, content and complete tool calls now known. Invariant: the parts of any split of
// a text into deltas add up to those of the whole text pushed at once; reasoning and content
// never hold a marker that delimits messages (but where the text left the format).
type harmonySplit struct {
	buf    []byte // the output so far
	pos    int    // start of the current message (its header)
	inBody bool   // the header was read: kind, name and body are set
	kind   harmonyKind
	name   string // harmonyCall: the function's name
	body   int    // start of the body
	scan   int    // no marker starts in [body, scan): where the search resumes
	sent   int    // end of what was returned of the body (or, plain, of the output)
	plain  bool   // the output left the format at pos: the rest is content

	thought      bool // an analysis message began
	reasoningEnd int  // end of the last analysis body: the reasoning tokens' share
	calls        int  // tool calls returned
}

// harmonyPart is what a push returned.
type harmonyPart struct {
	reasoning, content string
	calls              []toolCallFunc
}

// bodyEnds are the markers that end a message's body: <|start|> too, for a model that
// begins the next message without ending this one.
var bodyEnds = []string{hEnd, hCall, hReturn, hStart}

// push adds delta to the output; final says the output ended with it. Each byte is searched
// for markers a bounded number of times, so a long output costs linear time.
func (s *harmonySplit) push(delta string, final bool) harmonyPart {
	s.buf = append(s.buf, delta...)
	var r, c strings.Builder
	var calls []toolCallFunc
	for {
		if s.plain {
			c.Write(s.buf[s.sent:])
			s.sent = len(s.buf)
			break
		}
		if !s.inBody {
			if !s.header(final) {
				break
			}
			continue
		}
		j, m := s.findEnd()
		if j < 0 && !final {
			tail := string(s.buf[max(s.body, len(s.buf)-len(hReturn)):])
			s.scan = len(s.buf) - partialMarker(tail, bodyEnds...)
			if s.kind == harmonyContent || s.kind == harmonyReasoning {
				s.write(&r, &c, s.scan)
			}
			break
		}
		next := len(s.buf)
		switch {
		case j < 0:
			j = len(s.buf)
		case m == hStart:
			next = j
		default:
			next = j + len(m)
		}
		if s.kind == harmonyCall {
			args := strings.TrimSpace(string(s.buf[s.body:j]))
			if !json.Valid([]byte(args)) {
				s.plain, s.sent = true, s.pos // a call that is no call: its text is content
				continue
			}
			calls = append(calls, toolCallFunc{Name: s.name, Arguments: args})
			s.calls++
		}
		s.write(&r, &c, j)
		s.inBody, s.pos = false, next
		if next == len(s.buf) && final {
			break
		}
	}
	return harmonyPart{reasoning: r.String(), content: c.String(), calls: calls}
}

// findEnd returns the position in buf of the first marker that ends the body, and which, or
// -1.
func (s *harmonySplit) findEnd() (int, string) {
	from := max(s.scan, s.body)
	at, which := -1, ""
	for _, m := range bodyEnds {
		if i := bytes.Index(s.buf[from:], []byte(m)); i >= 0 && (at < 0 || i < at) {
			at, which = i, m
		}
	}
	if at < 0 {
		return -1, ""
	}
	return from + at, which
}

// write returns the body up to end as the message's kind.
func (s *harmonySplit) write(r, c *strings.Builder, end int) {
	if end <= s.sent {
		return
	}
	switch s.kind {
	case harmonyReasoning:
		r.Write(s.buf[s.sent:end])
		s.reasoningEnd = end
	case harmonyContent:
		c.Write(s.buf[s.sent:end])
	}
	s.sent = end
}

// header reads the header of the message at pos. It reports false when it must wait for
// more text (or the output ended there).
func (s *harmonySplit) header(final bool) bool {
	h := s.buf[s.pos:min(len(s.buf), s.pos+maxHarmonyHeader+len(hMessage))]
	i := bytes.Index(h, []byte(hMessage))
	if i < 0 {
		switch {
		case len(bytes.Trim(h, " \t\r\n")) == 0 && len(h) == len(s.buf)-s.pos: // whitespace between messages
			return false
		case final || !headerPrefix(string(h)):
			s.plain, s.sent = true, s.pos
			return true
		}
		return false
	}
	kind, name, ok := classifyHeader(string(h[:i]))
	if !ok {
		s.plain, s.sent = true, s.pos
		return true
	}
	s.inBody, s.kind, s.name = true, kind, name
	s.body = s.pos + i + len(hMessage)
	s.sent, s.scan = s.body, s.body
	if kind == harmonyReasoning {
		s.thought = true
	}
	return true
}

// headerPrefix reports whether h (no <|message|> yet) may still become a header.
func headerPrefix(h string) bool {
	if len(h) > maxHarmonyHeader {
		return false
	}
	h = strings.TrimLeft(h, " \t\r\n")
	for _, start := range []string{hStart, hChannel, " to=", "to="} {
		if strings.HasPrefix(h, start) || strings.HasPrefix(start, h) {
			return true
		}
	}
	return false
}

// classifyHeader reads a header (the text before <|message|>): its channel and recipient.
func classifyHeader(h string) (kind harmonyKind, name string, ok bool) {
	h = strings.TrimLeft(h, " \t\r\n")
	if rest, found := strings.CutPrefix(h, hStart); found {
		role := rest[:headerWordEnd(rest)]
		if role != "assistant" {
			return 0, "", false
		}
		h = rest[len(role):]
	}
	if !strings.HasPrefix(h, hChannel) && !strings.HasPrefix(strings.TrimLeft(h, " "), "to=") {
		return 0, "", false
	}
	var channel, recipient string
	if i := strings.LastIndex(h, hChannel); i >= 0 { // a stray "<|channel|>commentary" may come first (llama.cpp)
		rest := h[i+len(hChannel):]
		channel = rest[:headerWordEnd(rest)]
	}
	if i := strings.Index(h, "to="); i >= 0 {
		rest := h[i+len("to="):]
		recipient = rest[:headerWordEnd(rest)]
	}
	switch {
	case strings.HasPrefix(recipient, "functions."):
		name = strings.TrimPrefix(recipient, "functions.")
		return harmonyCall, name, name != ""
	case recipient != "" && recipient != "assistant":
		return harmonyDrop, "", true
	case channel == "analysis":
		return harmonyReasoning, "", true
	}
	return harmonyContent, "", true
}

// headerWordEnd is the length of the word at the start of s: up to a space or a marker.
func headerWordEnd(s string) int {
	if i := strings.IndexAny(s, " <"); i >= 0 {
		return i
	}
	return len(s)
}

// harmonyOutput is a whole output read at once.
type harmonyOutput struct {
	reasoning, content string
	calls              []toolCallFunc
	thought            bool
	reasoningEnd       int
}

func parseHarmony(text string) harmonyOutput {
	s := &harmonySplit{}
	p := s.push(text, true)
	return harmonyOutput{reasoning: p.reasoning, content: p.content, calls: p.calls, thought: s.thought, reasoningEnd: s.reasoningEnd}
}

// reasoningTokens counts the tokens of ids whose text begins before end (the end of the
// last analysis body): the reasoning share of the output.
func harmonyReasoningTokens(tok *tokenizer.Tokenizer, ids []int32, end int) int {
	n, at := 0, 0
	for _, id := range ids {
		if at >= end {
			break
		}
		at += len(tok.Piece(id))
		n++
	}
	return n
}
