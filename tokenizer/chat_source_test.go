package tokenizer

import (
	"encoding/json"
	"errors"
	"reflect"
	"testing"
)

func TestJinja2Source(t *testing.T) {
	cases := []struct{ name, src, want string }{
		{"no change", "{% if a %}{{ b | trim }}{% endif %}\n", "{% if a %}{{ b | trim }}{% endif %}\n"},
		{"top level", "{{ a if b else c }}", "{{ (((b ) and [a ] or [c ])[0])}}"},
		{"in parentheses", "{{ x + (a if b) }}", "{{ x + ((((b) and [a ] or [none])[0])) }}"},
		{"chained", "{{ a if b else c if d else e }}",
			"{{ (((b ) and [a ] or [(((d ) and [c ] or [e ])[0])])[0])}}"},
		{"arguments", "{{ f(k=a if b else c, d) }}", "{{ f(k=(((b ) and [a ] or [c])[0]), d) }}"},
		{"set", "{% set x = [a if b else c] %}", "{% set x = [(((b ) and [a ] or [c])[0])] %}"},
		{"for filter untouched", "{% for m in ms if m.ok %}{% endfor %}", "{% for m in ms if m.ok %}{% endfor %}"},
		{"strings untouched", "{{ 'a if b else c' }}{# (a if b else c) #}", "{{ 'a if b else c' }}{# (a if b else c) #}"},
		{"raw untouched", "{% raw %}{{ (a if b else c) }}{% endraw %}", "{% raw %}{{ (a if b else c) }}{% endraw %}"},
		{"space after a tag kept", "{{ x }} {% if a %}{% endif %}", "{{ x }} {%+ if a %}{% endif %}"},
		{"space at line start stripped", "x\n  {% if a %}{% endif %}", "x\n  {% if a %}{% endif %}"},
		{"space after -}} stripped", "{{ x -}} {# c #}", "{{ x -}} {# c #}"},
		{"both at one place", "{{ x }} {%if (a if b) %}{%endif%}", "{{ x }} {%+if ((((b) and [a ] or [none])[0])) %}{%endif%}"},
		{"crlf", "a\r\n{{ b }}\r\n", "a\n{{ b }}\n"},
		{"unlexable", "{{ 'open", "{{ 'open"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := jinja2Source(c.src, chatConfig()); got != c.want {
				t.Errorf("got  %q\nwant %q", got, c.want)
			}
		})
	}
}

func TestDecodeJSON(t *testing.T) {
	v, err := DecodeJSON([]byte(` {"b": [1, 2.5, -0, 1e2, 9223372036854775808, "s", true, null], "a": {"z": {}, "y": []}, "b2": 3, "b": 0} `))
	if err != nil {
		t.Fatal(err)
	}
	obj := v.(Object)
	if want := []string{"b", "a", "b2"}; !reflect.DeepEqual(obj.Keys, want) {
		t.Errorf("keys %v, want %v (a repeated key keeps its first place)", obj.Keys, want)
	}
	if obj.Values["b"] != 0 {
		t.Errorf("a repeated key takes the last value: got %v", obj.Values["b"])
	}
	inner := obj.Values["a"].(Object)
	if !reflect.DeepEqual(inner.Keys, []string{"z", "y"}) || !reflect.DeepEqual(inner.Values["y"], []any{}) {
		t.Errorf("nested object %+v", inner)
	}
	v, _ = DecodeJSON([]byte(`[1, 2.5, -0, 1e2, 9223372036854775808, "s", true, null]`))
	want := []any{1, 2.5, 0, 100.0, 9223372036854775808.0, "s", true, nil}
	if !reflect.DeepEqual(v, want) {
		t.Errorf("got %#v\nwant %#v", v, want)
	}
	out, err := json.Marshal(obj)
	if err != nil || string(out) != `{"b":0,"a":{"z":{},"y":[]},"b2":3}` {
		t.Errorf("MarshalJSON: %s, %v", out, err)
	}
	for _, bad := range []string{``, `{`, `{"a" 1}`, `[1,]`, `1 2`, `{"a": 1}}`} {
		if _, err := DecodeJSON([]byte(bad)); err == nil {
			t.Errorf("DecodeJSON(%q): no error", bad)
		}
	}
	var o Object
	if err := json.Unmarshal([]byte(`[1]`), &o); err == nil {
		t.Error("an array unmarshalled into an Object")
	}
}

// TestRenderRecoversPanics: a template can drive gonja into a runtime panic (here an integer
// division by zero inside its % operator); Render turns it into an error.
func TestRenderRecoversPanics(t *testing.T) {
	_, err := RenderChat(`{{ "%s" % "x" }}`, []Message{{Role: "user", Content: "hi"}}, true, "", "")
	if !errors.Is(err, ErrChatTemplate) {
		t.Fatalf("got %v, want an ErrChatTemplate", err)
	}
}

func FuzzDecodeJSON(f *testing.F) {
	for _, s := range []string{`{"b": 1, "a": [1.5, null]}`, `[]`, `"x"`, `{"a":{"a":{}}}`, `{`, `1e999`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		_, err := DecodeJSON(data)
		if valid := json.Valid(data); valid != (err == nil) {
			t.Fatalf("json.Valid %v, DecodeJSON error %v", valid, err)
		}
	})
}

// FuzzChatTemplate compiles and renders arbitrary template sources: errors are fine, panics
// and hangs are not, and the source rewriting never makes a template gonja accepts invalid.
func FuzzChatTemplate(f *testing.F) {
	for _, s := range []string{
		"{{ (a if b else c) }}", "{% for m in messages %}{{ m.role }} {% endfor %}",
		"{{ x if y }}{% set z = [1 if a, 2] %}", "{{ {'a': 1} | items | list }}", "{{ 'a'.rsplit(none, 1) }}",
	} {
		f.Add(s)
	}
	msgs := []Message{{Role: "user", Content: "hi", Extra: map[string]any{"o": Object{Keys: []string{"k"}, Values: map[string]any{"k": 1}}}}}
	f.Fuzz(func(t *testing.T, src string) {
		tpl, err := CompileTemplate(src)
		if err != nil {
			if errors.Is(err, ErrTemplateLimit) {
				return // too large or too deeply nested: refused before parsing
			}
			if _, plainErr := compileGonja(src, chatConfig(), DefaultChatLimits); plainErr == nil {
				t.Fatalf("gonja parses the source but not its rewriting %q: %v", jinja2Source(src, chatConfig()), err)
			}
			return
		}
		_, _ = tpl.Render(msgs, ChatOptions{AddGenerationPrompt: true})
	})
}
