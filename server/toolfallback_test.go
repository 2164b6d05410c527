package server

import (
	"encoding/json"
	"os"
	"slices"
	"strings"
	"testing"

	"pagoda/internal/testmodel"
	"pagoda/tokenizer"
)

// smolTemplate is SmolLM2-135M-Instruct's chat template (the default
// model's): ChatML, a default system prompt, no tools.
const smolTemplate = "{% for message in messages %}{% if loop.first and messages[0]['role'] != 'system' %}" +
	"{{ '<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n' }}{% endif %}" +
	"{{'<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n'}}{% endfor %}" +
	"{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"

// repoTemplate reads a chat template of tokenizer/testdata/templates.
func repoTemplate(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(testmodel.RepoFile(t, "tokenizer/testdata/templates", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func compile(t *testing.T, src string) *tokenizer.Template {
	t.Helper()
	tmpl, err := tokenizer.CompileTemplate(src)
	if err != nil {
		t.Fatal(err)
	}
	return tmpl
}

// The parser is chosen from the template, then the architecture; whether
// the template shows tools and its default system prompt are found by
// rendering it.
func TestToolTemplateDetection(t *testing.T) {
	for _, tc := range []struct {
		name, src, arch, parser string
		ignores                 bool
		system                  string
	}{
		{"smollm2", smolTemplate, "llama", "hermes", true, "You are a helpful AI assistant named SmolLM, trained by Hugging Face"},
		{"qwen2.5", repoTemplate(t, "qwen2.5-instruct.jinja"), "qwen2", "hermes", false,
			"You are Qwen, created by Alibaba Cloud. You are a helpful assistant."},
		{"llama-3.1", repoTemplate(t, "llama-3.1-instruct.jinja"), "llama", "llama3_json", false, ""},
		{"llama-3.2", repoTemplate(t, "llama-3.2-instruct.jinja"), "llama", "llama3_json", false, ""},
		{"gemma-3", repoTemplate(t, "gemma-3-it.jinja"), "gemma3", "hermes", true, ""},
		{"stories test template", testTemplate, "llama", "hermes", true, ""},
		{"qwen architecture", "{{ messages[0]['content'] }}", "qwen3", "hermes", true, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if p, why := chooseParser(tc.src, tc.arch); p != tc.parser {
				t.Errorf("parser %s (%s), want %s", p, why, tc.parser)
			}
			tmpl := compile(t, tc.src)
			opts := tokenizer.ChatOptions{AddGenerationPrompt: true, BOS: "<s>", EOS: "</s>"}
			if got := templateIgnoresTools(tmpl, opts); got != tc.ignores {
				t.Errorf("ignores tools: %v, want %v", got, tc.ignores)
			}
			if got := defaultSystem(tmpl, opts); got != tc.system {
				t.Errorf("default system prompt %q, want %q", got, tc.system)
			}
		})
	}
}

// toolConversation has every tool turn: a system message, calls in an
// assistant turn, two consecutive results; the tool's schema keeps the
// client's key order.
const toolConversation = `{"messages": [
	{"role": "system", "content": "Be brief."},
	{"role": "user", "content": "Weather in London and Rome?"},
	{"role": "assistant", "content": null, "tool_calls": [
		{"id": "a", "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\":\"London\"}"}},
		{"id": "b", "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\": \"Rome\"}"}}]},
	{"role": "tool", "tool_call_id": "a", "content": "rain"},
	{"role": "tool", "tool_call_id": "b", "content": "sun"},
	{"role": "user", "content": "Thanks."}],
 "tools": [{"type": "function", "function": {"name": "get_weather", "description": "Get the weather.",
	"parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}]}`

const hermesInstructions = "# Tools\n\nYou may call one or more functions to assist with the user query.\n\n" +
	"You are provided with function signatures within <tools></tools> XML tags:\n<tools>\n" +
	`{"type": "function", "function": {"name": "get_weather", "description": "Get the weather.", ` +
	`"parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}` +
	"\n</tools>\n\nFor each function call, return a json object with function name and arguments within " +
	"<tool_call></tool_call> XML tags:\n<tool_call>\n{\"name\": <function-name>, \"arguments\": <args-json-object>}\n</tool_call>"

// The fallback writes the tools, calls and results in the parser's format
// into a template that ignores tools: the whole prompt, exactly.
func TestToolFallbackPrompt(t *testing.T) {
	var req chatRequest
	if err := json.Unmarshal([]byte(toolConversation), &req); err != nil {
		t.Fatal(err)
	}
	msgs, aerr := messages(req.Messages)
	if aerr != nil {
		t.Fatal(aerr)
	}
	tmpl := compile(t, smolTemplate)
	opts := tokenizer.ChatOptions{AddGenerationPrompt: true}
	hermes, err := newToolFallback("hermes", tmpl, opts)
	if err != nil {
		t.Fatal(err)
	}
	got, err := tmpl.Render(hermes.apply(msgs, req.Messages, req.Tools), opts)
	if err != nil {
		t.Fatal(err)
	}
	want := "<|im_start|>system\nBe brief.\n\n" + hermesInstructions + "<|im_end|>\n" +
		"<|im_start|>user\nWeather in London and Rome?<|im_end|>\n" +
		"<|im_start|>assistant\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"London\"}}\n</tool_call>\n" +
		"<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Rome\"}}\n</tool_call><|im_end|>\n" +
		"<|im_start|>user\n<tool_response>\nrain\n</tool_response>\n<tool_response>\nsun\n</tool_response><|im_end|>\n" +
		"<|im_start|>user\nThanks.<|im_end|>\n<|im_start|>assistant\n"
	if got != want {
		t.Errorf("hermes prompt:\n%s\nwant:\n%s", got, want)
	}
	// Without a system message: a new one, after the template's default.
	got, _ = tmpl.Render(hermes.apply(msgs[1:2], req.Messages[1:2], req.Tools), opts)
	if want := "<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face\n\n" +
		hermesInstructions + "<|im_end|>\n"; !strings.HasPrefix(got, want) {
		t.Errorf("without a system message:\n%s\nwant it to start with:\n%s", got, want)
	}
	llama, _ := newToolFallback("llama3_json", tmpl, opts)
	out := llama.apply(msgs, req.Messages, req.Tools)
	roles := make([]string, len(out))
	for i, m := range out {
		roles[i] = m.Role
	}
	if !slices.Equal(roles, []string{"system", "user", "assistant", "user", "user"}) ||
		!strings.HasPrefix(out[0].Content, "Be brief.\n\nGiven the following functions") ||
		out[2].Content != `{"name": "get_weather", "parameters": {"city": "London"}}; {"name": "get_weather", "parameters": {"city": "Rome"}}` ||
		out[3].Content != "rain\nsun" {
		t.Errorf("llama3_json: %+v", out)
	}
}
