package tokenizer

import (
	"errors"
	"strings"
	"testing"
)

// budgetAttacks are templates that would run for hours, exhaust memory or overflow the stack
// without the render budget; each must fail with the limit named, within its work budget.
var budgetAttacks = []struct {
	name, src string
	limit     string // TemplateLimitError.Limit
	line      int    // TemplateLimitError.Line; 0: not checked
}{
	{"range 10**12", "{% for i in range(10**12) %}{% endfor %}", "work units", 1},
	{"range literal", "{% for i in range(1000000000000) %}x{% endfor %}", "work units", 1},
	{"nested loops", "{% for i in range(1000) %}\n{% for j in range(1000) %}{% for k in range(1000) %}{% endfor %}{% endfor %}{% endfor %}", "work units", 0},
	{"doubling by ~", "{% set ns = namespace(s='ab') %}\n{% for i in range(100) %}{% set ns.s = ns.s ~ ns.s %}{% endfor %}{{ ns.s }}", "value bytes", 2},
	{"doubling by +", "{% set ns = namespace(s='ab') %}{% for i in range(100) %}{% set ns.s = ns.s + ns.s %}{% endfor %}{{ ns.s }}", "value bytes", 1},
	{"repetition", "{{ 'a' * 1000000000000 }}", "value bytes", 1},
	{"repetition 10**9", "{{ 'abc' * (10**9)|int }}", "value bytes", 1},
	{"list doubling", "{% set ns = namespace(l=[1, 2]) %}{% for i in range(64) %}{% set ns.l = ns.l + ns.l %}{% endfor %}{{ ns.l|length }}", "value bytes", 1},
	{"deep macro recursion", "{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}", "nesting depth", 1},
	{"exponential macro", "{% macro f(n) %}{% if n > 0 %}{{ f(n - 1) }}{{ f(n - 1) }}{% endif %}{% endmacro %}{{ f(60) }}", "work units", 1},
	{"recursive loop", "{% for x in [[1]] recursive %}{{ loop([x]) }}{% endfor %}", "nesting depth", 1},
	{"output", "{% set s = 'x' * 10000000 %}{% for i in range(10) %}{{ s }}{% endfor %}", "output bytes", 1},
	{"macro output", "{% macro m() %}{% for i in range(10) %}{{ 'x' * 10000000 }}{% endfor %}{% endmacro %}{% set y = m() %}", "output bytes", 1},
	{"center", "{{ 'a'|center(10000000000) }}", "value bytes", 1},
	{"indent", "{{ ('a\\n' * 100000)|indent(100000) }}", "value bytes", 1},
	{"replace filter", "{{ ('a' * 100000)|replace('a', 'b' * 100000) }}", "value bytes", 1},
	{"join", "{{ range(10000)|join('y' * 10000) }}", "value bytes", 1},
	{"str.ljust", "{{ 'a'.ljust(10000000000) }}", "value bytes", 1},
	{"str.replace", "{% set s = 'a' * 100000 %}{{ s.replace('', 'b' * 100000) }}", "value bytes", 1},
	{"format width", "{{ '%0999999999d'|format(1) }}", "value bytes", 1},
	{"iterating a huge string", "{% for c in 'a' * 30000000 %}{% endfor %}", "work units", 1},
	{"slices", "{% set s = 'ab' * 1000000 %}{% for i in range(100000) %}{% set t = s[::-1] %}{% endfor %}", "work units", 1},
}

// budgetTestLimits are the default limits with less work, so that the attacks that spend it
// all end sooner.
var budgetTestLimits = ChatLimits{Work: 50_000, OutputBytes: DefaultChatLimits.OutputBytes,
	ValueBytes: DefaultChatLimits.ValueBytes, Depth: DefaultChatLimits.Depth}

func TestChatTemplateBudget(t *testing.T) {
	msgs := []Message{{Role: "user", Content: "hi"}}
	for _, a := range budgetAttacks {
		t.Run(a.name, func(t *testing.T) {
			tpl, err := CompileTemplateLimits(a.src, budgetTestLimits)
			if err != nil {
				t.Fatalf("compile: %v", err)
			}
			out, b, err := tpl.render(msgs, ChatOptions{AddGenerationPrompt: true})
			var le *TemplateLimitError
			if !errors.As(err, &le) || !errors.Is(err, ErrTemplateLimit) || !errors.Is(err, ErrChatTemplate) {
				t.Fatalf("render = %d bytes, %v; want a limit error", len(out), err)
			}
			if le.Limit != a.limit || (a.line > 0 && le.Line != a.line) {
				t.Fatalf("error %q: limit %q line %d, want %q line %d", err, le.Limit, le.Line, a.limit, a.line)
			}
			lim := budgetTestLimits
			// Bounded work: the budget's own count, and the bytes held, within the limits.
			if b.work > lim.Work+1+lim.ValueBytes/workUnitBytes || b.out > lim.OutputBytes+lim.ValueBytes {
				t.Fatalf("work %d units, %d bytes written: beyond the limits %+v", b.work, b.out, lim)
			}
			if b.depth != 0 {
				t.Fatalf("depth %d after the render", b.depth)
			}
			t.Logf("%v (work %d units)", err, b.work)
		})
	}
}

