package grammar

import (
	"math"
	"strconv"
	"strings"
)

// maxBoundDigits bounds the integers of a range: 16 digits, like integral-part.
const maxBoundDigits = 16

// integer translates an integer schema; with minimum, maximum, exclusiveMinimum or
// exclusiveMaximum (numbers), the grammar spells exactly the integers in the range (no
// leading zeros, no "-0"), of at most 16 digits when unbounded above or below.
func (c *schemaConv) integer(s *jvalue, path string) (*node, error) {
	lo, hasLo, err := bound(s, path, "minimum", "exclusiveMinimum", math.Ceil, 1)
	if err != nil {
		return nil, err
	}
	hi, hasHi, err := bound(s, path, "maximum", "exclusiveMaximum", math.Floor, -1)
	if err != nil {
		return nil, err
	}
	if !hasLo && !hasHi {
		return ref("integer"), nil
	}
	if hasLo && hasHi && lo > hi {
		return nil, schemaErr(path, "no integer lies between the minimum and the maximum")
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
	body := alts[0]
	if len(alts) > 1 {
		body = alt(alts...)
	}
	return seq(body, ref("space")), nil
}

// bound reads an inclusive keyword and its exclusive form (a number in JSON Schema 2020-12),
// rounded inward to an integer.
func bound(s *jvalue, path, incl, excl string, round func(float64) float64, step int64) (int64, bool, error) {
	var v int64
	has := false
	for _, kw := range [...]string{incl, excl} {
		x, ok := s.get(kw)
		if !ok {
			continue
		}
		f, err := strconv.ParseFloat(x.str, 64)
		if x.kind != 'n' || err != nil {
			return 0, false, schemaErr(path, "%s must be a number", kw)
		}
		if math.Abs(f) >= 1e15 {
			return 0, false, schemaErr(path, "%s %s is beyond the supported range (|x| < 1e15)", kw, x.str)
		}
		b := int64(round(f))
		if kw == excl && float64(b) == f {
			b += step
		}
		if !has || (step > 0 && b > v) || (step < 0 && b < v) {
			v = b
		}
		has = true
	}
	return v, has, nil
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
