package tokenizer

import "strings"

// spmBigram is a candidate merge of two adjacent symbols whose joined text is a token.
type spmBigram struct {
	left, right int
	score       float32
	size        int // bytes of the joined text, to detect stale candidates
}

// spmLess puts the highest score first and, among equal scores, the leftmost pair.
func spmLess(a, b spmBigram) bool {
	return a.score > b.score || (a.score == b.score && a.left < b.left)
}

// spmSession holds the per-call scratch space of SPM tokenization.
type spmSession struct {
	t     *Tokenizer
	text  string
	syms  []symbol
	queue minHeap[spmBigram]
}

// spmEncode tokenizes one raw-text fragment SentencePiece-style, as llama.cpp's
// llm_tokenizer_spm: spaces become ▁ (after the optional leading space), characters start as
// symbols, and the adjacent pair whose joined text is the best-scoring token is merged until
// none is left. A final symbol that is not a token falls back to its bytes' <0xNN> tokens, or
// to the unknown token when the vocabulary has no byte tokens.
//
// Only normal and user-defined tokens take part: control, unknown, unused and byte tokens are
// never produced from their text (as in SentencePiece; llama.cpp would merge "<s>" into BOS).
func (t *Tokenizer) spmEncode(fragment string, prefixSpace bool, out []int32) []int32 {
	if prefixSpace {
		fragment = " " + fragment
	}
	s := &spmSession{t: t, text: strings.ReplaceAll(fragment, " ", "\u2581")}
	s.queue.less = spmLess
	s.syms = newSymbols(s.text, nil)
	for i := 1; i < len(s.syms); i++ {
		s.tryAdd(i-1, i)
	}
	for s.queue.len() > 0 {
		b := s.queue.pop()
		l, r := &s.syms[b.left], &s.syms[b.right]
		if l.start == l.end || r.start == r.end || l.next != b.right || (l.end-l.start)+(r.end-r.start) != b.size {
			continue // stale: one side was merged since this candidate was queued
		}
		prev, next := join(s.syms, b.left, b.right)
		s.tryAdd(prev, b.left)
		s.tryAdd(b.left, next)
	}
	for sym := range linked(s.syms) {
		out = s.emit(sym, out)
	}
	return out
}

func (s *spmSession) tryAdd(left, right int) {
	if left < 0 || right < 0 {
		return
	}
	text := s.text[s.syms[left].start:s.syms[right].end]
	id, ok := s.t.mergeable(text)
	if !ok {
		return
	}
	s.queue.push(spmBigram{left: left, right: right, score: s.t.scores[id], size: len(text)})
}

// emit appends the tokens of a final symbol.
func (s *spmSession) emit(sym symbol, out []int32) []int32 {
	text := s.text[sym.start:sym.end]
	if id, ok := s.t.mergeable(text); ok {
		return append(out, id)
	}
	return s.t.byteFallback(text, out)
}

// mergeable returns the token of text if SPM may produce it from text.
func (t *Tokenizer) mergeable(text string) (int32, bool) {
	id, ok := t.ids[text]
	if !ok {
		return 0, false
	}
	ty := t.types[id]
	return id, ty == TypeNormal || ty == TypeUserDefined
}

// byteFallback appends one byte token per byte of text, or a single unknown token when any
// byte has no token; with no unknown token either, the text is dropped.
func (t *Tokenizer) byteFallback(text string, out []int32) []int32 {
	for i := 0; i < len(text); i++ {
		if t.byteTok[text[i]] == NoToken {
			if t.unk != NoToken {
				return append(out, t.unk)
			}
			return out
		}
	}
	for i := 0; i < len(text); i++ {
		out = append(out, t.byteTok[text[i]])
	}
	return out
}
