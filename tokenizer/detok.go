package tokenizer

import (
	"strings"
	"unicode/utf8"
)

// DetokenizerOptions configures a Detokenizer.
type DetokenizerOptions struct {
	// SkipSpecial drops control and unknown tokens (vLLM's skip_special_tokens).
	SkipSpecial bool
	// Prompt holds the ids that precede the stream. They produce no output but make the stream
	// a continuation: SentencePiece's leading space is only stripped at the very start, and
	// bytes of a character the prompt left incomplete are completed by the first new tokens.
	Prompt []int32
}

// Detokenizer turns a stream of token ids into text, one id at a time, like vLLM's
// detokenize_incrementally: every call returns only newly completed text, and never half a
// UTF-8 character. A token may end in the middle of a character (byte-fallback tokens,
// byte-level BPE); its bytes are held back until the character is complete. Bytes that can
// never form a character are emitted as U+FFFD, one per maximal invalid subsequence.
//
// Invariant: the concatenation of all Add results and Flush equals ValidText of
// Decode(ids) (or of DecodeSkipSpecial(ids) with SkipSpecial), for the same ids.
type Detokenizer struct {
	t           *Tokenizer
	skipSpecial bool
	started     bool   // a token has been decoded: no more leading-space stripping
	pending     []byte // (< 4 bytes) the start of a character not yet complete
}

// NewDetokenizer starts an incremental detokenization.
func (t *Tokenizer) NewDetokenizer(opts DetokenizerOptions) *Detokenizer {
	d := &Detokenizer{t: t, skipSpecial: opts.SkipSpecial}
	for _, id := range opts.Prompt {
		d.Add(id)
	}
	return d
}

// Add decodes one more id and returns the text it completes (often "", e.g. for a skipped
// special token or the first byte of a multi-byte character).
func (d *Detokenizer) Add(id int32) string {
	if d.skipSpecial && d.t.IsSpecial(id) {
		return ""
	}
	piece := d.t.Piece(id)
	if !d.started {
		piece = d.t.stripLeadingSpace(piece)
		d.started = true
	}
	if len(d.pending) == 0 && utf8.ValidString(piece) {
		return piece // the common case: no bytes carried over, nothing held back
	}
	d.pending = append(d.pending, piece...)
	n := completePrefix(d.pending)
	out := ValidText(d.pending[:n])
	d.pending = append(d.pending[:0], d.pending[n:]...)
	return out
}

// Flush returns the bytes still held back (an incomplete character at the end of the stream)
// as U+FFFD, and resets that state.
func (d *Detokenizer) Flush() string {
	out := ValidText(d.pending)
	d.pending = d.pending[:0]
	return out
}

// completePrefix is the length of the longest prefix of p that does not end inside a
// possibly-valid incomplete character.
func completePrefix(p []byte) int {
	for i := 0; i < len(p); {
		if !utf8.FullRune(p[i:]) {
			return i
		}
		_, w := utf8.DecodeRune(p[i:])
		i += w
	}
	return len(p)
}

// ValidText converts bytes to valid UTF-8, replacing each maximal invalid subsequence (a byte
// that cannot start a character, or the valid start of a character cut short) with one U+FFFD,
// as Python's bytes.decode(errors="replace") does.
func ValidText(p []byte) string {
	if utf8.Valid(p) {
		return string(p)
	}
	var b strings.Builder
	b.Grow(len(p) + 8)
	for i := 0; i < len(p); {
		r, w := utf8.DecodeRune(p[i:])
		if r != utf8.RuneError || w > 1 {
			b.Write(p[i : i+w])
			i += w
			continue
		}
		b.WriteRune(utf8.RuneError)
		i += invalidLen(p[i:])
	}
	return b.String()
}

// invalidLen is the length of the maximal invalid subsequence at the start of p: the longest
// prefix (up to 3 bytes) that is the valid beginning of a character, or 1.
func invalidLen(p []byte) int {
	n := 1
	for k := 2; k <= 3 && k <= len(p); k++ {
		if utf8.FullRune(p[:k]) {
			break
		}
		n = k
	}
	return n
}
