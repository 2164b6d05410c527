package tokenizer

import (
	"errors"
	"fmt"
	"io"
	"math"
	"reflect"
	"strings"
	"unicode/utf8"
	"unsafe"

	"github.com/nikolalohinski/gonja/v2/builtins"
	"github.com/nikolalohinski/gonja/v2/config"
	"github.com/nikolalohinski/gonja/v2/exec"
	"github.com/nikolalohinski/gonja/v2/nodes"
	"github.com/nikolalohinski/gonja/v2/parser"
	"github.com/nikolalohinski/gonja/v2/tokens"
)

// A chat template comes from a model file or a command line, so it is rendered on a budget: a
// template that loops 10^12 times, doubles a string until memory runs out or recurses without
// end is stopped with a TemplateLimitError instead of holding a CPU or the process.
//
// gonja has no hooks for this, so the compiled template's syntax tree is rewritten once, after
// parsing (instrument), with nodes that charge a per-render budget:
//
//   - every block body (the template, each loop iteration, each branch, each macro call, each
//     {% set %}/{% filter %}/{% call %} body) runs inside a guard node that charges one unit,
//     bounds the nesting depth (macro recursion included) and counts every byte written, macro
//     and block outputs included;
//   - the iterable of a {% for %} is charged one unit per item before the loop starts;
//   - the operators other than and/or become calls that check the size of the result before
//     building it ('a' * 10**9, s ~ s, list + list) and charge for the bytes they touch;
//   - calls (functions, macros, methods) are charged for the size of their result, method calls
//     also for the size of their receiver (gonja copies it), slices for the size of the sliced;
//   - filters are charged for their input and output and check widths and counts before running
//     (center, indent, wordwrap, replace, join, format, batch, slice); range is bounded.
//
// Includes, imports and extends are refused: a chat template is one string.

// ChatLimits bound one render of a chat template. A zero field means its DefaultChatLimits value.
type ChatLimits struct {
	// Work is the budget in work units: one per block body run (loop iteration, branch, macro
	// call), per loop item, per operator, call and filter, plus one per 4 KiB of values built,
	// copied or written.
	Work int64
	// OutputBytes bounds the bytes the template writes, macro and block outputs included.
	OutputBytes int64
	// ValueBytes bounds any single value built: a string's bytes, or 64 bytes per list or dict item.
	ValueBytes int64
	// Depth bounds the nesting of block bodies at render time, macro and loop recursion included.
	Depth int
}

// DefaultChatLimits are the limits of CompileTemplate. Real templates use a few thousand work
// units per request and a nesting of about ten.
var DefaultChatLimits = ChatLimits{Work: 500_000, OutputBytes: 64 << 20, ValueBytes: 32 << 20, Depth: 256}

// Compile-time bounds of a template's source.
const (
	// MaxTemplateBytes bounds a chat template's source (the largest real ones are tens of KB).
	MaxTemplateBytes = 1 << 20
	// MaxTemplateNesting bounds brackets and blocks nested in the source (the parser recurses).
	MaxTemplateNesting = 100
	// workUnitBytes is the number of bytes that cost one work unit.
	workUnitBytes = 4096
	// itemBytes is what a list or dict item counts for in ValueBytes.
	itemBytes = 64
)

func (l ChatLimits) withDefaults() ChatLimits {
	d := DefaultChatLimits
	if l.Work <= 0 {
		l.Work = d.Work
	}
	if l.OutputBytes <= 0 {
		l.OutputBytes = d.OutputBytes
	}
	if l.ValueBytes <= 0 {
		l.ValueBytes = d.ValueBytes
	}
	if l.Depth <= 0 {
		l.Depth = d.Depth
	}
	return l
}

// ErrTemplateLimit is wrapped by every TemplateLimitError.
var ErrTemplateLimit = errors.New("chat template limit exceeded")

// TemplateLimitError is a render or compile stopped by a limit of ChatLimits or of the source.
type TemplateLimitError struct {
	Limit string // "work units", "output bytes", "value bytes", "nesting depth", "source bytes", "source nesting"
	Max   int64  // the limit's value
	Line  int    // the template line where it was exceeded; 0 when unknown
	What  string // what exceeded it
}

func (e *TemplateLimitError) Error() string {
	at := ""
	if e.Line > 0 {
		at = fmt.Sprintf(" at line %d", e.Line)
	}
	return fmt.Sprintf("%s%s: %s exceeds the limit of %d %s", ErrTemplateLimit, at, e.What, e.Max, e.Limit)
}

