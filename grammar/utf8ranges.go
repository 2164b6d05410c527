package grammar

import (
	"slices"
	"unicode/utf8"
)

// byteSet is a set of bytes: bit b of word b/64.
type byteSet [4]uint64

func (s *byteSet) has(b byte) bool { return s[b>>6]>>(b&63)&1 != 0 }
func (s *byteSet) add(lo, hi byte) {
	for c := int(lo); c <= int(hi); c++ {
		s[c>>6] |= 1 << (c & 63)
	}
}
func (s *byteSet) empty() bool { return s[0]|s[1]|s[2]|s[3] == 0 }
func (s *byteSet) or(t *byteSet) {
	for i := range s {
		s[i] |= t[i]
	}
}

// byteRange is an inclusive range of bytes.
type byteRange struct{ lo, hi byte }

// normalizeClass returns the code points of a class as sorted, disjoint, non-adjacent pairs
// lo, hi, with the surrogates D800–DFFF (not encodable in UTF-8) removed.
func normalizeClass(n *node) []rune {
	var r [][2]rune
	for i := 0; i+1 < len(n.ranges); i += 2 {
		r = append(r, [2]rune{n.ranges[i], n.ranges[i+1]})
	}
	slices.SortFunc(r, func(a, b [2]rune) int { return int(a[0] - b[0]) })
	var merged [][2]rune
	for _, x := range r {
		if k := len(merged) - 1; k >= 0 && x[0] <= merged[k][1]+1 {
			merged[k][1] = max(merged[k][1], x[1])
			continue
		}
		merged = append(merged, x)
	}
	if n.neg {
		var c [][2]rune
		next := rune(0)
		for _, x := range merged {
			if x[0] > next {
				c = append(c, [2]rune{next, x[0] - 1})
			}
			next = x[1] + 1
		}
		if next <= utf8.MaxRune {
			c = append(c, [2]rune{next, utf8.MaxRune})
		}
		merged = c
	}
	var out []rune
	for _, x := range merged {
		lo, hi := x[0], min(x[1], utf8.MaxRune)
		if lo < 0xD800 && hi >= 0xD800 {
			out = append(out, lo, 0xD7FF)
			lo = 0xD800
		}
		if lo >= 0xD800 && lo <= 0xDFFF {
			lo = 0xE000
		}
		if lo <= hi {
			out = append(out, lo, hi)
		}
	}
	return out
}

// utf8Sequences appends the byte-range sequences whose union encodes exactly the code points
// lo..hi (no surrogates inside): each sequence has one range per byte of the encoding.
func utf8Sequences(lo, hi rune, out [][]byteRange) [][]byteRange {
	for _, b := range [...]rune{0x7F, 0x7FF, 0xFFFF} {
		if lo <= b && hi > b {
			out = utf8Sequences(lo, b, out)
			return utf8Sequences(b+1, hi, out)
		}
	}
	n := utf8.RuneLen(lo)
	if n == 1 {
		return append(out, []byteRange{{byte(lo), byte(hi)}})
	}
	for i := 1; i < n; i++ {
		m := rune(1)<<(6*i) - 1
		if lo&^m != hi&^m {
			if lo&m != 0 {
				out = utf8Sequences(lo, lo|m, out)
				return utf8Sequences((lo|m)+1, hi, out)
			}
			if hi&m != m {
				out = utf8Sequences(lo, (hi&^m)-1, out)
				return utf8Sequences(hi&^m, hi, out)
			}
		}
	}
	a, b := utf8.AppendRune(nil, lo), utf8.AppendRune(nil, hi)
	s := make([]byteRange, n)
	for i := range s {
		s[i] = byteRange{a[i], b[i]}
	}
	return append(out, s)
}
