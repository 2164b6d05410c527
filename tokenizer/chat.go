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
	"github.com/nikolalohinski/gonja/v2/nodes"
)

// Chat templates are Jinja, rendered the way Hugging Face's apply_chat_template renders them:
// jinja2 with trim_blocks and lstrip_blocks, the loop-controls extension, the globals
// raise_exception and strftime_now, a tojson filter that is json.dumps (not Jinja's HTML-safe
// one), and the variables messages, add_generation_prompt, bos_token and eos_token.
//
// Engine: github.com/nikolalohinski/gonja/v2, a maintained Jinja2 port for Go, which renders
// real templates (SmolLM2, Llama 3.x, Qwen2.5/3, Phi-3.5/4-mini, Gemma 2/3, Mistral Nemo,
// Granite...) byte-for-byte like jinja2 once aligned with Python where they differ: tojson and
// str methods (chat_funcs.go, chat_json.go), dict order, dict methods and filters and the
// true/false tests (chat_builtins.go), conditional expressions inside brackets and
// lstrip_blocks (a source rewrite, chat_source.go), and request JSON in its key order (Object,
// chat_object.go; a Go map reaches the template with sorted keys, Python keeps the order the
// client sent, so pass tool schemas as Objects, e.g. from DecodeJSON).
// Known gaps (none used by the templates tested): none renders as "" instead of "None" (also
// with ~ and in lists); "x is defined" is false for a variable set to none; iterating over none
// renders nothing instead of raising; -7 // 2 truncates to -3 and ** gives a float; a string
// index counts bytes, not characters; a dict literal is true even when empty; loop.depth is
// wrong in nested loops; and the % operator on strings fails (a render error).

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
	src    string
	tpl    *exec.Template
	limits ChatLimits
	ops    []*nodes.BinOperator // the operators the instrumented tree calls (chat_budget.go)
}

const rootTemplate = "chat_template"

// CompileTemplate parses a Jinja chat template, to be rendered within DefaultChatLimits.
func CompileTemplate(src string) (*Template, error) {
	return CompileTemplateLimits(src, DefaultChatLimits)
}

// CompileTemplateLimits parses a Jinja chat template, to be rendered within limits (a zero
// field is its DefaultChatLimits value). A source beyond MaxTemplateBytes or
// MaxTemplateNesting is refused with a TemplateLimitError.
func CompileTemplateLimits(src string, limits ChatLimits) (*Template, error) {
	cfg := chatConfig()
	limits = limits.withDefaults()
	if err := checkSource(src, cfg); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrChatTemplate, err)
	}
	tpl, err := compileGonja(jinja2Source(src, cfg), cfg, limits)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrChatTemplate, err)
	}
	return &Template{src: src, tpl: tpl, limits: limits, ops: instrument(tpl.Root())}, nil
}

// Limits are the limits t renders within.
func (t *Template) Limits() ChatLimits { return t.limits }

// chatConfig is jinja2's configuration in apply_chat_template: trim_blocks and lstrip_blocks.
func chatConfig() *config.Config {
	cfg := config.New()
	cfg.TrimBlocks = true
	cfg.LeftStripBlocks = true
	return cfg
}

// compileGonja parses src as it is (no rewriting) in the chat environment.
func compileGonja(src string, cfg *config.Config, limits ChatLimits) (tpl *exec.Template, err error) {
	defer func() {
		if p := recover(); p != nil {
			tpl, err = nil, fmt.Errorf("parse failed: %v", p)
		}
	}()
	return exec.NewTemplate(rootTemplate, cfg, sourceLoader{src}, chatEnvironment(limits))
}

// Render renders msgs. A template that makes gonja panic gets an error, not a crash; one that
// exceeds its limits gets an error wrapping a *TemplateLimitError (errors.Is ErrTemplateLimit).
func (t *Template) Render(msgs []Message, opts ChatOptions) (string, error) {
	out, _, err := t.render(msgs, opts)
	return out, err
}

// render is Render, returning the render's account too.
func (t *Template) render(msgs []Message, opts ChatOptions) (out string, budget *renderBudget, err error) {
	budget = &renderBudget{lim: t.limits, ops: t.ops}
	defer func() {
		if p := recover(); p != nil {
			out, err = "", fmt.Errorf("%w: render failed: %v", ErrChatTemplate, p)
		}
		if budget.err != nil { // reported even where gonja swallowed it
			out, err = "", fmt.Errorf("%w: %w", ErrChatTemplate, budget.err)
		}
	}()
	ms := make([]any, len(msgs))
	for i, m := range msgs {
		mm := map[string]any{"role": m.Role, "content": m.Content}
		for k, v := range m.Extra {
			if k != "role" && k != "content" {
				mm[k] = templateValue(v)
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
		budgetVar:               budget,
	}
	for k, v := range opts.Vars {
		if ReservedVar(k) {
			return "", budget, fmt.Errorf("%w: the variable %q is set by the renderer and cannot be overridden", ErrChatTemplate, k)
		}
		vars[k] = templateValue(v)
	}
	var buf strings.Builder
	if err := t.tpl.Execute(&budgetWriter{w: &buf, b: budget}, exec.NewContext(vars)); err != nil {
		if lerr := budget.methodLimit(err); lerr != nil {
			return "", budget, fmt.Errorf("%w: %w", ErrChatTemplate, lerr)
		}
		return "", budget, fmt.Errorf("%w: %v", ErrChatTemplate, err)
	}
	return buf.String(), budget, nil
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

// chatEnvironment is gonja's default environment aligned with jinja2 and HF: tojson, the dict
// methods and filters, the true/false tests and Python's str methods (chat_builtins.go,
// chat_funcs.go). It is built per template so that no package-level state is shared or mutated.
func chatEnvironment(limits ChatLimits) *exec.Environment {
	ctx := exec.EmptyContext().Update(builtins.GlobalFunctions)
	for name, fn := range budgetFunctions() {
		ctx.Set(name, fn)
	}
	return &exec.Environment{
		Context:           ctx,
		Filters:           budgetFilters(chatFilters()),
		Tests:             chatTests(),
		ControlStructures: chatControlStructures(),
		Methods: exec.Methods{
			Bool:  builtins.Methods.Bool,
			Int:   builtins.Methods.Int,
			Float: builtins.Methods.Float,
			Str:   strMethods(limits.ValueBytes),
			Dict:  dictMethods(),
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
	case "messages", "add_generation_prompt", "bos_token", "eos_token", "strftime_now", "raise_exception", "range":
		return true
	}
	return strings.HasPrefix(name, "__pagoda_")
}

// PlainChatTemplate is ChatML, the template a server falls back to when a model's own fails
// (llama-server's fallback too).
const PlainChatTemplate = "{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n' }}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"
