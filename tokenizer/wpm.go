package tokenizer

import (
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"
)

// WordPiece (tokenizer.ggml.model "bert": BERT, BGE, MiniLM), as llama.cpp's
// llm_tokenizer_wpm: the text is normalised and split into words (BERT's basic
// tokenizer: whitespace separates, every punctuation character, ASCII symbol and CJK
// ideograph is a word of its own, control characters are dropped, letters lower-cased
// and accents stripped unless the vocabulary says otherwise), then each word, with
// the phantom space "▁" in front (llama.cpp's converter writes word-initial pieces
// with it and continuation pieces without "##"), is cut greedily into the longest
// pieces of the vocabulary from the left; a word with a part that matches no piece
// is one [UNK]. Encode with special tokens adds [CLS] (the BOS id) before and [SEP]
// after.

// ModelWPM names WordPiece vocabularies in Config.Model.
const ModelWPM = "bert"

// GGUF keys of BERT's normaliser options (both default to true in llama.cpp; a
// lowercase key without a strip_accents key sets both).
const (
	keyLowercase    = "tokenizer.ggml.normalizer.lowercase"
	keyStripAccents = "tokenizer.ggml.normalizer.strip_accents"
)

// wpmWords splits text into the normalised words of llama.cpp's
// llm_tokenizer_wpm_session::preprocess.
func wpmWords(text string, lower, strip bool) []string {
	var words []string
	var cur strings.Builder
	flush := func() {
		if cur.Len() > 0 {
			words = append(words, cur.String())
			cur.Reset()
		}
	}
	for _, r := range text { // invalid UTF-8 decodes to U+FFFD, which is dropped below
		if strip {
			r = nfd(r)
		}
		switch {
		case unicode.Is(unicode.White_Space, r):
			flush()
			continue
		case r == 0 || r == utf8.RuneError || unicode.In(r, unicode.C):
			continue
		case strip && unicode.In(r, unicode.M):
			continue
		}
		if lower {
			r = unicode.ToLower(r)
		}
		if unicode.In(r, unicode.P) || (r < 0x7F && unicode.In(r, unicode.S)) || isCJK(r) {
			flush()
			words = append(words, string(r))
			continue
		}
		cur.WriteRune(r)
	}
	flush()
	return words
}

// wpmEncode appends the WordPiece tokens of one text fragment to out.
func (t *Tokenizer) wpmEncode(fragment string, out []int32) []int32 {
	for _, w := range wpmWords(fragment, t.lowercase, t.stripAccents) {
		word := "\u2581" + w
		start := len(out)
		for i := 0; i < len(word); {
			match := false
			for j := min(len(word), i+t.maxTokenLen); j > i; j-- {
				if id, ok := t.ids[word[i:j]]; ok {
					out = append(out, id)
					i, match = j, true
					break
				}
			}
			if !match {
				out = out[:start]
				break
			}
		}
		if len(out) == start {
			out = append(out, t.unk)
		}
	}
	return out
}

// nfd is the first codepoint of r's NFD decomposition (llama.cpp's
// unicode_cpts_normalize_nfd), r itself when it has none.
func nfd(r rune) rune {
	c := uint32(r)
	i := sort.Search(len(nfdRanges), func(i int) bool { return nfdRanges[i][0] > c }) - 1
	if i >= 0 && nfdRanges[i][0] <= c && c <= nfdRanges[i][1] {
		return rune(nfdRanges[i][2])
	}
	return r
}

// isCJK reports a CJK ideograph, in the ranges of BERT's _is_chinese_char as llama.cpp
// lists them.
func isCJK(r rune) bool {
	return (r >= 0x4E00 && r <= 0x9FFF) || (r >= 0x3400 && r <= 0x4DBF) || (r >= 0x20000 && r <= 0x2A6DF) ||
		(r >= 0x2A700 && r <= 0x2B73F) || (r >= 0x2B740 && r <= 0x2B81F) || (r >= 0x2B920 && r <= 0x2CEAF) ||
		(r >= 0xF900 && r <= 0xFAFF) || (r >= 0x2F800 && r <= 0x2FA1F)
}
