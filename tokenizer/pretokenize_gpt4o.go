package tokenizer

// gpt4oScanner splits like GPT-4o's o200k pattern (tokenizer.ggml.pre "gpt-4o": o200k_base and
// gpt-oss's o200k_harmony) as llama.cpp runs it (LLAMA_VOCAB_PRE_TYPE_GPT4O in llama-vocab.cpp):
//
//	[^\r\n\p{L}\p{N}]?((?=[\p{L}])([^a-z]))*((?=[\p{L}])([^A-Z]))+(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?
//	|[^\r\n\p{L}\p{N}]?((?=[\p{L}])([^a-z]))+((?=[\p{L}])([^A-Z]))*(?:'[sS]|…|'[dD])?
//	|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+
//
// llama.cpp rewrites tiktoken's case classes ([\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]* then
// [\p{Ll}\p{Lm}\p{Lo}\p{M}]+) as "a letter that is not a-z" and "a letter that is not A-Z", and
// runs the pattern with std::regex (ECMAScript: ordered alternatives, greedy quantifiers that
// backtrack) on text in which every non-ASCII codepoint is collapsed to its category. So a
// non-ASCII letter counts as both cases, marks are not letters, and e.g. "ÀB " splits as
// "À", "B" where tiktoken keeps "ÀB": pagoda follows llama.cpp, whose ids the gpt-oss GGUFs
// are served with. The scanner reproduces that backtracking in one pass per piece.
type gpt4oScanner struct{}

func (gpt4oScanner) split(t *decodedText, lo, hi int, ends []int) []int {
	for pos := lo; pos < hi; {
		pos = gpt4oPiece(t, pos, lo, hi)
		ends = append(ends, pos)
	}
	return ends
}

// gpt4oPiece returns the end of the piece that starts at pos.
func gpt4oPiece(t *decodedText, pos, lo, hi int) int {
	if end := gpt4oWord(t, pos, lo, hi); end > pos {
		return end
	}
	f := t.class(pos, lo, hi)
	switch {
	case f&classNumber != 0: // \p{N}{1,3}
		end := pos + 1
		for end-pos < 3 && t.class(end, lo, hi)&classNumber != 0 {
			end++
		}
		return end
	case isOther(t.class(pos, lo, hi)) || (t.cps[pos] == ' ' && isOther(t.class(pos+1, lo, hi))):
		// ` ?[^\s\p{L}\p{N}]+[\r\n/]*`
		end := pos + 1
		for isOther(t.class(end, lo, hi)) {
			end++
		}
		for r := t.cp(end, lo, hi); r == '\r' || r == '\n' || r == '/'; r = t.cp(end, lo, hi) {
			end++
		}
		return end
	default:
		return newlineOrWhitespaceRun(t, pos, lo, hi)
	}
}

// isOther reports whether f is [^\s\p{L}\p{N}] (and a codepoint of the chunk).
func isOther(f cpClass) bool { return f != 0 && f&(classSpace|classLetter|classNumber) == 0 }

// gpt4oWord matches the two word alternatives at pos and returns their end, or pos when
// neither matches. The optional prefix [^\r\n\p{L}\p{N}] is taken whenever it can be:
// without it the word would have to start at that same non-letter.
func gpt4oWord(t *decodedText, pos, lo, hi int) int {
	s := pos
	if c := t.cps[pos]; c != '\r' && c != '\n' && t.class(pos, lo, hi)&(classLetter|classNumber) == 0 {
		s++
	}
	upper := func(i int) bool { // (?=[\p{L}])([^a-z])
		return t.class(i, lo, hi)&classLetter != 0 && (t.cps[i] < 'a' || t.cps[i] > 'z')
	}
	lower := func(i int) bool { // (?=[\p{L}])([^A-Z])
		return t.class(i, lo, hi)&classLetter != 0 && (t.cps[i] < 'A' || t.cps[i] > 'Z')
	}
	u := s
	for upper(u) {
		u++
	}
	// First alternative: upper* lower+, the greedy upper* giving back one codepoint at a time
	// until lower+ can start.
	for k := u; k >= s; k-- {
		if lower(k) {
			end := k + 1
			for lower(end) {
				end++
			}
			return end + asciiContraction(t, end, lo, hi)
		}
	}
	// Second alternative: upper+ lower*.
	if u > s {
		end := u
		for lower(end) {
			end++
		}
		return end + asciiContraction(t, end, lo, hi)
	}
	return pos
}

// asciiContraction matches '[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD] at pos and
// returns its length in codepoints, or 0.
func asciiContraction(t *decodedText, pos, lo, hi int) int {
	if t.cp(pos, lo, hi) != '\'' {
		return 0
	}
	fold := func(r rune) rune {
		if r >= 'A' && r <= 'Z' {
			return r + ('a' - 'A')
		}
		return r
	}
	a, b := fold(t.cp(pos+1, lo, hi)), fold(t.cp(pos+2, lo, hi))
	switch {
	case a == 's' || a == 't' || a == 'm' || a == 'd':
		return 2
	case (a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l'):
		return 3
	}
	return 0
}
