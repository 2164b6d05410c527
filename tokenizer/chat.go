package tokenizer

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/nikolalohinski/gonja/v2/builtins"
	"github.com/nikolalohinski/gonja/v2/config"
	"github.com/nikolalohinski/gonja/v2/exec"
	"github.com/nikolalohinski/gonja/v2/loaders"
)

// Chat templates are Jinja, rendered the way Hugging Face's apply_chat_template renders them:
// jinja2 with trim_blocks and lstrip_blocks, the loop-controls extension, the globals
// raise_exception and strftime_now, a tojson filter that is json.dumps (not Jinja's HTML-safe
// one), and the variables messages, add_generation_prompt, bos_token and eos_token.
//
// Engine: github.com/nikolalohinski/gonja/v2, a maintained Jinja2 port for Go, which renders
// real templates (SmolLM2, Llama 3.x, Qwen2.5, Phi-3.5, Gemma 2, Mistral Nemo, Granite...)
// byte-for-byte like jinja2 once tojson and str.replace are aligned with Python (chat_funcs.go).
// Known gaps (none used by the templates tested): iterating over none renders nothing instead
// of raising; none concatenated with ~ renders "" instead of "None"; ** gives a float; and
// tojson of a Go map sorts its keys (Python keeps insertion order), so callers should pass
// tool schemas with sorted keys when byte-exactness matters.

// Message is one chat turn. Extra holds the turn's other fields as the
// template sees them (tool_calls of an assistant turn, tool_call_id and name
// of a tool result), as Hugging Face passes them.
type Message struct {
	Role    string         `json:"role"`
	Content string         `json:"content"`
	Extra   map[string]any `json:"-"`
}

// ErrChatTemplate is wrapped by template compile and render errors; a template's
// raise_exception surfaces as a render error carrying its message.
var ErrChatTemplate = errors.New("tokenizer: chat template")

// ChatOptions are the render inputs besides the messages.
type ChatOptions struct {
	AddGenerationPrompt bool
	BOS, EOS            string           // bos_token and eos_token
	Now                 func() time.Time // clock of strftime_now; nil means time.Now
	Vars                map[string]any   // extra variables (tools, enable_thinking, ...)
}

// Template is a compiled chat template, safe for concurrent Render calls.
type Template struct {
	src string
	tpl *exec.Template
}

const rootTemplate = "chat_template"

// CompileTemplate parses a Jinja chat template.
func CompileTemplate(src string) (*Template, error) {
	cfg := config.New()
	cfg.TrimBlocks = true
	cfg.LeftStripBlocks = true
	tpl, err := exec.NewTemplate(rootTemplate, cfg, sourceLoader{src}, chatEnvironment())
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrChatTemplate, err)
	}
	return &Template{src: src, tpl: tpl}, nil
}

// Render renders msgs.
func (t *Template) Render(msgs []Message, opts ChatOptions) (string, error) {
	ms := make([]any, len(msgs))
	for i, m := range msgs {
		mm := map[string]any{"role": m.Role, "content": m.Content}
		for k, v := range m.Extra {
			if k != "role" && k != "content" {
				mm[k] = v
			}
		}
		ms[i] = mm
	}
	now := opts.Now
	if now == nil {
		now = time.Now
	}
	vars := map[string]any{
		"tools":                 nil,
		"documents":             nil,
		"strftime_now":          func(format string) string { return strftime(now(), format) },
		"raise_exception":       raiseException,
		"messages":              ms,
		"add_generation_prompt": opts.AddGenerationPrompt,
		"bos_token":             opts.BOS,
		"eos_token":             opts.EOS,
	}
	for k, v := range opts.Vars {
		if ReservedVar(k) {
			return "", fmt.Errorf("%w: the variable %q is set by the renderer and cannot be overridden", ErrChatTemplate, k)
		}
		vars[k] = v
	}
	out, err := t.tpl.ExecuteToString(exec.NewContext(vars))
	if err != nil {
		return "", fmt.Errorf("%w: %v", ErrChatTemplate, err)
	}
	return out, nil
}

// RenderChat compiles template and renders msgs with it.
func RenderChat(template string, msgs []Message, addGenerationPrompt bool, bos, eos string) (string, error) {
	t, err := CompileTemplate(template)
	if err != nil {
		return "", err
	}
	return t.Render(msgs, ChatOptions{AddGenerationPrompt: addGenerationPrompt, BOS: bos, EOS: eos})
}

// ApplyChatTemplate renders msgs with the vocabulary's own template and its BOS/EOS texts.
func (t *Tokenizer) ApplyChatTemplate(msgs []Message, addGenerationPrompt bool) (string, error) {
	if t.chatTemplate == "" {
		return "", fmt.Errorf("%w: the vocabulary has no %s", ErrChatTemplate, keyChatTemplate)
	}
	return RenderChat(t.chatTemplate, msgs, addGenerationPrompt, t.TokenText(t.bos), t.TokenText(t.eos))
}

func raiseException(msg string) (string, error) {
	return "", fmt.Errorf("raise_exception: %s", msg)
}

// chatEnvironment is gonja's default environment with HF's tojson and Python's str.replace.
// It is built per template so that no package-level state is shared or mutated.
func chatEnvironment() *exec.Environment {
	filters := exec.NewFilterSet(map[string]exec.FilterFunction{}).Update(builtins.Filters)
	if err := filters.Replace("tojson", filterToJSON); err != nil {
		panic(err) // gonja always defines tojson
	}
	return &exec.Environment{
		Context:           exec.EmptyContext().Update(builtins.GlobalFunctions),
		Filters:           filters,
		Tests:             builtins.Tests,
		ControlStructures: builtins.ControlStructures,
		Methods: exec.Methods{
			Bool:  builtins.Methods.Bool,
			Int:   builtins.Methods.Int,
			Float: builtins.Methods.Float,
			Str:   strMethods(),
			Dict:  builtins.Methods.Dict,
			List:  builtins.Methods.List,
		},
	}
}

// sourceLoader serves the one template and refuses includes: a template read from a model
// file must not read the file system.
type sourceLoader struct{ src string }

func (l sourceLoader) Read(path string) (io.Reader, error) {
	if path != rootTemplate {
		return nil, fmt.Errorf("chat templates cannot load %q", path)
	}
	return strings.NewReader(l.src), nil
}

func (l sourceLoader) Resolve(path string) (string, error) {
	if path != rootTemplate {
		return "", fmt.Errorf("chat templates cannot load %q", path)
	}
	return path, nil
}

func (l sourceLoader) Inherit(string) (loaders.Loader, error) { return l, nil }

// ReservedVar reports whether name is a template variable the renderer sets
// itself (messages, add_generation_prompt, bos_token, eos_token and the
// helper functions), which ChatOptions.Vars may not override.
func ReservedVar(name string) bool {
	switch name {
	case "messages", "add_generation_prompt", "bos_token", "eos_token", "strftime_now", "raise_exception":
		return true
	}
	return false
}