// The limits are per render and per template: a small budget stops what the default allows.
func TestChatTemplateLimitsConfigurable(t *testing.T) {
	src := "{% for m in messages %}{{ m.role }}: {{ m.content }}\n{% endfor %}"
	msgs := make([]Message, 100)
	for i := range msgs {
		msgs[i] = Message{Role: "user", Content: "hello"}
	}
	tpl, err := CompileTemplate(src)
	if err != nil {
		t.Fatal(err)
	}
	out, b, err := tpl.render(msgs, ChatOptions{})
	if err != nil || strings.Count(out, "user: hello\n") != 100 {
		t.Fatalf("default limits: %q, %v", out, err)
	}
	if b.work > 1000 {
		t.Fatalf("100 messages cost %d work units", b.work)
	}
	small, err := CompileTemplateLimits(src, ChatLimits{Work: 50})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := small.Render(msgs, ChatOptions{}); !errors.Is(err, ErrTemplateLimit) {
		t.Fatalf("50 work units: %v", err)
	}
	tiny, _ := CompileTemplateLimits(src, ChatLimits{OutputBytes: 100})
	if _, err := tiny.Render(msgs, ChatOptions{}); !errors.Is(err, ErrTemplateLimit) || !strings.Contains(err.Error(), "output bytes") {
		t.Fatalf("100 output bytes: %v", err)
	}
}

// A template cannot reach the file system or itself, cannot be huge or nested past the
// parser's recursion, and cannot switch its budget off.
func TestChatTemplateCompileLimits(t *testing.T) {
	for _, src := range []string{
		"{% include 'chat_template' %}", "{% import 'chat_template' as x %}",
		"{% from 'chat_template' import m %}", "{% extends 'chat_template' %}",
	} {
		if _, err := CompileTemplate(src); err == nil {
			t.Errorf("%q compiles", src)
		}
	}
	for _, src := range []string{
		"{{ " + strings.Repeat("(", 500) + "1" + strings.Repeat(")", 500) + " }}",
		strings.Repeat("{% if true %}", 500) + strings.Repeat("{% endif %}", 500),
		strings.Repeat("x", MaxTemplateBytes+1),
	} {
		if _, err := CompileTemplate(src); !errors.Is(err, ErrTemplateLimit) {
			t.Errorf("%.40q...: %v", src, err)
		}
	}
	tpl, err := CompileTemplate("{% set __pagoda_budget = 1 %}{% for i in range(3) %}{{ i }}{% endfor %}")
	if err != nil {
		t.Fatal(err)
	}
	if out, err := tpl.Render(nil, ChatOptions{}); err == nil {
		t.Fatalf("a template without its budget rendered %q", out)
	}
	if !ReservedVar("__pagoda_budget") || !ReservedVar("range") {
		t.Fatal("the budget's variables can be passed in")
	}
}

// Instrumentation keeps the operators' and calls' results as gonja computes them.
func TestChatTemplateBudgetSemantics(t *testing.T) {
	for src, want := range map[string]string{
		"{{ 1 + 2 }} {{ 'a' ~ 1 }} {{ 'ab' * 3 }} {{ [1] + [2] }} {{ 7 % 3 }} {{ 2 ** 3 }} {{ 'a' * -1 }}":                      "3 a1 ababab [1, 2] 1 8.0 ",
		"{{ range(3)|list }} {{ range(1, 7, 2)|join(',') }} {{ range(10**1)|length }} {{ range(3, 0, -1)|list }}":               "[0, 1, 2] 1,3,5 10 [3, 2, 1]",
		"{% set l = [] %}{% do l.append(2 * 2) %}{{ l }}":                                                                       "[4]",
		"{% macro f(n) %}{% if n > 0 %}{{ n }}{{ f(n - 1) }}{% endif %}{% endmacro %}{{ f(5) }}":                                "54321",
		"{{ 'abc'[::-1] }} {{ 'a b'.split() }} {{ 'x'|center(5) }}|{{ 'ab'|replace('b', 'cc') }} {{ 'ab'.replace('b', 'cc') }}": "cba ['a', 'b']   x  |acc acc",
		"{% for x in [[1, [2]]] recursive %}{% if x is iterable %}{{ loop(x) }}{% else %}{{ x }}{% endif %}{% endfor %}":        "12",
	} {
		tpl, err := CompileTemplate(src)
		if err != nil {
			t.Fatalf("%s: %v", src, err)
		}
		got, err := tpl.Render(nil, ChatOptions{})
		if err != nil || got != want {
			t.Errorf("%s = %q, %v; want %q", src, got, err, want)
		}
	}
}

// A GGUF whose tokenizer.chat_template loops 10^12 times, doubles a string or recurses without
// end loads, and rendering it is a clear limit error, not a hang.
func TestGGUFChatTemplateBudget(t *testing.T) {
	for name, c := range map[string]struct{ src, limit string }{
		"loop":      {"{% for i in range(10**12) %}{{ i }}{% endfor %}", "work units"},
		"doubling":  {"{% set ns = namespace(s='x') %}{% for i in range(64) %}{% set ns.s = ns.s ~ ns.s %}{% endfor %}{{ ns.s }}", "value bytes"},
		"recursion": {"{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}", "nesting depth"},
	} {
		kvs := spmKVs()
		kvs[keyChatTemplate] = c.src
		tk, err := FromGGUF(ggufOf(t, kvs))
		if err != nil {
			t.Fatal(err)
		}
		_, err = tk.ApplyChatTemplate([]Message{{Role: "user", Content: "hi"}}, true)
		var le *TemplateLimitError
		if !errors.As(err, &le) || le.Limit != c.limit || le.Line != 1 {
			t.Fatalf("%s: %v; want the limit %q at line 1", name, err, c.limit)
		}
	}
}
