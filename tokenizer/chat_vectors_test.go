package tokenizer

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"
	"time"
)

// vectorsNow must match FIXED_NOW in scripts/gen_chat_vectors.py.
var vectorsNow = time.Date(2024, 9, 3, 14, 5, 9, 0, time.Local)

type chatVector struct {
	Name                string            `json:"name"`
	Template            string            `json:"template"` // a file in testdata/templates
	Source              string            `json:"source"`   // or an inline template
	TemplateSHA256      string            `json:"template_sha256"`
	Messages            []json.RawMessage `json:"messages"`
	AddGenerationPrompt bool              `json:"add_generation_prompt"`
	BOS                 string            `json:"bos_token"`
	EOS                 string            `json:"eos_token"`
	Vars                Object            `json:"vars"`
	Expected            *string           `json:"expected"`
	Error               *string           `json:"error"`
}

// vectorMessages turns the vector's messages (JSON objects, key order kept) into Messages:
// role and content become fields, every other key goes to Extra.
func vectorMessages(t *testing.T, raw []json.RawMessage) []Message {
	t.Helper()
	msgs := make([]Message, len(raw))
	for i, r := range raw {
		var obj Object
		if err := json.Unmarshal(r, &obj); err != nil {
			t.Fatal(err)
		}
		role, ok1 := obj.Values["role"].(string)
		content, ok2 := obj.Values["content"].(string)
		if !ok1 || !ok2 {
			t.Fatalf("message %d: role and content must be strings: %s", i, r)
		}
		msgs[i] = Message{Role: role, Content: content, Extra: map[string]any{}}
		for _, k := range obj.Keys {
			if k != "role" && k != "content" {
				msgs[i].Extra[k] = obj.Values[k]
			}
		}
	}
	return msgs
}

// TestChatTemplateVectors renders the chat templates of the supported model families (Qwen3,
// Gemma 3, Phi-4-mini, Llama 3.1/3.2) and compares byte for byte with Python jinja2 configured
// as Hugging Face's apply_chat_template (scripts/gen_chat_vectors.py): thinking on and off,
// reasoning in history, tools, tool calls and results, dates, and raise_exception; plus small
// templates for each Jinja feature where the renderer departs from gonja to follow jinja2.
func TestChatTemplateVectors(t *testing.T) {
	raw, err := os.ReadFile("testdata/chat_templates.vectors.json")
	if err != nil {
		t.Fatal(err)
	}
	var f struct {
		Cases []chatVector `json:"cases"`
	}
	if err := json.Unmarshal(raw, &f); err != nil {
		t.Fatal(err)
	}
	if len(f.Cases) == 0 {
		t.Fatal("no vectors")
	}
	for _, c := range f.Cases {
		t.Run(c.Name, func(t *testing.T) {
			vars := map[string]any{}
			for _, k := range c.Vars.Keys {
				vars[k] = c.Vars.Values[k]
			}
			got, err := vectorTemplate(t, c).Render(vectorMessages(t, c.Messages), ChatOptions{
				AddGenerationPrompt: c.AddGenerationPrompt, BOS: c.BOS, EOS: c.EOS,
				Now: func() time.Time { return vectorsNow }, Vars: vars,
			})
			if c.Error != nil {
				if err == nil || !errors.Is(err, ErrChatTemplate) || !strings.Contains(err.Error(), *c.Error) {
					t.Fatalf("want an error containing %q, got %v (output %q)", *c.Error, err, got)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got != *c.Expected {
				t.Fatalf("render differs from jinja2 at byte %d\n got %q\nwant %q", firstDiff(got, *c.Expected), got, *c.Expected)
			}
		})
	}
}

// vectorTemplate compiles the vector's inline source or its template file, after checking that
// the file is the one the vectors were rendered from.
func vectorTemplate(t *testing.T, c chatVector) *Template {
	t.Helper()
	src := c.Source
	if src == "" {
		b, err := os.ReadFile("testdata/templates/" + c.Template)
		if err != nil {
			t.Fatal(err)
		}
		if sum := sha256.Sum256(b); hex.EncodeToString(sum[:]) != c.TemplateSHA256 {
			t.Fatalf("%s changed since the vectors were made: run scripts/gen_chat_vectors.py", c.Template)
		}
		src = string(b)
	}
	tpl, err := CompileTemplate(src)
	if err != nil {
		t.Fatal(err)
	}
	return tpl
}

func firstDiff(a, b string) int {
	n := min(len(a), len(b))
	for i := range n {
		if a[i] != b[i] {
			return i
		}
	}
	return n
}
