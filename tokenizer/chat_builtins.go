package tokenizer

import (
	"fmt"
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/nikolalohinski/gonja/v2/builtins"
	"github.com/nikolalohinski/gonja/v2/exec"
)

// Dicts. gonja hands dict methods a Go map copy (sorted keys, nested ordered dicts flattened to
// maps), and its items and dictsort filters see only Go maps, in random order. Python dicts keep
// insertion order: template dict literals and Objects (chat_object.go) do too, so these walk the
// dict itself, in its order (Go maps: sorted keys), and return its own values.

// pyDictMethodNames are the dict methods gonja defines; keys, values, items and get are redefined.
var pyDictMethodNames = []string{"keys", "values", "items", "get", "pop", "setdefault", "update", "copy", "clear"}

func dictMethods() *exec.MethodSet[map[string]any] {
	m := make(map[string]exec.Method[map[string]any], len(pyDictMethodNames))
	for _, name := range pyDictMethodNames {
		if f, ok := builtins.Methods.Dict.Get(name); ok {
			m[name] = f
		}
	}
	m["keys"] = dictWalk(func(k, _ *exec.Value) any { return k.Interface() })
	m["values"] = dictWalk(func(_, v *exec.Value) any { return v.Interface() })
	m["items"] = dictWalk(pair)
	m["get"] = func(_ map[string]any, self *exec.Value, args *exec.VarArgs) (any, error) {
		if len(args.Args) < 1 || len(args.Args) > 2 || len(args.KwArgs) > 0 {
			return nil, exec.ErrInvalidCall(fmt.Errorf("get() takes 1 or 2 positional arguments"))
		}
		if v, ok := self.GetItem(args.Args[0].Interface()); ok {
			return v.Interface(), nil
		}
		if len(args.Args) == 2 {
			return args.Args[1].Interface(), nil
		}
		return nil, nil
	}
	return exec.NewMethodSet(m)
}

// pair is an item of items(); a method's result must not hold *exec.Values (gonja takes a
// *exec.Value for an error), so it holds their contents.
func pair(k, v *exec.Value) any { return pyTuple{k.Interface(), v.Interface()} }

// dictWalk builds keys/values/items: one element per key, in the dict's order.
func dictWalk(elem func(k, v *exec.Value) any) exec.Method[map[string]any] {
	return func(_ map[string]any, self *exec.Value, args *exec.VarArgs) (any, error) {
		if err := args.Take(); err != nil {
			return nil, exec.ErrInvalidCall(err)
		}
		return dictItems(self, elem), nil
	}
}

func dictItems(d *exec.Value, elem func(k, v *exec.Value) any) []any {
	keys := d.Keys()
	out := make([]any, 0, len(keys))
	for _, k := range keys {
		v, _ := d.GetItem(k.Interface())
		out = append(out, elem(k, v))
	}
	return out
}

// filterItems is jinja2's items filter: the (key, value) pairs of a mapping in its order.
func filterItems(_ *exec.Evaluator, in *exec.Value, params *exec.VarArgs) *exec.Value {
	if in.IsError() {
		return in
	}
	if err := params.Take(); err != nil {
		return exec.AsValue(exec.ErrInvalidCall(err))
	}
	if in.IsNil() {
		return exec.AsValue([]any{})
	}
	if !in.IsDict() {
		return exec.AsValue(fmt.Errorf("items: %s is not a mapping", in.String()))
	}
	return exec.AsValue(dictItems(in, pair))
}

// filterDictSort is jinja2's dictsort(case_sensitive=false, by='key', reverse=false).
func filterDictSort(_ *exec.Evaluator, in *exec.Value, params *exec.VarArgs) *exec.Value {
	if in.IsError() {
		return in
	}
	var caseSensitive, reverse bool
	var by string
	if err := params.Take(
		exec.KeywordArgument("case_sensitive", exec.AsValue(false), exec.BoolArgument(&caseSensitive)),
		exec.KeywordArgument("by", exec.AsValue("key"), exec.StringEnumArgument(&by, []string{"key", "value"})),
		exec.KeywordArgument("reverse", exec.AsValue(false), exec.BoolArgument(&reverse)),
	); err != nil {
		return exec.AsValue(exec.ErrInvalidCall(err))
	}
	if !in.IsDict() {
		return exec.AsValue(fmt.Errorf("dictsort: %s is not a mapping", in.String()))
	}
	items := dictItems(in, pair)
	at := 0
	if by == "value" {
		at = 1
	}
	sort.SliceStable(items, func(i, j int) bool {
		a, b := exec.ToValue(items[i].(pyTuple)[at]), exec.ToValue(items[j].(pyTuple)[at])
		if reverse {
			a, b = b, a
		}
		return lessValues(a, b, caseSensitive)
	})
	return exec.AsValue(items)
}

