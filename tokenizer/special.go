package tokenizer

import (
	"strings"
	"unicode/utf8"
)

// fragment is a piece of the input: raw text still to tokenize, or an already-known token.
type fragment struct {
	text string
	id   int32 // NoToken for raw text
}

// Encode tokenizes text.
//
// With parseSpecial, the texts of control and unknown tokens (e.g. "<|im_start|>") in the input
// become those tokens; user-defined tokens are always recognised, as in llama.cpp and Hugging
// Face. Special texts are split out longest first, before any other tokenization. With
// addSpecial, BOS is prepended when the vocabulary's add_bos_token is set and EOS appended
// when add_eos_token is set. An empty text yields no tokens besides those.
func (t *Tokenizer) Encode(text string, addSpecial, parseSpecial bool) []int32 {
	return t.encode(text, addSpecial, parseSpecial, -1)
}

// EncodeLimit is Encode for text that must give at most limit tokens: it
// returns (nil, false) as soon as the text is known to give more. A text
// longer than limit tokens can hold (MinTokens) is refused before any
// tokenization, and tokenization stops at the first fragment or pre-token
// that passes limit; so time and memory are bounded by limit, not by the
// text's size (but for bytes the vocabulary drops, which cost a scan).
func (t *Tokenizer) EncodeLimit(text string, addSpecial, parseSpecial bool, limit int) ([]int32, bool) {
	if t.MinTokens(text) > limit {
		return nil, false
	}
	ids := t.encode(text, addSpecial, parseSpecial, limit)
	if len(ids) > limit {
		return nil, false
	}
	return ids, true
}

// MinTokens is a lower bound on the number of tokens text gives: no token
// covers more than maxCover input bytes, and only bytes the vocabulary may
// drop (no token for the byte; whitespace after an rstrip token) are
// covered by none. It scans text once and allocates nothing.
func (t *Tokenizer) MinTokens(text string) int {
	covered := len(text)
	for i := 0; i < len(text); i++ {
		if t.droppable[text[i]] {
			covered--
		}
	}
	return (covered + t.maxCover - 1) / t.maxCover
}

// buildCover sets maxCover and droppable (see MinTokens).
func (t *Tokenizer) buildCover() {
	t.maxCover = 1
	if t.model == ModelSPM {
		t.maxCover = utf8.UTFMax // an unknown token stands for one character
	}
	if t.model == ModelWPM {
		t.maxCover = 1 << 30 // [UNK] stands for a whole word of any length
	}
	for id, p := range t.pieces {
		t.maxCover = max(t.maxCover, len(p), len(t.tokens[id]))
	}
	for b := range 256 {
		t.droppable[b] = t.byteTok[b] == NoToken
	}
	if len(t.rstrip) > 0 {
		for _, b := range []byte(" \t\n\v\f\r") {
			t.droppable[b] = true
		}
	}
}

// encode is Encode; with limit ≥ 0 it may stop early once the output has
// more than limit tokens (the caller then discards it).
func (t *Tokenizer) encode(text string, addSpecial, parseSpecial bool, limit int) []int32 {
	out := make([]int32, 0, len(text)/3+2)
	if addSpecial && t.addBOS {
		out = append(out, t.bos)
	}
	prevSpecial := true // SPM: the first text fragment gets the leading space
	for _, f := range t.partition(text, parseSpecial) {
		switch {
		case f.id != NoToken:
			out = append(out, f.id)
			prevSpecial = true
		case t.model == ModelSPM:
			out = t.spmEncode(f.text, t.addSpacePrefix && prevSpecial, out)
			prevSpecial = false
		case t.model == ModelWPM:
			out = t.wpmEncode(f.text, out)
		default:
			out = t.bpeEncode(f.text, out, limit)
		}
		if limit >= 0 && len(out) > limit {
			return out
		}
	}
	if addSpecial && t.addEOS {
		out = append(out, t.eos)
	}
	if addSpecial && t.addSEP {
		out = append(out, t.sep)
	}
	return out
}

// partition splits text on the special tokens' texts, longest token first, as llama.cpp's
// tokenizer_st_partition does. Tokens with the rstrip attribute (Phi-3) drop the ASCII
// whitespace that follows them.
func (t *Tokenizer) partition(text string, parseSpecial bool) []fragment {
	if text == "" {
		return nil
	}
	frags := []fragment{{text: text, id: NoToken}}
	var next []fragment
	for _, id := range t.special {
		if !parseSpecial && t.types[id] != TypeUserDefined {
			continue
		}
		tok := t.tokens[id]
		next = next[:0]
		for _, f := range frags {
			if f.id != NoToken || !strings.Contains(f.text, tok) {
				next = append(next, f)
				continue
			}
			next = t.splitOn(f.text, tok, id, next)
		}
		frags, next = next, frags
	}
	return frags
}

// splitOn appends the fragments of s with every occurrence of tok replaced by token id.
func (t *Tokenizer) splitOn(s, tok string, id int32, dst []fragment) []fragment {
	for {
		i := strings.Index(s, tok)
		if i < 0 {
			break
		}
		if i > 0 {
			dst = append(dst, fragment{text: s[:i], id: NoToken})
		}
		dst = append(dst, fragment{id: id})
		s = s[i+len(tok):]
		if t.rstrip[id] {
			s = strings.TrimLeft(s, " \t\n\v\f\r")
		}
	}
	if s != "" {
		dst = append(dst, fragment{text: s, id: NoToken})
	}
	return dst
}