func (e *TemplateLimitError) Unwrap() error { return ErrTemplateLimit }

// Names of the functions instrument inserts; a template cannot do more with them than it could
// with the operators they stand for.
const (
	budgetVar = "__pagoda_budget"
	fnOp      = "__pagoda_op"
	fnIter    = "__pagoda_iter"
	fnResult  = "__pagoda_result"
	fnCost    = "__pagoda_cost"
)

// renderBudget is one render's account; a render runs on one goroutine.
type renderBudget struct {
	lim       ChatLimits
	work, out int64
	depth     int
	err       *TemplateLimitError // the first limit exceeded: every later charge fails too
	ops       []*nodes.BinOperator
	line      int // the line of the innermost block running
}

func (b *renderBudget) fail(limit string, max int64, line int, what string) error {
	if b.err == nil {
		b.err = &TemplateLimitError{Limit: limit, Max: max, Line: line, What: what}
	}
	return b.err
}

// charge spends units of work.
func (b *renderBudget) charge(units int64, line int) error {
	if b.err != nil {
		return b.err
	}
	if units < 0 || units > b.lim.Work-b.work {
		b.work = b.lim.Work + 1
		return b.fail("work units", b.lim.Work, line, "the work of the render (loop iterations, calls, operations)")
	}
	b.work += units
	return nil
}

// chargeBytes spends the work of touching n bytes, plus one unit.
func (b *renderBudget) chargeBytes(n int64, line int) error {
	return b.charge(1+n/workUnitBytes, line)
}

// value checks a value of size bytes before it is built, and charges for building it.
func (b *renderBudget) value(size int64, line int, what string) error {
	if b.err != nil {
		return b.err
	}
	if size > b.lim.ValueBytes || size < 0 {
		return b.fail("value bytes", b.lim.ValueBytes, line, what)
	}
	return b.chargeBytes(size, line)
}

var errNoBudget = errors.New("the render budget is unavailable (a template may not assign " + budgetVar + ")")

func budgetOf(ctx *exec.Context) (*renderBudget, error) {
	v, _ := ctx.Get(budgetVar)
	if b, ok := v.(*renderBudget); ok {
		return b, nil
	}
	return nil, errNoBudget
}

// valueSize is the size of v as ValueBytes counts it.
func valueSize(v *exec.Value) int64 {
	switch {
	case v == nil || v.IsNil():
		return 0
	case v.IsString():
		return int64(len(v.String()))
	case v.IsList() || v.IsDict():
		return itemBytes * int64(v.Len())
	}
	return 8
}

// budgetWriter counts the bytes a render writes.
type budgetWriter struct {
	w io.Writer
	b *renderBudget
}

func (w *budgetWriter) Write(p []byte) (int, error) {
	b := w.b
	if b.err != nil {
		return 0, b.err
	}
	b.out += int64(len(p))
	if b.out > b.lim.OutputBytes {
		return 0, b.fail("output bytes", b.lim.OutputBytes, b.line, "the rendered output")
	}
	if err := b.charge(int64(len(p))/workUnitBytes, b.line); err != nil {
		return 0, err
	}
	return w.w.Write(p)
}

// guardNode runs a block body on the budget.
type guardNode struct {
	loc   *tokens.Token
	inner *nodes.Wrapper
}

func (g *guardNode) Position() *tokens.Token { return g.loc }
func (g *guardNode) String() string          { return "guard" }

func (g *guardNode) Execute(r *exec.Renderer, _ *nodes.ControlStructureBlock) (err error) {
	b, err := budgetOf(r.Environment.Context)
	if err != nil {
		return err
	}
	line := lineOf(g.loc)
	if err := b.charge(1, line); err != nil {
		return err
	}
	if b.depth >= b.lim.Depth {
		return b.fail("nesting depth", int64(b.lim.Depth), line, "the nesting of blocks and macro calls")
	}
	b.depth++
	saved := b.line
	b.line = line
	defer func() {
		b.depth--
		if err == nil { // on an error the line stays the innermost block's, for methodLimit
			b.line = saved
		}
	}()
	if _, ok := r.Output.(*budgetWriter); !ok {
		r.Output = &budgetWriter{w: r.Output, b: b} // a macro's or a block's own buffer
	}
	return nodes.Walk(r, g.inner)
}

