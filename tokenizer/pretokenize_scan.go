package tokenizer

import "unicode"

// gpt2Scanner splits like GPT-2's pattern
//
//	's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
//
// with llama.cpp's categories. It runs in one pass over the chunk.
type gpt2Scanner struct{}

func (gpt2Scanner) split(t *decodedText, lo, hi int, ends []int) []int {
	return scan(t, lo, hi, false, ends, func(pos int, ends []int) ([]int, int) {
		end := gpt2Piece(t, pos, lo, hi)
		return append(ends, end), end
	})
}

// scan cuts [lo, hi) into pieces: a contraction at pos (matched case-insensitively when
// fold) is one piece; otherwise piece appends the ends of the pieces that start at pos and
// returns where the next one starts.
func scan(t *decodedText, lo, hi int, fold bool, ends []int, piece func(pos int, ends []int) ([]int, int)) []int {
	for pos := lo; pos < hi; {
		if n := contraction(t, pos, lo, hi, fold); n > 0 {
			pos += n
			ends = append(ends, pos)
			continue
		}
		ends, pos = piece(pos, ends)
	}
	return ends
}

// gpt2Piece returns the end of the GPT-2 piece at pos (not a contraction):
// ` ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+`, else a whitespace run.
func gpt2Piece(t *decodedText, pos, lo, hi int) int {
	f := t.class(pos, lo, hi)
	start := pos
	if t.cps[pos] == ' ' {
		f = t.class(pos+1, lo, hi)
		start = pos + 1
	}
	var want cpClass
	switch {
	case f&classLetter != 0:
		want = classLetter
	case f&classNumber != 0:
		want = classNumber
	case f != 0 && f&classSpace == 0:
		want = classOther // [^\s\p{L}\p{N}]
	default:
		return whitespaceRun(t, pos, lo, hi)
	}
	pos = start
	for pos < hi && sameRun(t.class(pos, lo, hi), want) {
		pos++
	}
	return pos
}

// sameRun reports whether class f continues a run of want (letters, numbers, or "other":
// anything that is not whitespace, letter or number).
func sameRun(f, want cpClass) bool {
	if want == classOther {
		return f != 0 && f&(classSpace|classLetter|classNumber) == 0
	}
	return f&want != 0
}

// whitespaceRun handles \s+(?!\S)|\s+ at pos and returns the end of the piece: a whitespace
// run followed by a non-space leaves its last space for the next piece. A position that
// matches nothing makes a one-codepoint piece.
func whitespaceRun(t *decodedText, pos, lo, hi int) int {
	n := 0
	for t.class(pos+n, lo, hi)&classSpace != 0 {
		n++
	}
	switch {
	case n > 1 && pos+n < hi:
		return pos + n - 1
	case n > 0:
		return pos + n
	default:
		return pos + 1
	}
}

// contraction matches 's|'t|'re|'ve|'m|'ll|'d at pos (case-insensitively when fold) and
// returns its length in codepoints, or 0.
func contraction(t *decodedText, pos, lo, hi int, fold bool) int {
	if t.cps[pos] != '\'' || pos+1 >= hi {
		return 0
	}
	lower := func(r rune) rune {
		if fold {
			return unicode.ToLower(r)
		}
		return r
	}
	a := lower(t.cp(pos+1, lo, hi))
	if a == 's' || a == 't' || a == 'm' || a == 'd' {
		return 2
	}
	if pos+2 >= hi {
		return 0
	}
	b := lower(t.cp(pos+2, lo, hi))
	if (a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l') {
		return 3
	}
	return 0
}

// llama3Scanner splits like Llama-3's pattern
//
//	(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
//
// with digit runs of at most digitRun codepoints (3 for Llama-3, 1 for Qwen2, 0 = unbounded
// for Bloom/Poro).
type llama3Scanner struct{ digitRun int }

func (s llama3Scanner) split(t *decodedText, lo, hi int, ends []int) []int {
	return scan(t, lo, hi, true, ends, func(pos int, ends []int) ([]int, int) {
		return s.piece(t, pos, lo, hi, ends)
	})
}

// piece appends the end(s) of the Llama-3 piece at pos (not a contraction) and returns
// where the next one starts: a digit run may make several pieces.
func (s llama3Scanner) piece(t *decodedText, pos, lo, hi int, ends []int) ([]int, int) {
	c := t.cps[pos]
	f := t.class(pos, lo, hi)
	switch {
	case c != '\r' && c != '\n' && f&classNumber == 0 &&
		(f&classLetter != 0 || t.class(pos+1, lo, hi)&classLetter != 0):
		pos++ // the optional leading non-letter, or the first letter
		for t.class(pos, lo, hi)&classLetter != 0 {
			pos++
		}
	case f&classNumber != 0:
		return s.digits(t, pos, lo, hi, ends)
	case isPunctStart(t, pos, lo, hi):
		if c == ' ' {
			pos++
		}
		for sameRun(t.class(pos, lo, hi), classOther) {
			pos++
		}
		for r := t.cp(pos, lo, hi); r == '\r' || r == '\n'; r = t.cp(pos, lo, hi) {
			pos++
		}
	default:
		pos = newlineOrWhitespaceRun(t, pos, lo, hi)
	}
	return append(ends, pos), pos
}

// digits emits \p{N}{1,digitRun} pieces for the number run at pos.
func (s llama3Scanner) digits(t *decodedText, pos, lo, hi int, ends []int) ([]int, int) {
	start := pos
	for t.class(pos, lo, hi)&classNumber != 0 {
		pos++
		if s.digitRun > 0 && pos-start >= s.digitRun {
			ends = append(ends, pos)
			start = pos
		}
	}
	if pos > start {
		ends = append(ends, pos)
	}
	return ends, pos
}

// isPunctStart reports whether " ?[^\s\p{L}\p{N}]+" can start at pos.
func isPunctStart(t *decodedText, pos, lo, hi int) bool {
	f := t.class(pos, lo, hi)
	if t.cps[pos] == ' ' {
		f = t.class(pos+1, lo, hi)
		if f == 0 {
			return true // a lone trailing space: the same piece \s+ would give
		}
	}
	return f&(classSpace|classLetter|classNumber) == 0
}

// newlineOrWhitespaceRun handles \s*[\r\n]+|\s+(?!\S)|\s+ at pos: a whitespace run that
// contains a line break ends after its last \r or \n.
func newlineOrWhitespaceRun(t *decodedText, pos, lo, hi int) int {
	lastBreak := -1
	n := 0
	for t.class(pos+n, lo, hi)&classSpace != 0 {
		if r := t.cps[pos+n]; r == '\r' || r == '\n' {
			lastBreak = pos + n + 1
		}
		n++
	}
	if lastBreak > 0 {
		return lastBreak
	}
	return whitespaceRun(t, pos, lo, hi)
}
