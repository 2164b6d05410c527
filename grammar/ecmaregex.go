package grammar

import (
	"fmt"
	"regexp"
	"regexp/syntax"
	"strconv"
	"strings"
	"unicode/utf8"
)

// JSON Schema patterns are ECMA-262 regular expressions; pagoda parses them with Go's
// regexp/syntax after ecmaToRE2 rewrites the spellings that differ: \uXXXX and \u{X}
// escapes, \cX, [^] and [], counts above RE2's limit of 1000. Validators read patterns in
// their own dialects (ECMA-262, RE2, Python's re), whose classes disagree on non-ASCII
// characters, so the classes whose dialects differ match only what every one of them
// matches: \s is ASCII white space, \S, \D and \W leave out every character some
// dialect counts as space, digit or word; \d and \w are ASCII, as in ECMA-262; the dot
// leaves out ECMA's line terminators (\n \r U+2028 U+2029). Lookaround and
// backreferences are errors.

// asciiSpace is the white space of every dialect; anySpace what any dialect counts as
// white space (ECMA-262's WhiteSpace and LineTerminator, RE2's, Python's str.isspace).
const (
	asciiSpace = `\t\n\f\r `
	anySpace   = `\t\n\x{0B}\f\r \x{1C}-\x{1F}\x{85}\x{A0}\x{1680}\x{2000}-\x{200A}\x{2028}\x{2029}\x{202F}\x{205F}\x{3000}\x{FEFF}`
)

// bigRepeat is a count too large for RE2's parser: the quantified atom is parsed inside a
// capture named _pgN and turned into the repetition afterwards.
type bigRepeat struct{ min, max int }

// ecmaToRE2 rewrites an ECMA-262 pattern for syntax.Parse; big collects the counts above
// 1000, indexed by the N of their capture names.
func ecmaToRE2(p string, big *[]bigRepeat) (string, error) {
	var b strings.Builder
	inClass := false
	var atoms []int // output offsets where the atoms of the open groups begin
	lastAtom := -1
	for i := 0; i < len(p); {
		c := p[i]
		start := b.Len()
		switch {
		case c == '\\':
			n, err := ecmaEscape(p[i:], inClass, &b)
			if err != nil {
				return "", err
			}
			i += n
		case inClass:
			if c == ']' {
				inClass = false
			}
			b.WriteByte(c)
			i++
			continue
		case c == '[':
			switch {
			case strings.HasPrefix(p[i:], "[^]"):
				b.WriteString(`[\x{0}-\x{10FFFF}]`)
				i += 3
			case strings.HasPrefix(p[i:], "[]"):
				b.WriteString(`[^\x{0}-\x{10FFFF}]`)
				i += 2
			default:
				inClass = true
				b.WriteByte(c)
				i++
				if i < len(p) && p[i] == '^' {
					b.WriteByte('^')
					i++
				}
				if i < len(p) && p[i] == ']' { // a leading ] is a literal
					b.WriteString(`\]`)
					i++
				}
				lastAtom = start
				continue
			}
		case c == '(':
			if strings.HasPrefix(p[i:], "(?=") || strings.HasPrefix(p[i:], "(?!") ||
				strings.HasPrefix(p[i:], "(?<=") || strings.HasPrefix(p[i:], "(?<!") {
				return "", fmt.Errorf("lookaround (?= (?! (?<= (?<! is not supported")
			}
			atoms = append(atoms, start)
			b.WriteByte(c)
			i++
			continue
		case c == ')':
			b.WriteByte(c)
			i++
			if len(atoms) > 0 {
				lastAtom = atoms[len(atoms)-1]
				atoms = atoms[:len(atoms)-1]
			}
			continue
		case c == '{':
			if lo, hi, n, ok := parseCount(p[i:]); ok {
				if lo > maxRepeat || hi > maxRepeat {
					return "", &LimitError{Limit: "regex repetition counts", Value: maxRepeat}
				}
				if (lo > 1000 || hi > 1000) && lastAtom >= 0 {
					out := b.String()
					b.Reset()
					b.WriteString(out[:lastAtom])
					fmt.Fprintf(&b, "(?P<_pg%d>%s)", len(*big), out[lastAtom:])
					*big = append(*big, bigRepeat{lo, hi})
					i += n
					if i < len(p) && (p[i] == '?' || p[i] == '+') {
						i++ // lazy or possessive: the same language
					}
					lastAtom = -1
					continue
				}
				b.WriteString(p[i : i+n])
				i += n
				continue
			}
			b.WriteString(`\{`)
			i++
		case c == '}':
			b.WriteString(`\}`)
			i++
		case c == '*' || c == '+' || c == '?' || c == '|':
			b.WriteByte(c)
			i++
			if c == '|' {
				lastAtom = -1
			}
			continue
		default:
			_, n := utf8.DecodeRuneInString(p[i:])
			b.WriteString(p[i : i+n])
			i += n
		}
		lastAtom = start
	}
	return b.String(), nil
}