func lessValues(a, b *exec.Value, caseSensitive bool) bool {
	switch {
	case a.IsNumber() && b.IsNumber():
		return a.Float() < b.Float()
	case !caseSensitive:
		return strings.ToLower(a.String()) < strings.ToLower(b.String())
	}
	return a.String() < b.String()
}

// pyTuple is a tuple, as items() gives: it loops and unpacks as a list and prints as Python does.
type pyTuple []any

func (t pyTuple) String() string {
	parts := make([]string, len(t))
	for i, e := range t {
		parts[i] = pyRepr(exec.ToValue(e))
	}
	if len(t) == 1 {
		return "(" + parts[0] + ",)"
	}
	return "(" + strings.Join(parts, ", ") + ")"
}

// pyRepr is repr() for what gonja prints differently: strings in quotes.
func pyRepr(v *exec.Value) string {
	if v.IsString() {
		return "'" + strings.ReplaceAll(v.String(), "'", `\'`) + "'"
	}
	return v.String()
}

// Tests: jinja2's "true" and "false" are identity tests (x is True), so 0 is not false and 1
// is not true; gonja's take any value's truth.
func testTrue(_ *exec.Context, in *exec.Value, _ *exec.VarArgs) (bool, error) {
	return in.IsBool() && in.Bool(), nil
}

func testFalse(_ *exec.Context, in *exec.Value, _ *exec.VarArgs) (bool, error) {
	return in.IsBool() && !in.Bool(), nil
}

// chatTests is gonja's test set with testTrue and testFalse.
func chatTests() *exec.TestSet {
	tests := exec.NewTestSet(map[string]exec.TestFunction{}).Update(builtins.Tests)
	for name, fn := range map[string]exec.TestFunction{"true": testTrue, "false": testFalse} {
		if err := tests.Replace(name, fn); err != nil {
			panic(err) // gonja always defines them
		}
	}
	return tests
}

// chatFilters is gonja's filter set with HF's tojson and the dict filters above.
func chatFilters() *exec.FilterSet {
	filters := exec.NewFilterSet(map[string]exec.FilterFunction{}).Update(builtins.Filters)
	for name, fn := range map[string]exec.FilterFunction{
		"tojson": filterToJSON, "items": filterItems, "dictsort": filterDictSort,
	} {
		if err := filters.Replace(name, fn); err != nil {
			panic(err) // gonja always defines them
		}
	}
	return filters
}

// rsplitMethod is Python's str.rsplit(sep=None, maxsplit=-1).
func rsplitMethod(self string, _ *exec.Value, args *exec.VarArgs) (any, error) {
	sep, maxSplit, err := splitArgs(args)
	if err != nil {
		return nil, err
	}
	var parts []string
	switch {
	case sep.IsNil():
		parts = rsplitWhitespace(self, maxSplit)
	case sep.String() == "":
		return nil, fmt.Errorf("rsplit: empty separator")
	default:
		parts = rsplitSep(self, sep.String(), maxSplit)
	}
	return toAnys(parts), nil
}

func rsplitSep(s, sep string, maxSplit int) []string {
	var rev []string
	for maxSplit < 0 || len(rev) < maxSplit {
		i := strings.LastIndex(s, sep)
		if i < 0 {
			break
		}
		rev = append(rev, s[i+len(sep):])
		s = s[:i]
	}
	return reversed(append(rev, s))
}

func rsplitWhitespace(s string, maxSplit int) []string {
	var rev []string
	for {
		s = strings.TrimRightFunc(s, unicode.IsSpace)
		if s == "" {
			return reversed(rev)
		}
		if maxSplit >= 0 && len(rev) == maxSplit {
			return reversed(append(rev, s))
		}
		i := strings.LastIndexFunc(s, unicode.IsSpace)
		if i < 0 {
			return reversed(append(rev, s))
		}
		_, size := utf8.DecodeRuneInString(s[i:])
		rev = append(rev, s[i+size:])
		s = s[:i]
	}
}

func reversed(ss []string) []string {
	for i, j := 0, len(ss)-1; i < j; i, j = i+1, j-1 {
		ss[i], ss[j] = ss[j], ss[i]
	}
	return ss
}

// splitArgs takes str.split's and str.rsplit's arguments (sep=None,
// maxsplit=-1).
func splitArgs(args *exec.VarArgs) (sep *exec.Value, maxSplit int, err error) {
	maxSplit = -1
	if err := args.Take(
		exec.PositionalArgument("sep", exec.AsValue(nil), func(v *exec.Value) error { sep = v; return nil }),
		exec.PositionalArgument("maxsplit", exec.AsValue(-1), exec.IntArgument(&maxSplit)),
	); err != nil {
		return nil, 0, exec.ErrInvalidCall(err)
	}
	return sep, maxSplit, nil
}
