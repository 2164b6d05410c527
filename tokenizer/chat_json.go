package tokenizer

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"unicode/utf16"

	"github.com/nikolalohinski/gonja/v2/exec"
)

// filterToJSON is Hugging Face's tojson: json.dumps(x, ensure_ascii=False, indent=indent,
// separators=separators, sort_keys=sort_keys). Go maps have no order, so their keys are
// always sorted; ordered dicts built in the template keep their order.
func filterToJSON(_ *exec.Evaluator, in *exec.Value, params *exec.VarArgs) *exec.Value {
	if in.IsError() {
		return in
	}
	var indent, separators *exec.Value
	var ensureASCII, sortKeys bool
	keep := func(dst **exec.Value) exec.ArgumentTransmuter {
		return func(v *exec.Value) error { *dst = v; return nil }
	}
	if err := params.Take(
		exec.KeywordArgument("ensure_ascii", exec.AsValue(false), exec.BoolArgument(&ensureASCII)),
		exec.KeywordArgument("indent", exec.AsValue(nil), keep(&indent)),
		exec.KeywordArgument("separators", exec.AsValue(nil), keep(&separators)),
		exec.KeywordArgument("sort_keys", exec.AsValue(false), exec.BoolArgument(&sortKeys)),
	); err != nil {
		return exec.AsValue(exec.ErrInvalidCall(err))
	}
	enc := pyJSON{ensureASCII: ensureASCII, sortKeys: sortKeys, itemSep: ", ", keySep: ": "}
	switch {
	case indent.IsNil():
	case indent.IsInteger():
		enc.indent, enc.indented = strings.Repeat(" ", max(indent.Integer(), 0)), true
	case indent.IsString():
		enc.indent, enc.indented = indent.String(), true
	default:
		return exec.AsValue(fmt.Errorf("tojson: indent must be an integer or a string"))
	}
	if enc.indented {
		enc.itemSep = ","
	}
	if !separators.IsNil() {
		if !separators.IsList() || separators.Len() != 2 {
			return exec.AsValue(fmt.Errorf("tojson: separators must be a pair of strings"))
		}
		enc.itemSep, enc.keySep = separators.Index(0).String(), separators.Index(1).String()
	}
	var b strings.Builder
	if err := enc.value(&b, in, 0); err != nil {
		return exec.AsValue(err)
	}
	return exec.AsSafeValue(b.String())
}

// pyJSON writes values the way Python's json.dumps does.
type pyJSON struct {
	ensureASCII, sortKeys bool
	indented              bool
	indent                string
	itemSep, keySep       string
}

func (e pyJSON) value(b *strings.Builder, v *exec.Value, depth int) error {
	switch {
	case v.IsNil():
		b.WriteString("null")
	case v.IsBool():
		b.WriteString(map[bool]string{true: "true", false: "false"}[v.Bool()])
	case v.IsInteger():
		b.WriteString(strconv.Itoa(v.Integer()))
	case v.IsFloat():
		b.WriteString(pyFloat(v.Float()))
	case v.IsString():
		e.str(b, v.String())
	case v.IsList():
		return e.list(b, v, depth)
	case v.IsDict():
		return e.dict(b, v, depth)
	default:
		return fmt.Errorf("tojson: cannot serialise %s", v.String())
	}
	return nil
}

func (e pyJSON) list(b *strings.Builder, v *exec.Value, depth int) error {
	n := v.Len()
	if n == 0 {
		b.WriteString("[]")
		return nil
	}
	b.WriteByte('[')
	for i := range n {
		e.sep(b, i, depth+1)
		if err := e.value(b, v.Index(i), depth+1); err != nil {
			return err
		}
	}
	e.closing(b, depth)
	b.WriteByte(']')
	return nil
}

func (e pyJSON) dict(b *strings.Builder, v *exec.Value, depth int) error {
	keys := v.Keys() // Go maps: sorted; template dicts: insertion order
	if e.sortKeys {
		sort.SliceStable(keys, func(i, j int) bool { return keys[i].String() < keys[j].String() })
	}
	if len(keys) == 0 {
		b.WriteString("{}")
		return nil
	}
	b.WriteByte('{')
	for i, k := range keys {
		e.sep(b, i, depth+1)
		e.str(b, k.String())
		b.WriteString(e.keySep)
		item, ok := v.GetItem(k.Interface())
		if !ok {
			return fmt.Errorf("tojson: missing value for key %s", k.String())
		}
		if err := e.value(b, item, depth+1); err != nil {
			return err
		}
	}
	e.closing(b, depth)
	b.WriteByte('}')
	return nil
}

// sep writes what precedes item i of a container: the item separator and, when indenting, a
// newline and the indentation of depth.
func (e pyJSON) sep(b *strings.Builder, i, depth int) {
	if i > 0 {
		b.WriteString(e.itemSep)
	}
	if e.indented {
		b.WriteByte('\n')
		b.WriteString(strings.Repeat(e.indent, depth))
	}
}

func (e pyJSON) closing(b *strings.Builder, depth int) {
	if e.indented {
		b.WriteByte('\n')
		b.WriteString(strings.Repeat(e.indent, depth))
	}
}

// str writes a JSON string with Python's escapes: \" \\ \n \r \t \b \f, \u00XX for other
// control characters, and \uXXXX (UTF-16) for non-ASCII when ensureASCII.
func (e pyJSON) str(b *strings.Builder, s string) {
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"':
			b.WriteString(`\"`)
		case r == '\\':
			b.WriteString(`\\`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\b':
			b.WriteString(`\b`)
		case r == '\f':
			b.WriteString(`\f`)
		case r < 0x20 || (e.ensureASCII && r > 0x7E):
			if r > 0xFFFF {
				hi, lo := utf16.EncodeRune(r)
				fmt.Fprintf(b, `\u%04x\u%04x`, hi, lo)
			} else {
				fmt.Fprintf(b, `\u%04x`, r)
			}
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
}

// pyFloat formats f like Python's float repr: the shortest round-trip digits, in positional
// notation with at least one decimal when the exponent is in [-4, 16), else as d.ddde±XX.
func pyFloat(f float64) string {
	switch {
	case math.IsNaN(f):
		return "NaN"
	case math.IsInf(f, 1):
		return "Infinity"
	case math.IsInf(f, -1):
		return "-Infinity"
	}
	sci := strconv.FormatFloat(f, 'e', -1, 64) // e.g. -1.2345e+06
	mant, expStr, _ := strings.Cut(sci, "e")
	exp, _ := strconv.Atoi(expStr)
	if exp < -4 || exp >= 16 {
		sign := "+"
		if exp < 0 {
			sign, exp = "-", -exp
		}
		return fmt.Sprintf("%se%s%02d", mant, sign, exp)
	}
	s := strconv.FormatFloat(f, 'f', -1, 64)
	if !strings.ContainsAny(s, ".") {
		s += ".0"
	}
	return s
}