// parseCount reads {m}, {m,} or {m,n} at the start of s (hi -1: no bound).
func parseCount(s string) (lo, hi, n int, ok bool) {
	end := strings.IndexByte(s, '}')
	if end < 0 {
		return 0, 0, 0, false
	}
	body := s[1:end]
	a, b, comma := strings.Cut(body, ",")
	lo, err := strconv.Atoi(a)
	if err != nil || lo < 0 || strings.TrimSpace(a) != a {
		return 0, 0, 0, false
	}
	hi = lo
	if comma {
		if b == "" {
			hi = -1
		} else if hi, err = strconv.Atoi(b); err != nil || hi < lo {
			return 0, 0, 0, false
		}
	}
	if lo > maxCount || hi > maxCount {
		lo, hi = min(lo, maxCount+1), min(hi, maxCount+1)
	}
	return lo, hi, end + 1, true
}

// ecmaEscape writes the RE2 form of the escape at the start of s and returns its length.
func ecmaEscape(s string, inClass bool, b *strings.Builder) (int, error) {
	if len(s) < 2 {
		return 0, fmt.Errorf("trailing backslash")
	}
	c := s[1]
	switch {
	case c == 's':
		if inClass {
			b.WriteString(asciiSpace)
		} else {
			b.WriteString("[" + asciiSpace + "]")
		}
	case c == 'S' || c == 'W':
		if inClass {
			return 0, fmt.Errorf(`\%c inside a character class is not supported`, c)
		}
		if c == 'S' {
			b.WriteString("[^" + anySpace + "]")
		} else {
			b.WriteString(`[^\p{L}\p{N}_]`)
		}
	case c == 'D':
		b.WriteString(`\P{Nd}`)
	case c == 'u':
		r, n, err := ecmaUnicode(s)
		if err != nil {
			return 0, err
		}
		fmt.Fprintf(b, `\x{%X}`, r)
		return n, nil
	case c == 'c' && len(s) > 2 && (s[2]|0x20 >= 'a' && s[2]|0x20 <= 'z'):
		fmt.Fprintf(b, `\x{%X}`, s[2]%32)
		return 3, nil
	case c == '0' && (len(s) == 2 || s[2] < '0' || s[2] > '9'):
		b.WriteString(`\x00`)
	case c >= '1' && c <= '9' || c == 'k':
		return 0, fmt.Errorf("backreferences are not supported")
	case c == 'b' && inClass:
		b.WriteString(`\x08`)
	case c == '/' || c == '-' && !inClass:
		b.WriteByte(c)
	case c < utf8.RuneSelf:
		b.WriteString(s[:2])
	default:
		_, n := utf8.DecodeRuneInString(s[1:])
		b.WriteString(s[1 : 1+n]) // an escaped non-ASCII character is itself
		return 1 + n, nil
	}
	return 2, nil
}

// ecmaUnicode reads \uXXXX (a surrogate pair of two such escapes is one code point) or
// \u{X…}.
func ecmaUnicode(s string) (rune, int, error) {
	if strings.HasPrefix(s, `\u{`) {
		end := strings.IndexByte(s, '}')
		if end < 0 {
			return 0, 0, fmt.Errorf(`bad \u{...} escape`)
		}
		v, err := strconv.ParseUint(s[3:end], 16, 32)
		if err != nil || v > utf8.MaxRune {
			return 0, 0, fmt.Errorf(`bad \u{...} escape`)
		}
		return rune(v), end + 1, nil
	}
	hex4 := func(t string) (rune, bool) {
		if len(t) < 6 || t[0] != '\\' || t[1] != 'u' {
			return 0, false
		}
		v, err := strconv.ParseUint(t[2:6], 16, 32)
		return rune(v), err == nil
	}
	r, ok := hex4(s)
	if !ok {
		return 0, 0, fmt.Errorf(`bad \u escape`)
	}
	if r >= 0xD800 && r < 0xDC00 {
		if lo, ok := hex4(s[6:]); ok && lo >= 0xDC00 && lo < 0xE000 {
			return (r-0xD800)<<10 + (lo - 0xDC00) + 0x10000, 12, nil
		}
	}
	return r, 6, nil
}