func lineOf(t *tokens.Token) int {
	if t == nil {
		return 0
	}
	return t.Line
}

// hidden builds a call of one of the instrumentation functions.
func hidden(name string, loc *tokens.Token, args ...nodes.Expression) *nodes.Call {
	if loc == nil {
		loc = &tokens.Token{}
	}
	return &nodes.Call{Location: loc, Func: &nodes.Name{Name: &tokens.Token{Type: tokens.Name, Val: name, Line: loc.Line, Col: loc.Col}},
		Args: args, Kwargs: map[string]nodes.Expression{}}
}

// isHidden reports whether n is a call of an instrumentation function, of fn when fn is given.
func isHidden(n nodes.Node, fn ...string) bool {
	c, ok := n.(*nodes.Call)
	if !ok {
		return false
	}
	name, ok := c.Func.(*nodes.Name)
	if !ok || name.Name == nil || !strings.HasPrefix(name.Name.Val, "__pagoda_") {
		return false
	}
	return len(fn) == 0 || name.Name.Val == fn[0]
}

// instrumenter rewrites a parsed template (see the top of this file).
type instrumenter struct {
	seen map[uintptr]bool
	ops  []*nodes.BinOperator
}

var nodePkg = reflect.TypeFor[nodes.Node]().PkgPath()

// instrument rewrites root in place and returns the operators its calls refer to.
func instrument(root *nodes.Template) []*nodes.BinOperator {
	in := &instrumenter{seen: map[uintptr]bool{}}
	in.walk(reflect.ValueOf(root))
	loc := &tokens.Token{Line: 1}
	if len(root.Nodes) > 0 && root.Nodes[0].Position() != nil {
		loc = root.Nodes[0].Position()
	}
	inner := &nodes.Wrapper{Location: loc, Nodes: root.Nodes}
	root.Nodes = []nodes.Node{&nodes.ControlStructureBlock{Location: loc, Name: "guard", ControlStructure: &guardNode{loc: loc, inner: inner}}}
	return in.ops
}

// ours reports whether t is a type whose fields instrument looks into: gonja's nodes and
// control structures.
func ours(t reflect.Type) bool {
	p := t.PkgPath()
	return p == nodePkg || strings.HasPrefix(p, "github.com/nikolalohinski/gonja/v2/builtins")
}

// walk visits the node v (a pointer) and its children once.
func (in *instrumenter) walk(v reflect.Value) {
	if v.Kind() != reflect.Pointer || v.IsNil() || v.Elem().Kind() != reflect.Struct || !ours(v.Elem().Type()) {
		return
	}
	if in.seen[v.Pointer()] {
		return
	}
	in.seen[v.Pointer()] = true
	s := v.Elem()
	for i := 0; i < s.NumField(); i++ {
		f := s.Field(i)
		if !f.CanSet() {
			f = reflect.NewAt(f.Type(), unsafe.Pointer(f.UnsafeAddr())).Elem()
		}
		in.field(f)
	}
	switch n := v.Interface().(type) {
	case *nodes.Wrapper:
		inner := &nodes.Wrapper{Location: n.Location, Nodes: n.Nodes}
		n.Nodes = []nodes.Node{&nodes.ControlStructureBlock{Location: n.Location, Name: "guard",
			ControlStructure: &guardNode{loc: n.Location, inner: inner}}}
	case *nodes.GetSlice:
		if !isHidden(n.Node, fnCost) {
			n.Node = hidden(fnCost, n.Location, n.Node)
		}
	case *nodes.Call:
		if g, ok := n.Func.(*nodes.GetAttribute); ok && !isHidden(g.Node, fnCost) && !isHidden(n) {
			g.Node = hidden(fnCost, g.Location, g.Node) // the receiver of a method, copied by gonja
		}
	}
	if reflect.TypeOf(v.Interface()).Elem().Name() == "ForControlStructure" {
		f := s.FieldByName("ObjectEvaluator")
		if e, ok := f.Interface().(nodes.Expression); ok && e != nil && !isHidden(e, fnIter) {
			f.Set(reflect.ValueOf(hidden(fnIter, e.Position(), e)))
		}
	}
}

