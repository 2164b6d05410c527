package tokenizer

import (
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/nikolalohinski/gonja/v2/builtins"
	"github.com/nikolalohinski/gonja/v2/exec"
)

// pyStrMethodNames are Python's str methods; gonja's implementations are used for all of them
// except those redefined in strOverrides.
var pyStrMethodNames = []string{
	"capitalize", "casefold", "center", "count", "encode", "endswith", "expandtabs", "find", "format",
	"format_map", "index", "isalnum", "isalpha", "isascii", "isdecimal", "isdigit", "isidentifier",
	"islower", "isnumeric", "isprintable", "isspace", "istitle", "isupper", "join", "ljust", "lower",
	"lstrip", "maketrans", "partition", "removeprefix", "removesuffix", "replace", "rfind", "rindex",
	"rjust", "rpartition", "rsplit", "rstrip", "split", "splitlines", "startswith", "strip",
	"swapcase", "title", "translate", "upper", "zfill",
}

// strOverrides fix gonja's str methods where they differ from Python on arguments that chat
// templates use: optional replace count, strip family and split/rsplit without arguments
// (whitespace) or with maxsplit, and startswith/endswith with a tuple of prefixes.
var strOverrides = map[string]exec.Method[string]{
	"replace": func(self string, _ *exec.Value, args *exec.VarArgs) (any, error) {
		var old, repl string
		count := -1
		if err := args.Take(
			exec.PositionalArgument("old", nil, exec.StringArgument(&old)),
			exec.PositionalArgument("new", nil, exec.StringArgument(&repl)),
			exec.PositionalArgument("count", exec.AsValue(-1), exec.IntArgument(&count)),
		); err != nil {
			return nil, exec.ErrInvalidCall(err)
		}
		return strings.Replace(self, old, repl, count), nil
	},
	"strip":  stripMethod(strings.Trim, strings.TrimFunc),
	"lstrip": stripMethod(strings.TrimLeft, strings.TrimLeftFunc),
	"rstrip": stripMethod(strings.TrimRight, strings.TrimRightFunc),
	"split": func(self string, _ *exec.Value, args *exec.VarArgs) (any, error) {
		sep, maxSplit, err := splitArgs(args)
		if err != nil {
			return nil, err
		}
		if sep.IsNil() {
			return toAnys(splitWhitespace(self, maxSplit)), nil
		}
		if sep.String() == "" {
			return nil, fmt.Errorf("split: empty separator")
		}
		n := -1
		if maxSplit >= 0 {
			n = maxSplit + 1
		}
		return toAnys(strings.SplitN(self, sep.String(), n)), nil
	},
	"startswith": affixMethod(strings.HasPrefix),
	"endswith":   affixMethod(strings.HasSuffix),
	"rsplit":     rsplitMethod,
}

// strMethods is gonja's str method set with strOverrides applied, each result within limit bytes.
func strMethods(limit int64) *exec.MethodSet[string] {
	m := make(map[string]exec.Method[string], len(pyStrMethodNames))
	for _, name := range pyStrMethodNames {
		if f, ok := builtins.Methods.Str.Get(name); ok {
			m[name] = f
		}
	}
	for name, f := range strOverrides {
		m[name] = f
	}
	for name, f := range m {
		m[name] = budgetMethod(name, f, limit)
	}
	return exec.NewMethodSet(m)
}

// stripMethod builds str.strip/lstrip/rstrip: no argument or None strips whitespace, a string
// strips any of its characters.
func stripMethod(cut func(string, string) string, cutFunc func(string, func(rune) bool) string) exec.Method[string] {
	return func(self string, _ *exec.Value, args *exec.VarArgs) (any, error) {
		var chars *exec.Value
		if err := args.Take(
			exec.PositionalArgument("chars", exec.AsValue(nil), func(v *exec.Value) error { chars = v; return nil }),
		); err != nil {
			return nil, exec.ErrInvalidCall(err)
		}
		if chars.IsNil() {
			return cutFunc(self, unicode.IsSpace), nil
		}
		return cut(self, chars.String()), nil
	}
}

// affixMethod builds str.startswith/endswith, accepting one string or a list of strings.
func affixMethod(has func(string, string) bool) exec.Method[string] {
	return func(self string, _ *exec.Value, args *exec.VarArgs) (any, error) {
		if len(args.Args) != 1 || len(args.KwArgs) != 0 {
			return nil, exec.ErrInvalidCall(fmt.Errorf("expected one argument"))
		}
		a := args.Args[0]
		if a.IsList() {
			for i := range a.Len() {
				if has(self, a.Index(i).String()) {
					return true, nil
				}
			}
			return false, nil
		}
		return has(self, a.String()), nil
	}
}

// splitWhitespace is Python's str.split() without a separator.
func splitWhitespace(s string, maxSplit int) []string {
	var out []string
	for {
		s = strings.TrimLeftFunc(s, unicode.IsSpace)
		if s == "" {
			return out
		}
		if maxSplit >= 0 && len(out) == maxSplit {
			return append(out, s)
		}
		end := strings.IndexFunc(s, unicode.IsSpace)
		if end < 0 {
			return append(out, s)
		}
		out = append(out, s[:end])
		s = s[end:]
	}
}

func toAnys(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}

// strftime formats t like C/Python strftime for the directives chat templates use, with
// glibc's "-" flag to drop padding (e.g. "%-d"). Unknown directives are copied through.
func strftime(t time.Time, format string) string {
	var b strings.Builder
	for i := 0; i < len(format); i++ {
		if format[i] != '%' || i+1 == len(format) {
			b.WriteByte(format[i])
			continue
		}
		i++
		noPad := format[i] == '-' && i+1 < len(format)
		if noPad {
			i++
		}
		b.WriteString(strftimeDirective(t, format[i], noPad))
	}
	return b.String()
}

func strftimeDirective(t time.Time, c byte, noPad bool) string {
	num := func(v, width int) string {
		if noPad {
			return strconv.Itoa(v)
		}
		return fmt.Sprintf("%0*d", width, v)
	}
	hour12 := t.Hour() % 12
	if hour12 == 0 {
		hour12 = 12
	}
	switch c {
	case 'a':
		return t.Format("Mon")
	case 'A':
		return t.Format("Monday")
	case 'b', 'h':
		return t.Format("Jan")
	case 'B':
		return t.Format("January")
	case 'd':
		return num(t.Day(), 2)
	case 'e':
		return fmt.Sprintf("%2d", t.Day())
	case 'm':
		return num(int(t.Month()), 2)
	case 'y':
		return num(t.Year()%100, 2)
	case 'Y':
		return strconv.Itoa(t.Year())
	case 'H':
		return num(t.Hour(), 2)
	case 'I':
		return num(hour12, 2)
	case 'M':
		return num(t.Minute(), 2)
	case 'S':
		return num(t.Second(), 2)
	case 'p':
		return t.Format("PM")
	case 'j':
		return num(t.YearDay(), 3)
	case 'w':
		return strconv.Itoa(int(t.Weekday()))
	case 'Z':
		return t.Format("MST")
	case 'z':
		return t.Format("-0700")
	case 'F':
		return t.Format("2006-01-02")
	case 'T':
		return t.Format("15:04:05")
	case '%':
		return "%"
	}
	return "%" + string(c)
}
