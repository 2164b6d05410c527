package server

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"

	"pagoda/engine"
	"pagoda/tokenizer"
)

// minLogprob replaces -Inf (a token the filters removed) in JSON, which
// cannot hold infinities; vLLM uses the same value.
const minLogprob = -9999.0

func jsonLogprob(lp float32) float64 {
	v := float64(lp)
	if math.IsInf(v, 0) || math.IsNaN(v) || v < minLogprob {
		return minLogprob
	}
	return v
}

// tokenString is a token's text for logprobs. A piece that is not valid
// UTF-8 (part of a character) is written as "bytes:\xNN..." as vLLM does.
func tokenString(tok *tokenizer.Tokenizer, id int32) string {
	p := tok.Piece(id)
	if utf8.ValidString(p) {
		return p
	}
	var b strings.Builder
	b.WriteString("bytes:")
	for i := 0; i < len(p); i++ {
		fmt.Fprintf(&b, "\\x%02x", p[i])
	}
	return b.String()
}

// tokenBytes is a token's raw bytes as JSON numbers.
func tokenBytes(tok *tokenizer.Tokenizer, id int32) []int {
	p := tok.Piece(id)
	out := make([]int, len(p))
	for i := 0; i < len(p); i++ {
		out[i] = int(p[i])
	}
	return out
}

// legacyLogprobs builds the completions logprobs of lps, whose text starts
// at byte offset in the choice text. Each entry's top_logprobs holds the
// chosen token and its alternatives. Returns the offset after the tokens.
// A nil dst starts a new object.
func legacyLogprobs(dst *completionLogprobs, tok *tokenizer.Tokenizer, lps []engine.Logprob, offset int) (*completionLogprobs, int) {
	if dst == nil {
		dst = &completionLogprobs{TextOffset: []int{}, TokenLogprobs: []*float64{}, Tokens: []string{},
			TopLogprobs: []map[string]float64{}}
	}
	for _, lp := range lps {
		s := tokenString(tok, lp.ID)
		v := jsonLogprob(lp.Logprob)
		top := make(map[string]float64, len(lp.Top)+1)
		for _, t := range lp.Top {
			top[tokenString(tok, t.ID)] = jsonLogprob(t.Logprob)
		}
		top[s] = v
		dst.TextOffset = append(dst.TextOffset, offset)
		dst.Tokens = append(dst.Tokens, s)
		dst.TokenLogprobs = append(dst.TokenLogprobs, &v)
		dst.TopLogprobs = append(dst.TopLogprobs, top)
		offset += len(s)
	}
	return dst, offset
}

// legacyPromptLogprobs is legacyLogprobs for echoed prompt tokens with at
// most top alternatives each: the first token has no logprob (null
// entries).
func legacyPromptLogprobs(tok *tokenizer.Tokenizer, ids []int32, lps []engine.Logprob, top int) (*completionLogprobs, int) {
	var dst *completionLogprobs
	offset := 0
	for i, id := range ids {
		if i == 0 || i >= len(lps) {
			if dst == nil {
				dst, _ = legacyLogprobs(nil, tok, nil, 0)
			}
			s := tokenString(tok, id)
			dst.TextOffset = append(dst.TextOffset, offset)
			dst.Tokens = append(dst.Tokens, s)
			dst.TokenLogprobs = append(dst.TokenLogprobs, nil)
			dst.TopLogprobs = append(dst.TopLogprobs, nil)
			offset += len(s)
			continue
		}
		lp := lps[i]
		lp.Top = lp.Top[:min(top, len(lp.Top))]
		dst, offset = legacyLogprobs(dst, tok, []engine.Logprob{lp}, offset)
	}
	if dst == nil {
		dst, _ = legacyLogprobs(nil, tok, nil, 0)
	}
	return dst, offset
}

// chatTokenLogprobs builds the chat logprobs of lps: each token with its
// top alternatives (the top_logprobs most likely).
func chatTokenLogprobs(tok *tokenizer.Tokenizer, lps []engine.Logprob) *chatLogprobs {
	out := &chatLogprobs{Content: make([]chatTokenLogprob, len(lps))}
	for i, lp := range lps {
		top := make([]chatTopLogprob, len(lp.Top))
		for j, t := range lp.Top {
			top[j] = chatLogprobOf(tok, t.ID, t.Logprob)
		}
		out.Content[i] = chatTokenLogprob{chatTopLogprob: chatLogprobOf(tok, lp.ID, lp.Logprob), TopLogprobs: top}
	}
	return out
}

// chatLogprobOf is token id and its logprob in the chat shape.
func chatLogprobOf(tok *tokenizer.Tokenizer, id int32, logprob float32) chatTopLogprob {
	return chatTopLogprob{Token: tokenString(tok, id), Logprob: jsonLogprob(logprob), Bytes: tokenBytes(tok, id)}
}

// vllmPromptLogprobs builds vLLM's prompt_logprobs: for each prompt token
// after the first, the token itself (with its rank) and its top
// alternatives (ranks 1..top), keyed by token id; the first entry is null.
func vllmPromptLogprobs(tok *tokenizer.Tokenizer, ids []int32, lps []engine.Logprob, top int) []map[string]promptLogprob {
	out := make([]map[string]promptLogprob, len(ids))
	for i := 1; i < len(ids) && i < len(lps); i++ {
		lp := lps[i]
		m := make(map[string]promptLogprob, top+1)
		for r, t := range lp.Top[:min(top, len(lp.Top))] {
			m[strconv.Itoa(int(t.ID))] = promptLogprob{Logprob: jsonLogprob(t.Logprob), Rank: r + 1, DecodedToken: tok.Piece(t.ID)}
		}
		m[strconv.Itoa(int(lp.ID))] = promptLogprob{Logprob: jsonLogprob(lp.Logprob), Rank: lp.Rank, DecodedToken: tok.Piece(lp.ID)}
		out[i] = m
	}
	return out
}