// field visits one field, replacing an expression it holds where instrument replaces it.
func (in *instrumenter) field(f reflect.Value) {
	switch f.Kind() {
	case reflect.Pointer:
		in.walk(f)
	case reflect.Interface:
		if f.IsNil() {
			return
		}
		in.walk(f.Elem())
		if r := in.replace(f.Elem()); r != nil && r.Type().AssignableTo(f.Type()) {
			f.Set(*r)
		}
	case reflect.Slice:
		for i := 0; i < f.Len(); i++ {
			in.field(f.Index(i))
		}
	case reflect.Map:
		for _, k := range f.MapKeys() {
			e := f.MapIndex(k)
			switch e.Kind() {
			case reflect.Pointer:
				in.walk(e)
			case reflect.Interface:
				if e.IsNil() {
					continue
				}
				in.walk(e.Elem())
				if r := in.replace(e.Elem()); r != nil && r.Type().AssignableTo(f.Type().Elem()) {
					f.SetMapIndex(k, *r)
				}
			}
		}
	}
}

// replace returns the node that stands for the expression v, or nil to keep it.
func (in *instrumenter) replace(v reflect.Value) *reflect.Value {
	switch n := v.Interface().(type) {
	case *nodes.BinaryExpression:
		if n.Operator == nil || n.Operator.Token == nil {
			return nil
		}
		switch n.Operator.Token.Type {
		case tokens.And, tokens.Or: // lazy: left as they are
			return nil
		}
		in.ops = append(in.ops, n.Operator)
		idx := &nodes.Integer{Location: n.Operator.Token, Val: len(in.ops) - 1}
		r := reflect.ValueOf(hidden(fnOp, n.Operator.Token, n.Left, n.Right, idx))
		return &r
	case *nodes.Call:
		if isHidden(n) {
			return nil
		}
		r := reflect.ValueOf(hidden(fnResult, n.Location, n))
		return &r
	}
	return nil
}

// budgetFunctions are the instrumentation functions and the bounded range and lipsum, set in
// each template's environment.
func budgetFunctions() map[string]any {
	return map[string]any{
		fnOp:     budgetOp,
		fnIter:   budgetIter,
		fnResult: budgetResult,
		fnCost:   budgetCost,
		"range":  budgetRange,
		"lipsum": func(_ *exec.Evaluator, _ *exec.VarArgs) (*exec.Value, error) {
			return nil, errors.New("lipsum is not available in chat templates")
		},
	}
}

func budgetResult(e *exec.Evaluator, va *exec.VarArgs) (*exec.Value, error) {
	b, err := budgetOf(e.Environment.Context)
	if err != nil {
		return nil, err
	}
	v := va.First()
	if err := b.value(valueSize(v), b.line, "the result of a call"); err != nil {
		return nil, err
	}
	return v, nil
}

func budgetCost(e *exec.Evaluator, va *exec.VarArgs) (*exec.Value, error) {
	b, err := budgetOf(e.Environment.Context)
	if err != nil {
		return nil, err
	}
	v := va.First()
	if err := b.chargeBytes(valueSize(v), b.line); err != nil {
		return nil, err
	}
	return v, nil
}

func budgetIter(e *exec.Evaluator, va *exec.VarArgs) (*exec.Value, error) {
	b, err := budgetOf(e.Environment.Context)
	if err != nil {
		return nil, err
	}
	v := va.First()
	n := int64(0)
	switch {
	case v.IsString():
		n = int64(utf8.RuneCountInString(v.String()))
	case v.IsList() || v.IsDict():
		n = int64(v.Len())
	}
	if err := b.charge(n, b.line); err != nil {
		return nil, err
	}
	return v, nil
}

// budgetRange is Python's range, refused when its length exceeds the work left; 10**12 (a
// float in gonja) is accepted as the integer it is in Python.
func budgetRange(e *exec.Evaluator, va *exec.VarArgs) (*exec.Value, error) {
	b, err := budgetOf(e.Environment.Context)
	if err != nil {
		return nil, err
	}
	var a [3]float64
	for i, v := range va.Args {
		f := math.NaN()
		switch {
		case v.IsInteger():
			f = float64(v.Integer())
		case v.IsFloat() && v.Float() == math.Trunc(v.Float()):
			f = v.Float()
		}
		if i >= 3 || math.IsNaN(f) || math.IsInf(f, 0) {
			return nil, errors.New("range: expected [start, ]stop[, step] where all arguments are integers")
		}
		a[i] = f
	}
	start, stop, step := 0.0, 0.0, 1.0
	switch len(va.Args) {
	case 1:
		stop = a[0]
	case 2:
		start, stop = a[0], a[1]
	case 3:
		start, stop, step = a[0], a[1], a[2]
	default:
		return nil, errors.New("range: expected [start, ]stop[, step] where all arguments are integers")
	}
	if step == 0 {
		return nil, errors.New("range: step cannot be 0")
	}
	n := math.Max(0, math.Ceil((stop-start)/step))
	left := b.lim.Work - b.work
	if n > float64(left) || n*itemBytes > float64(b.lim.ValueBytes) {
		return nil, b.fail("work units", b.lim.Work, b.line, fmt.Sprintf("range of %.0f items", n))
	}
	if err := b.charge(int64(n), b.line); err != nil {
		return nil, err
	}
	out := make([]int, int(n))
	for i := range out {
		out[i] = int(start + float64(i)*step)
	}
	return exec.AsValue(out), nil
}

