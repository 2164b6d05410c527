package tokenizer

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"strings"
	"sync"
	"testing"
	"time"
)

// fixedNow must match FIXED_NOW in testdata/gen_chat_expected.py.
var fixedNow = time.Date(2024, 9, 3, 14, 5, 9, 0, time.Local)

type chatCase struct {
	Name                string         `json:"name"`
	Template            string         `json:"template"`
	Messages            []Message      `json:"messages"`
	AddGenerationPrompt bool           `json:"add_generation_prompt"`
	BOS                 string         `json:"bos_token"`
	EOS                 string         `json:"eos_token"`
	Vars                map[string]any `json:"vars"`
	Expected            *string        `json:"expected"`
	Error               *string        `json:"error"`
}

func readChatCases(t *testing.T) []chatCase {
	t.Helper()
	raw, err := os.ReadFile("testdata/chat_expected.json")
	if err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var f struct {
		Cases []chatCase `json:"cases"`
	}
	if err := dec.Decode(&f); err != nil {
		t.Fatal(err)
	}
	for i := range f.Cases {
		for k, v := range f.Cases[i].Vars {
			f.Cases[i].Vars[k] = plainJSON(v)
		}
	}
	return f.Cases
}

// plainJSON turns json.Numbers into ints or float64s, as Python's json gives int and float.
func plainJSON(v any) any {
	switch x := v.(type) {
	case json.Number:
		if i, err := x.Int64(); err == nil {
			return int(i)
		}
		f, _ := x.Float64()
		return f
	case []any:
		for i := range x {
			x[i] = plainJSON(x[i])
		}
	case map[string]any:
		for k := range x {
			x[k] = plainJSON(x[k])
		}
	}
	return v
}

// TestChatTemplatesMatchJinja2 renders real chat templates and compares byte for byte with
// Python jinja2 configured as Hugging Face's apply_chat_template (testdata/gen_chat_expected.py).
func TestChatTemplatesMatchJinja2(t *testing.T) {
	smol := smolTokenizer(t)
	for _, c := range readChatCases(t) {
		t.Run(c.Name, func(t *testing.T) {
			src := smol.ChatTemplate()
			if c.Template != "gguf:smollm2" {
				b, err := os.ReadFile("testdata/templates/" + c.Template)
				if err != nil {
					t.Fatal(err)
				}
				src = string(b)
			}
			tpl, err := CompileTemplate(src)
			if err != nil {
				t.Fatal(err)
			}
			got, err := tpl.Render(c.Messages, ChatOptions{
				AddGenerationPrompt: c.AddGenerationPrompt, BOS: c.BOS, EOS: c.EOS,
				Now: func() time.Time { return fixedNow }, Vars: c.Vars,
			})
			if c.Error != nil {
				if err == nil || !errors.Is(err, ErrChatTemplate) || !strings.Contains(err.Error(), *c.Error) {
					t.Fatalf("want error containing %q, got %v (output %q)", *c.Error, err, got)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got != *c.Expected {
				t.Fatalf("render differs from jinja2\n got %q\nwant %q", got, *c.Expected)
			}
		})
	}
}

// TestApplyChatTemplateSmolLM2 renders through the tokenizer's own template and BOS/EOS texts
// and checks the result tokenizes with the template's special tokens.
func TestApplyChatTemplateSmolLM2(t *testing.T) {
	tk := smolTokenizer(t)
	var want string
	for _, c := range readChatCases(t) {
		if c.Name == "smollm2/no-system" {
			want = *c.Expected
		}
	}
	msgs := []Message{
		{Role: "user", Content: "What is the capital of France?"},
		{Role: "assistant", Content: "Paris."},
		{Role: "user", Content: "  And of Italy? Answer in one word 🙂\n"},
	}
	got, err := tk.ApplyChatTemplate(msgs, true)
	if err != nil {
		t.Fatal(err)
	}
	if got != want {
		t.Fatalf("got %q\nwant %q", got, want)
	}
	counts := map[int32]int{}
	for _, id := range tk.Encode(got, false, true) {
		counts[id]++
	}
	// injected system turn + 3 turns + generation prompt; every turn but the last closed
	if counts[1] != 5 || counts[2] != 4 {
		t.Errorf("rendered prompt has %d <|im_start|> and %d <|im_end|> tokens, want 5 and 4", counts[1], counts[2])
	}
}

func TestChatTemplateErrors(t *testing.T) {
	cases := []struct {
		name, src string
	}{
		{"syntax", "{% for m in messages %}{{ m.content }"},
		{"unclosed block", "{% if add_generation_prompt %}x"},
		{"include refused", "{% include 'other.jinja' %}"},
		{"raise_exception", "{{ raise_exception('bad input') }}"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := RenderChat(c.src, []Message{{Role: "user", Content: "hi"}}, true, "<s>", "</s>")
			if !errors.Is(err, ErrChatTemplate) {
				t.Fatalf("got %v, want an ErrChatTemplate", err)
			}
		})
	}
	if _, err := storiesTokenizer(t).ApplyChatTemplate(nil, true); !errors.Is(err, ErrChatTemplate) {
		t.Errorf("a vocabulary without template: got %v", err)
	}
}

// TestChatTemplateConcurrent renders one compiled template from many goroutines (run with -race).
func TestChatTemplateConcurrent(t *testing.T) {
	tpl, err := CompileTemplate(smolTokenizer(t).ChatTemplate())
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			msg := strings.Repeat("x", i)
			out, err := tpl.Render([]Message{{Role: "user", Content: msg}}, ChatOptions{AddGenerationPrompt: true})
			if err != nil || !strings.Contains(out, "<|im_start|>user\n"+msg+"<|im_end|>") {
				t.Errorf("render %d: %q, %v", i, out, err)
			}
		}()
	}
	wg.Wait()
}
