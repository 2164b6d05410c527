package server

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"

	"pagoda/grammar"
	"pagoda/tokenizer"
)

// Tool calling on chat completions, as OpenAI and vLLM do it. The tools go
// to the chat template (its tools variable); tool_choice decides what the
// model may answer:
//
//	none      free text (the tools are still shown to the template)
//	auto      free text, parsed for calls afterwards by the server's parser
//	          (--tool-call-parser, else chosen from the model; always on, as in
//	          llama-server and Ollama, where vLLM needs --enable-auto-tool-choice)
//	required  a grammar forces a JSON array of one or more calls
//	          [{"name": …, "parameters": {…}}], each valid against its tool's schema
//	{"type": "function", "function": {"name": N}}
//	          a grammar forces the arguments of N, valid against its schema
type toolDef struct {
	Type     string       `json:"type"`
	Function toolFunction `json:"function"`
}

type toolFunction struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters,omitempty"`
	Strict      *bool           `json:"strict,omitempty"`
}

// toolCall is a call in a response or in an assistant message of the
// history; Arguments is a JSON text.
type toolCall struct {
	ID       string       `json:"id"`
	Type     string       `json:"type"`
	Function toolCallFunc `json:"function"`
}

type toolCallFunc struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// toolCallDelta is a call in a streamed chunk.
type toolCallDelta struct {
	Index    int          `json:"index"`
	ID       string       `json:"id,omitempty"`
	Type     string       `json:"type,omitempty"`
	Function toolCallFunc `json:"function"`
}

// Tool choice modes.
const (
	toolsNone     = "none"
	toolsAuto     = "auto"
	toolsRequired = "required"
	toolsNamed    = "named"
)

// toolPlan is how a request's tools are handled.
type toolPlan struct {
	mode     string
	name     string // toolsNamed: the function
	parser   string // toolsAuto: the output parser
	tools    []toolDef
	parallel bool
}

var toolName = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

// planTools validates tools and tool_choice. autoParser reads the calls of
// auto tool choice (the server's, see planToolCalling).
func planTools(req *chatRequest, autoParser string) (*toolPlan, *apiError) {
	p := &toolPlan{mode: toolsNone, tools: req.Tools, parallel: req.ParallelToolCalls == nil || *req.ParallelToolCalls}
	for i, t := range req.Tools {
		if t.Type != "function" {
			return nil, badRequest("tools", "tools[%d].type must be \"function\", got %q", i, t.Type)
		}
		if !toolName.MatchString(t.Function.Name) {
			return nil, badRequest("tools", "tools[%d].function.name must be 1-64 letters, digits, _ or -, got %q", i, t.Function.Name)
		}
		if present(t.Function.Parameters) && !bytes.HasPrefix(bytes.TrimSpace(t.Function.Parameters), []byte("{")) {
			return nil, badRequest("tools", "tools[%d].function.parameters must be a JSON Schema object", i)
		}
	}
	choice, aerr := parseToolChoice(req.ToolChoice, len(req.Tools) > 0)
	if aerr != nil {
		return nil, aerr
	}
	switch {
	case choice == toolsNone:
	case len(req.Tools) == 0:
		return nil, badRequest("tool_choice", "tool_choice %q needs tools", choice)
	case choice == toolsAuto:
		p.mode, p.parser = toolsAuto, autoParser
	case choice == toolsRequired:
		p.mode = toolsRequired
	default:
		if p.find(choice) == nil {
			return nil, badRequest("tool_choice", "tool_choice names the function %q, which is not in tools", choice)
		}
		p.mode, p.name = toolsNamed, choice
	}
	return p, nil
}

// parseToolChoice returns none, auto, required, or a function's name.
// Absent, it is auto when there are tools (OpenAI's default), else none.
func parseToolChoice(raw json.RawMessage, haveTools bool) (string, *apiError) {
	if !present(raw) {
		if haveTools {
			return toolsAuto, nil
		}
		return toolsNone, nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		switch s {
		case toolsNone, toolsAuto, toolsRequired:
			return s, nil
		}
		return "", badRequest("tool_choice", "tool_choice must be none, auto, required or {\"type\": \"function\", \"function\": {\"name\": …}}, got %q", s)
	}
	var named struct {
		Type     string `json:"type"`
		Function struct {
			Name string `json:"name"`
		} `json:"function"`
	}
	if err := json.Unmarshal(raw, &named); err != nil || named.Type != "function" || named.Function.Name == "" {
		return "", badRequest("tool_choice", "tool_choice must be none, auto, required or {\"type\": \"function\", \"function\": {\"name\": …}}")
	}
	return named.Function.Name, nil
}

func (p *toolPlan) find(name string) *toolDef {
	for i := range p.tools {
		if p.tools[i].Function.Name == name {
			return &p.tools[i]
		}
	}
	return nil
}

// params is a tool's parameters schema (any object when it has none).
func params(t *toolDef) json.RawMessage {
	if present(t.Function.Parameters) {
		return t.Function.Parameters
	}
	return json.RawMessage(`{"type": "object"}`)
}

// grammar is the constraint of required and named tool choice (nil for
// none and auto).
func (p *toolPlan) grammar(gc *grammarCache) (*grammar.Grammar, *apiError) {
	var schema []byte
	switch p.mode {
	case toolsNamed:
		schema = params(p.find(p.name))
	case toolsRequired:
		var anyOf []json.RawMessage
		for i := range p.tools {
			name, _ := json.Marshal(p.tools[i].Function.Name)
			// Each tool's $refs point into its own parameters, which now sit at items.anyOf[i].
			schema, err := rebaseRefs(params(&p.tools[i]), fmt.Sprintf("#/items/anyOf/%d/properties/parameters", i))
			if err != nil {
				return nil, badRequest("tools", "tools[%d].function.parameters: %v", i, err)
			}
			anyOf = append(anyOf, json.RawMessage(fmt.Sprintf(
				`{"type": "object", "properties": {"name": {"const": %s}, "parameters": %s}, "required": ["name", "parameters"], "additionalProperties": false}`,
				name, schema)))
		}
		arr := map[string]any{"type": "array", "minItems": 1, "items": map[string]any{"anyOf": anyOf}}
		if !p.parallel {
			arr["maxItems"] = 1
		}
		schema, _ = json.Marshal(arr)
	default:
		return nil, nil
	}
	// Tool arguments read an absent additionalProperties as false (XGrammar's strict mode,
	// vLLM's guidance:disable-additional-properties): a model must not invent argument keys
	// the function never declared, and the sampled call stays valid under the schema.
	g, err := gc.get(fmt.Sprintf("tools:%s", schema), func() (*grammar.Grammar, error) {
		return grammar.FromJSONSchemaOptions(schema, grammar.SchemaOptions{NoAdditionalProperties: true})
	})
	if err != nil {
		return nil, badRequest("tools", "the tools' parameters schemas: %v", err)
	}
	return g, nil
}

// templateTools is the tools variable of the chat template: the tools as
// the client sent them.
func (p *toolPlan) templateTools() any {
	if len(p.tools) == 0 {
		return nil
	}
	b, _ := json.Marshal(p.tools)
	v, _ := tokenizer.DecodeJSON(b) // key order kept, as Hugging Face renders request JSON
	return v
}