// budgetOp evaluates a binary operator (gonja's own evaluation, on values already computed)
// after checking the size of a string or list it builds.
func budgetOp(e *exec.Evaluator, va *exec.VarArgs) (*exec.Value, error) {
	b, err := budgetOf(e.Environment.Context)
	if err != nil {
		return nil, err
	}
	if len(va.Args) != 3 || !va.Args[2].IsInteger() || va.Args[2].Integer() < 0 || va.Args[2].Integer() >= len(b.ops) {
		return nil, errors.New(fnOp + ": bad call")
	}
	l, r, op := va.Args[0], va.Args[1], b.ops[va.Args[2].Integer()]
	line := lineOf(op.Token)
	ls, rs := valueSize(l), valueSize(r)
	switch op.Token.Type {
	case tokens.Multiply:
		if l.IsString() && !r.IsFloat() {
			n := int64(r.Integer())
			if n <= 0 {
				return exec.AsValue(""), b.chargeBytes(0, line)
			}
			if ls > 0 && n > b.lim.ValueBytes/ls+1 {
				return nil, b.fail("value bytes", b.lim.ValueBytes, line, fmt.Sprintf("a string repeated %d times", n))
			}
			if err := b.value(ls*n, line, fmt.Sprintf("a string repeated %d times", n)); err != nil {
				return nil, err
			}
		}
	case tokens.Addition:
		if l.IsList() && r.IsList() {
			if err := b.value(ls+rs, line, "a list concatenation"); err != nil {
				return nil, err
			}
		} else if !l.IsFloat() && !r.IsFloat() && (l.IsString() || r.IsString()) {
			if err := b.value(int64(len(l.String()))+int64(len(r.String())), line, "a string concatenation"); err != nil {
				return nil, err
			}
		}
	case tokens.Tilde:
		if err := b.value(int64(len(l.String()))+int64(len(r.String())), line, "a string concatenation"); err != nil {
			return nil, err
		}
	}
	if err := b.chargeBytes(ls+rs, line); err != nil {
		return nil, err
	}
	sub := &exec.Evaluator{Config: e.Config, Loader: e.Loader, Environment: &exec.Environment{
		Context: exec.NewContext(map[string]any{"l": l, "r": r}), Filters: e.Environment.Filters,
		Tests: e.Environment.Tests, ControlStructures: e.Environment.ControlStructures, Methods: e.Environment.Methods}}
	name := func(s string) *nodes.Name { return &nodes.Name{Name: &tokens.Token{Type: tokens.Name, Val: s}} }
	v := sub.Eval(&nodes.BinaryExpression{Left: name("l"), Right: name("r"), Operator: op})
	if v.IsError() {
		return nil, v
	}
	return v, nil
}

// budgetFilters wraps every filter: charged for its input and output, with the widths and
// counts of the filters that can build more than their input checked first.
func budgetFilters(fs *exec.FilterSet) *exec.FilterSet {
	out := exec.NewFilterSet(map[string]exec.FilterFunction{})
	// FilterSet has no listing: its names are read from its map.
	for _, k := range reflect.ValueOf(fs).Elem().FieldByName("filters").MapKeys() {
		name := k.String()
		f, ok := fs.Get(name)
		if !ok {
			continue
		}
		out.Register(name, func(e *exec.Evaluator, in *exec.Value, params *exec.VarArgs) *exec.Value {
			b, err := budgetOf(e.Environment.Context)
			if err != nil {
				return exec.AsValue(err)
			}
			line := b.line
			if in != nil && !in.IsError() {
				if size, ok := filterOutputBound(name, in, params, b.lim.ValueBytes); ok {
					if err := b.value(size, line, "the output of the filter "+name); err != nil {
						return exec.AsValue(err)
					}
				} else {
					return exec.AsValue(b.fail("value bytes", b.lim.ValueBytes, line, "the output of the filter "+name))
				}
			}
			if err := b.chargeBytes(valueSize(in), line); err != nil {
				return exec.AsValue(err)
			}
			v := f(e, in, params)
			if v != nil && !v.IsError() {
				if err := b.value(valueSize(v), line, "the output of the filter "+name); err != nil {
					return exec.AsValue(err)
				}
			}
			return v
		})
	}
	return out
}