// rxCache parses and compiles the patterns of one schema once each.
type rxCache struct {
	trees   map[string]*syntax.Regexp
	errs    map[string]error
	matches map[string]*regexp.Regexp
}

func newRxCache() *rxCache {
	return &rxCache{trees: map[string]*syntax.Regexp{}, errs: map[string]error{}, matches: map[string]*regexp.Regexp{}}
}

// maxPatternLen bounds a pattern's length.
const maxPatternLen = 10000

// parse is the syntax tree of an ECMA-262 pattern (shared: never modify it).
func (r *rxCache) parse(p string) (*syntax.Regexp, error) {
	if t, ok := r.trees[p]; ok {
		return t, nil
	}
	if err, ok := r.errs[p]; ok {
		return nil, err
	}
	t, err := parseECMA(p)
	if err != nil {
		err = fmt.Errorf("regex %q: %w", p, err)
		r.errs[p] = err
		return nil, err
	}
	r.trees[p] = t
	return t, nil
}

func parseECMA(p string) (*syntax.Regexp, error) {
	if len(p) > maxPatternLen {
		return nil, fmt.Errorf("longer than %d bytes", maxPatternLen)
	}
	var big []bigRepeat
	s, err := ecmaToRE2(p, &big)
	if err != nil {
		return nil, err
	}
	t, err := syntax.Parse(s, syntax.Perl)
	if err != nil {
		return nil, err
	}
	return fixECMA(t, big), nil
}

// fixECMA gives the dot ECMA's meaning and puts back the big counts.
func fixECMA(t *syntax.Regexp, big []bigRepeat) *syntax.Regexp {
	switch t.Op {
	case syntax.OpAnyCharNotNL:
		return &syntax.Regexp{Op: syntax.OpCharClass, Rune: []rune{0, '\n' - 1, '\n' + 1, '\r' - 1, '\r' + 1, 0x2027, 0x202A, utf8.MaxRune}}
	case syntax.OpCapture:
		if i, err := strconv.Atoi(strings.TrimPrefix(t.Name, "_pg")); err == nil && strings.HasPrefix(t.Name, "_pg") && i < len(big) {
			return &syntax.Regexp{Op: syntax.OpRepeat, Min: big[i].min, Max: big[i].max, Sub: []*syntax.Regexp{fixECMA(t.Sub[0], big)}}
		}
	}
	for i, s := range t.Sub {
		t.Sub[i] = fixECMA(s, big)
	}
	return t
}

// match reports whether the ECMA-262 pattern matches somewhere in s.
func (r *rxCache) match(p, s string) (bool, error) {
	re, ok := r.matches[p]
	if !ok {
		t, err := r.parse(p)
		if err != nil {
			return false, err
		}
		if re, err = regexp.Compile(t.String()); err != nil {
			return false, fmt.Errorf("regex %q: too large to check a value against (%v)", p, err)
		}
		r.matches[p] = re
	}
	return re.MatchString(s), nil
}

// format is the syntax tree of a format's expression (one of formatRegex's).
func (r *rxCache) format(f string) *syntax.Regexp {
	key := "\x00format:" + f
	if t, ok := r.trees[key]; ok {
		return t
	}
	t, err := syntax.Parse(formatRegex[f], syntax.Perl)
	if err != nil {
		panic("grammar: format " + f + " does not parse: " + err.Error())
	}
	r.trees[key] = t
	return t
}

// matchFormat reports whether s has the format (one of formatRegex's).
func (r *rxCache) matchFormat(f, s string) bool {
	key := "\x00format:" + f
	re, ok := r.matches[key]
	if !ok {
		re = regexp.MustCompile(`^(?:` + formatRegex[f] + `)$`)
		r.matches[key] = re
	}
	return re.MatchString(s)
}
