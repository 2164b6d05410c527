package grammar

import (
	"strconv"
	"strings"
)

// maxBoundDigits bounds the integers of a range: 16 digits, like integral-part.
const maxBoundDigits = 16

// intRangeNode is the decimal spelling of the integers in the range (no leading zeros;
// "-0" only when the range is unbounded), of at most 16 digits when unbounded above or
// below; nil when the range is empty.
func intRangeNode(lo, hi int64, hasLo, hasHi bool) *node {
	if !hasLo && !hasHi {
		return seq(opt(lit("-")), ref("integral-part"))
	}
	if hasLo && hasHi && lo > hi {
		return nil
	}
	var alts []*node
	// negative part: -x for x in [max(1, -hi), -lo] (lo unbounded: no upper limit on x)
	if !hasLo || lo < 0 {
		from := int64(1)
		if hasHi && hi < 0 {
			from = -hi
		}
		if hasLo {
			alts = append(alts, seq(lit("-"), uintRange(from, -lo)))
		} else {
			alts = append(alts, seq(lit("-"), uintAtLeast(from)))
		}
	}
	// non-negative part: [max(0, lo), hi]
	if !hasHi || hi >= 0 {
		from := max(lo, 0)
		if !hasLo {
			from = 0
		}
		if hasHi {
			alts = append(alts, uintRange(from, hi))
		} else {
			alts = append(alts, uintAtLeast(from))
		}
	}
	if len(alts) == 1 {
		return alts[0]
	}
	return alt(alts...)
}

// uintRange is the decimal spelling of the integers lo..hi (0 <= lo <= hi).
func uintRange(lo, hi int64) *node {
	a, b := strconv.FormatInt(lo, 10), strconv.FormatInt(hi, 10)
	var alts []*node
	for n := len(a); n <= len(b); n++ {
		from, to := "1"+strings.Repeat("0", n-1), strings.Repeat("9", n)
		if n == 1 {
			from = "0"
		}
		if n == len(a) {
			from = a
		}
		if n == len(b) {
			to = b
		}
		alts = append(alts, digitsBetween(from, to))
	}
	if len(alts) == 1 {
		return alts[0]
	}
	return alt(alts...)
}

// uintAtLeast is the decimal spelling of the integers >= lo of at most maxBoundDigits digits.
func uintAtLeast(lo int64) *node {
	a := strconv.FormatInt(lo, 10)
	same := digitsBetween(a, strings.Repeat("9", len(a)))
	if len(a) >= maxBoundDigits {
		return same
	}
	longer := seq(class(false, '1', '9'), rep(class(false, '0', '9'), len(a), maxBoundDigits-1))
	return alt(same, longer)
}

// digitsBetween is the strings of len(a) digits from a to b (a <= b, same length).
func digitsBetween(a, b string) *node {
	if a == "" {
		return empty()
	}
	n := len(a) - 1
	if strings.Trim(a[1:], "0") == "" && strings.Trim(b[1:], "9") == "" {
		return cat(class(false, rune(a[0]), rune(b[0])), rep(class(false, '0', '9'), n, n))
	}
	if a[0] == b[0] {
		return cat(lit(a[:1]), digitsBetween(a[1:], b[1:]))
	}
	alts := []*node{cat(lit(a[:1]), digitsBetween(a[1:], strings.Repeat("9", n)))}
	if a[0]+1 <= b[0]-1 {
		alts = append(alts, cat(class(false, rune(a[0]+1), rune(b[0]-1)), rep(class(false, '0', '9'), n, n)))
	}
	alts = append(alts, cat(lit(b[:1]), digitsBetween(strings.Repeat("0", n), b[1:])))
	return alt(alts...)
}