// filterOutputBound is an upper bound of the size of a filter's output, computed before running
// it for the filters that can build more than their input (0 for the others: checked after);
// false when an argument is beyond any sensible value.
func filterOutputBound(name string, in *exec.Value, params *exec.VarArgs, limit int64) (int64, bool) {
	arg := func(i int, kw string) *exec.Value {
		if v, ok := params.KwArgs[kw]; ok {
			return v
		}
		if i < len(params.Args) {
			return params.Args[i]
		}
		return nil
	}
	num := func(v *exec.Value) int64 {
		if v == nil {
			return 0
		}
		if v.IsInteger() {
			return int64(v.Integer())
		}
		if v.IsFloat() {
			return int64(math.Min(v.Float(), math.MaxInt64/2))
		}
		return 0
	}
	size := valueSize(in)
	s := ""
	if in.IsString() {
		s = in.String()
	}
	switch name {
	case "center":
		w := num(arg(0, "width"))
		return max(w, size), w <= limit
	case "indent":
		w := arg(0, "width")
		wl := int64(4)
		if w != nil && w.IsString() {
			wl = int64(len(w.String()))
		} else if w != nil {
			wl = num(w)
		}
		if wl > limit {
			return 0, false
		}
		return size + wl*int64(strings.Count(s, "\n")+1), true
	case "wordwrap":
		w := num(arg(0, "width"))
		if w == 0 {
			w = 79
		}
		sep := int64(1)
		if v := arg(2, "wrapstring"); v != nil && v.IsString() {
			sep = int64(len(v.String()))
		}
		if w <= 0 || sep > limit {
			return size, w > 0
		}
		return size + sep*(size/w+1+int64(strings.Count(s, " "))), true
	case "replace":
		old, repl := arg(0, "old"), arg(1, "new")
		if old == nil || repl == nil {
			return size, true
		}
		n := int64(strings.Count(s, old.String()))
		if c := arg(2, "count"); c != nil && c.IsInteger() && c.Integer() >= 0 {
			n = min(n, int64(c.Integer()))
		}
		return size + n*int64(len(repl.String())), true
	case "join":
		sep := int64(0)
		if v := arg(0, "d"); v != nil {
			sep = int64(len(v.String()))
		}
		total := int64(0)
		if in.IsList() {
			n := in.Len()
			for i := 0; i < n; i++ {
				total += int64(len(in.Index(i).String()))
				if total > limit {
					return total, true
				}
			}
			total += sep * int64(max(n-1, 0))
		}
		return total, true
	case "format":
		return size, formatWidthsOK(s, limit)
	case "batch", "slice", "truncate", "round":
		return 0, num(arg(0, "")) <= limit/itemBytes
	}
	return 0, true
}

// formatWidthsOK reports whether every number in a format string (widths and precisions) is
// within limit.
func formatWidthsOK(s string, limit int64) bool {
	var n int64
	for i := 0; i <= len(s); i++ {
		if i < len(s) && s[i] >= '0' && s[i] <= '9' {
			n = n*10 + int64(s[i]-'0')
			if n > limit {
				return false
			}
			continue
		}
		n = 0
	}
	return true
}

