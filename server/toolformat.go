package server

import (
	"encoding/json"
	"slices"
	"strings"
)

// The tool-call formats, by vLLM's --tool-call-parser names, and how a
// model's format is chosen when the command line names none. A format
// reads calls out of an output (toolparse.go) and, for a chat template
// that ignores tools, writes the tools, earlier calls and their results
// into the prompt (toolfallback.go) in the form it reads back.
type toolFormat struct {
	parse func(text string) (content string, calls []toolCallFunc)
	// instructions lists the tools (each as the templates' tojson writes
	// it) for the system message.
	instructions func(tools []string) string
	// call writes one earlier call (name and arguments as tojson writes
	// them) as the assistant wrote it; callSep joins a turn's calls.
	call    func(name, args string) string
	callSep string
	// result writes one tool result; resultSep joins consecutive results
	// into the user turn that carries them.
	result    func(content string) string
	resultSep string
}

// toolFormats is every parser ToolCallParsers lists.
var toolFormats = map[string]toolFormat{
	// Hermes 2 Pro's format, which Qwen 2.5 and 3 kept; the instructions
	// are worded as Qwen 2.5's chat template words them, results are the
	// <tool_response> blocks of a user turn, as that template writes them.
	"hermes": {
		parse: parseHermes,
		instructions: func(tools []string) string {
			return "# Tools\n\nYou may call one or more functions to assist with the user query.\n\n" +
				"You are provided with function signatures within <tools></tools> XML tags:\n<tools>\n" +
				strings.Join(tools, "\n") + "\n</tools>\n\n" +
				"For each function call, return a json object with function name and arguments within " +
				"<tool_call></tool_call> XML tags:\n<tool_call>\n" +
				`{"name": <function-name>, "arguments": <args-json-object>}` + "\n</tool_call>"
		},
		call: func(name, args string) string {
			return "<tool_call>\n{\"name\": " + name + ", \"arguments\": " + args + "}\n</tool_call>"
		},
		callSep:   "\n",
		result:    func(content string) string { return "<tool_response>\n" + content + "\n</tool_response>" },
		resultSep: "\n",
	},
	// Llama 3.1's JSON tool calling ("custom tools" in its chat template,
	// whose wording the instructions follow); vLLM's llama3_json parser.
	"llama3_json": {
		parse: parseLlama3JSON,
		instructions: func(tools []string) string {
			return "Given the following functions, please respond with a JSON for a function call with its proper " +
				"arguments that best answers the given prompt.\n\n" +
				`Respond in the format {"name": function name, "parameters": dictionary of argument name and its value}. ` +
				"Do not use variables.\n\n" + strings.Join(tools, "\n\n")
		},
		call:      func(name, args string) string { return `{"name": ` + name + `, "parameters": ` + args + "}" },
		callSep:   "; ",
		result:    func(content string) string { return content },
		resultSep: "\n",
	},
	// OpenAI harmony's calls (gpt-oss; vLLM's openai parser), read with
	// the reasoning by harmony.go. gpt-oss's template writes tools itself;
	// these serve a template that ignores them.
	"openai": {
		parse: func(text string) (string, []toolCallFunc) {
			h := parseHarmony(text)
			return h.content, h.calls
		},
		instructions: func(tools []string) string {
			return "# Tools\n\nTo call a function, write " + hChannel + "commentary to=functions.NAME " + hConstrain +
				"json" + hMessage + "{arguments as JSON}" + hCall + "\n\nThe functions:\n" + strings.Join(tools, "\n")
		},
		call: func(name, args string) string {
			var n string
			if json.Unmarshal([]byte(name), &n) != nil {
				n = name
			}
			return hChannel + "commentary to=functions." + n + " " + hConstrain + "json" + hMessage + args + hCall
		},
		callSep:   "",
		result:    func(content string) string { return content },
		resultSep: "\n",
	},
}

// ToolCallParsers lists the --tool-call-parser values (openai selects
// harmony, harmony.go).
func ToolCallParsers() []string { return []string{"hermes", "llama3_json", "openai"} }

// parserRules choose the tool-call parser of a model when the command line
// names none (--tool-call-parser): the first rule that matches the chat
// template's source or the GGUF architecture wins, else hermes, whose
// fallback prompt teaches its format to any model. SmolLM2 (a llama
// architecture with a ChatML template) gets hermes.
var parserRules = []struct {
	parser, why string
	match       func(template, arch string) bool
}{
	{"openai", "the model speaks harmony (gpt-oss)", func(template, arch string) bool {
		return arch == "gpt-oss" || strings.Contains(template, hChannel)
	}},
	{"hermes", "the chat template writes <tool_call> (Qwen 2.5/3, Hermes)", templateHas("<tool_call>")},
	{"llama3_json", "the chat template is Llama 3's", templateHas("<|start_header_id|>")},
	{"hermes", "the chat template is ChatML (<|im_start|>), as Qwen's and Hermes'", templateHas("<|im_start|>")},
	{"hermes", "the architecture is Qwen's", func(_, arch string) bool {
		return slices.Contains([]string{"qwen2", "qwen2moe", "qwen3", "qwen3moe"}, arch)
	}},
}

func templateHas(marker string) func(template, arch string) bool {
	return func(template, _ string) bool { return strings.Contains(template, marker) }
}

// chooseParser is the parser of a model by parserRules, and why.
func chooseParser(template, arch string) (parser, why string) {
	for _, r := range parserRules {
		if r.match(template, arch) {
			return r.parser, r.why
		}
	}
	return "hermes", "no rule matched the model: the default"
}
