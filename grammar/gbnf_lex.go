package grammar

import (
	"strings"
	"unicode/utf8"
)

// literal parses the rest of a "..." literal (start is the opening quote).
func (p *gbnfParser) literal(start int) (*node, error) {
	var b []byte
	for {
		if p.pos >= len(p.src) || p.src[p.pos] == '\n' {
			return nil, p.errAt(start, "unterminated string literal")
		}
		if p.src[p.pos] == '"' {
			p.pos++
			return lit(string(b)), nil
		}
		c, err := p.char()
		if err != nil {
			return nil, err
		}
		b = utf8.AppendRune(b, c)
	}
}

// charClass parses the rest of a [...] class (start is the opening bracket).
func (p *gbnfParser) charClass(start int) (*node, error) {
	n := class(false)
	if p.eat("^") {
		n.neg = true
	}
	for {
		if p.pos >= len(p.src) || p.src[p.pos] == '\n' {
			return nil, p.errAt(start, "unterminated character class")
		}
		if p.src[p.pos] == ']' {
			p.pos++
			return n, nil
		}
		lo, err := p.char()
		if err != nil {
			return nil, err
		}
		hi := lo
		if p.pos+1 < len(p.src) && p.src[p.pos] == '-' && p.src[p.pos+1] != ']' {
			at := p.pos
			p.pos++
			if hi, err = p.char(); err != nil {
				return nil, err
			}
			if hi < lo {
				return nil, p.errAt(at, "character range %q-%q is reversed", lo, hi)
			}
		}
		n.ranges = append(n.ranges, lo, hi)
	}
}

// char reads one character of a literal or class, decoding an escape.
func (p *gbnfParser) char() (rune, error) {
	start := p.pos
	r, size := utf8.DecodeRuneInString(p.src[p.pos:])
	if r == utf8.RuneError && size == 1 {
		return 0, p.errAt(start, "invalid UTF-8")
	}
	p.pos += size
	if r != '\\' {
		return r, nil
	}
	if p.pos >= len(p.src) {
		return 0, p.errAt(start, "escape at end of input")
	}
	e := p.src[p.pos]
	p.pos++
	switch e {
	case 'n':
		return '\n', nil
	case 't':
		return '\t', nil
	case 'r':
		return '\r', nil
	case '\\', '"', '[', ']', '-', '^', '/', '\'':
		return rune(e), nil
	case 'x':
		return p.hex(start, 2)
	case 'u':
		return p.hex(start, 4)
	case 'U':
		return p.hex(start, 8)
	}
	return 0, p.errAt(start, "unknown escape \\%c", e)
}

func (p *gbnfParser) hex(start, digits int) (rune, error) {
	var v rune
	for i := 0; i < digits; i++ {
		if p.pos >= len(p.src) {
			return 0, p.errAt(start, "escape needs %d hex digits", digits)
		}
		d, ok := hexDigit(p.src[p.pos])
		if !ok {
			return 0, p.errAt(start, "escape needs %d hex digits", digits)
		}
		v = v<<4 | rune(d)
		p.pos++
	}
	if v > utf8.MaxRune || (v >= 0xD800 && v <= 0xDFFF) {
		return 0, p.errAt(start, "escape U+%04X is not a Unicode scalar value", v)
	}
	return v, nil
}

// hexDigit is the value of hexadecimal digit c.
func hexDigit(c byte) (byte, bool) {
	i := strings.IndexByte("0123456789abcdefABCDEF", c)
	if i >= 16 {
		i -= 6
	}
	return byte(i), i >= 0
}