// budgetMethod wraps a str method with a size check before it runs (padding, repetition,
// joining, replacing) and after; methods see no render context, so the work is charged by the
// call around them (fnResult) and by fnCost on their receiver.
func budgetMethod(name string, m exec.Method[string], limit int64) exec.Method[string] {
	return func(self string, sv *exec.Value, args *exec.VarArgs) (any, error) {
		size := int64(len(self))
		argInt := func(i int) int64 {
			if i < len(args.Args) && args.Args[i].IsInteger() {
				return int64(args.Args[i].Integer())
			}
			return 0
		}
		argStr := func(i int) string {
			if i < len(args.Args) {
				return args.Args[i].String()
			}
			return ""
		}
		var bound int64
		switch name {
		case "center", "ljust", "rjust", "zfill":
			bound = max(size, argInt(0))
		case "expandtabs":
			bound = size + max(argInt(0), 8)*int64(strings.Count(self, "\t"))
		case "replace":
			old := argStr(0)
			n := int64(strings.Count(self, old))
			if c := argInt(2); len(args.Args) > 2 && c >= 0 {
				n = min(n, c)
			}
			bound = size + n*int64(len(argStr(1)))
		case "join":
			if len(args.Args) > 0 && args.Args[0].IsList() {
				l := args.Args[0]
				for i := 0; i < l.Len() && bound <= limit; i++ {
					bound += int64(len(l.Index(i).String())) + size
				}
			}
		case "format", "format_map":
			if !formatWidthsOK(self, limit) {
				bound = limit + 1
			}
		}
		if bound > limit {
			return nil, methodLimitError(name)
		}
		out, err := m(self, sv, args)
		if err == nil {
			if s, ok := out.(string); ok && int64(len(s)) > limit {
				return nil, methodLimitError(name)
			}
		}
		return out, err
	}
}

// A method sees no render context, and gonja passes its error on as text; Render finds this
// marker in the text and reports the limit (methodLimit).
const methodLimitMarker = "[pagoda: method limit] "

func methodLimitError(name string) error {
	return errors.New(methodLimitMarker + "str." + name)
}

// methodLimit returns the limit error a method reported in err, if any.
func (b *renderBudget) methodLimit(err error) *TemplateLimitError {
	msg := err.Error()
	i := strings.Index(msg, methodLimitMarker)
	if i < 0 {
		return nil
	}
	what, _, _ := strings.Cut(msg[i+len(methodLimitMarker):], " ")
	b.fail("value bytes", b.lim.ValueBytes, b.line, "the result of "+strings.TrimRight(what, ":,"))
	return b.err
}

// chatControlStructures are gonja's control structures without include, import, from and
// extends: a chat template is one string and does not load others.
func chatControlStructures() *exec.ControlStructureSet {
	m := map[string]parser.ControlStructureParser{}
	for _, name := range []string{"autoescape", "block", "filter", "for", "if", "macro", "raw", "set", "with",
		"do", "break", "continue", "trans", "call"} {
		if p, ok := builtins.ControlStructures.Get(name); ok {
			m[name] = p
		}
	}
	return exec.NewControlStructureSet(m)
}

// checkSource refuses a source too large or too deeply nested for the parser, which recurses.
func checkSource(src string, cfg *config.Config) error {
	if len(src) > MaxTemplateBytes {
		return &TemplateLimitError{Limit: "source bytes", Max: MaxTemplateBytes, What: fmt.Sprintf("a source of %d bytes", len(src))}
	}
	var ts []*tokens.Token
	for st := tokens.LexAll(src, cfg); !st.End(); st.Next() {
		ts = append(ts, st.Current())
	}
	depth := 0
	opening := map[string]bool{"for": true, "if": true, "macro": true, "with": true, "filter": true,
		"call": true, "block": true, "raw": true, "autoescape": true, "trans": true}
	for k, t := range ts {
		switch {
		case opens(t):
			depth++
		case closes(t):
			depth--
		case t.Type == tokens.BlockBegin && k+1 < len(ts) && ts[k+1].Type == tokens.Name:
			name := ts[k+1].Val
			if opening[name] || (name == "set" && !setHasAssign(ts, k+2)) {
				depth++
			} else if strings.HasPrefix(name, "end") {
				depth--
			}
		}
		if depth > MaxTemplateNesting {
			return &TemplateLimitError{Limit: "source nesting", Max: MaxTemplateNesting, Line: t.Line,
				What: "the nesting of brackets and blocks"}
		}
	}
	return nil
}

// setHasAssign reports whether the {% set %} whose arguments start at ts[i] assigns (one line)
// rather than opening a block.
func setHasAssign(ts []*tokens.Token, i int) bool {
	for ; i < len(ts) && ts[i].Type != tokens.BlockEnd; i++ {
		if ts[i].Type == tokens.Assign {
			return true
		}
	}
	return false
}
