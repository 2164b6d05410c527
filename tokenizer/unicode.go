package tokenizer

import (
	"unicode"
	"unicode/utf8"
)

// cpClass is the coarse Unicode classification the pre-tokenizers need. It follows llama.cpp's
// codepoint flags: \p{L} is any letter category, \p{N} any number category (Nd, Nl, No), and
// whitespace is the Unicode White_Space property (the same 25 codepoints llama.cpp lists).
// Every codepoint, assigned or not, has a non-zero class; zero means "past the end of the chunk".
type cpClass uint8

const (
	classOther cpClass = 1 << iota // any codepoint (set for every real codepoint)
	classLetter
	classNumber
	classSpace
)

// asciiClass caches the classes of the ASCII range.
var asciiClass = func() (t [128]cpClass) {
	for r := range rune(128) {
		t[r] = computeClass(r)
	}
	return t
}()

func computeClass(r rune) cpClass {
	c := classOther
	switch {
	case unicode.Is(unicode.White_Space, r):
		c |= classSpace
	case unicode.IsLetter(r):
		c |= classLetter
	case unicode.IsNumber(r):
		c |= classNumber
	}
	return c
}

func classOf(r rune) cpClass {
	if r >= 0 && r < 128 {
		return asciiClass[r]
	}
	return computeClass(r)
}

// decodedText is a string split into codepoints. Invalid UTF-8 bytes are single codepoints
// U+FFFD (as in llama.cpp) but keep their raw byte in s, so byte-level BPE stays lossless.
type decodedText struct {
	s    string
	cps  []rune // (n) codepoints
	offs []int  // (n+1) byte offset of each codepoint in s; offs[n] == len(s)
}

func decodeText(s string) *decodedText {
	t := &decodedText{s: s, cps: make([]rune, 0, len(s)), offs: make([]int, 0, len(s)+1)}
	for i := 0; i < len(s); {
		r, w := utf8.DecodeRuneInString(s[i:])
		t.cps = append(t.cps, r)
		t.offs = append(t.offs, i)
		i += w
	}
	t.offs = append(t.offs, len(s))
	return t
}

// class returns the class of codepoint i, or 0 when i is outside [lo, hi).
func (t *decodedText) class(i, lo, hi int) cpClass {
	if i < lo || i >= hi {
		return 0
	}
	return classOf(t.cps[i])
}

// cp returns codepoint i, or -1 when i is outside [lo, hi).
func (t *decodedText) cp(i, lo, hi int) rune {
	if i < lo || i >= hi {
		return -1
	}
	return t.cps[i]
}

// cpIndex maps a byte offset that lies on a codepoint boundary to its codepoint index.
func (t *decodedText) cpIndex(off int) int {
	lo, hi := 0, len(t.offs)-1
	for lo < hi {
		mid := (lo + hi) / 2
		if t.offs[mid] < off {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	return lo
}

// byteToRune and runeToByte are GPT-2's reversible byte↔unicode mapping: printable Latin-1
// bytes map to themselves, the other 68 bytes to U+0100.. in byte order.
var byteToRune, runeToByte = func() (b2r [256]rune, r2b map[rune]byte) {
	r2b = make(map[rune]byte, 256)
	n := rune(0)
	for b := range 256 {
		if (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF) {
			b2r[b] = rune(b)
		} else {
			b2r[b] = 256 + n
			n++
		}
		r2b[b2r[b]] = byte(b)
	}
	return b2r, r2b
}()

// byteEncode appends the GPT-2 byte-level encoding of raw to dst.
func byteEncode(dst []byte, raw string) []byte {
	for i := 0; i < len(raw); i++ {
		dst = utf8.AppendRune(dst, byteToRune[raw[i]])
	}
	return dst
}

// byteDecode appends the bytes that a byte-level token text stands for. A codepoint outside
// the mapping (possible only in hand-made vocabularies) is copied through as UTF-8.
func byteDecode(dst []byte, text string) []byte {
	for _, r := range text {
		if b, ok := runeToByte[r]; ok {
			dst = append(dst, b)
		} else {
			dst = utf8.AppendRune(dst, r)
		}
	}
	return dst
}
