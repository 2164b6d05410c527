package server

import (
	"bytes"
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"sync"
)

// A request field the server does not know is refused with a 400 naming
// it, never ignored: a client that asks for something pagoda does not do
// (tools on an old build, an OpenAI field it lacks) learns so at once.
// The known fields are the JSON names of the request struct, embedded
// structs included.

// unsupportedFields names fields of OpenAI's or vLLM's API that pagoda
// does not implement, with why, so the error says more than "unknown".
var unsupportedFields = map[string]string{
	"functions":                 "the deprecated functions API is not supported; use tools",
	"function_call":             "the deprecated functions API is not supported; use tool_choice",
	"modalities":                "only text output is supported",
	"audio":                     "audio output is not supported",
	"prediction":                "predicted outputs are not supported",
	"store":                     "stored completions are not supported",
	"metadata":                  "stored completions are not supported",
	"service_tier":              "service tiers are not supported",
	"reasoning_effort":          "the qwen3 and deepseek_r1 reasoning parsers have no effort levels; use chat_template_kwargs (e.g. enable_thinking)",
	"web_search_options":        "web search is not supported",
	"truncate_prompt_tokens":    "prompt truncation is not supported; send a shorter prompt",
	"guided_whitespace_pattern": "a custom whitespace pattern is not supported",
	"logits_processors":         "custom logits processors are not supported",
	"bad_words":                 "bad_words is not supported; use logit_bias",
	"allowed_token_ids":         "allowed_token_ids is not supported; use logit_bias or guided_choice",
}

// neutralFields are fields that routers in front of vLLM-style servers
// (vllm-router, sglang-router) add to every request with their default
// value, which asks for nothing pagoda would do differently: accepted with
// exactly that value, refused (as unsupported) with any other.
var neutralFields = map[string]string{
	"no_stop_trim":         "false",
	"return_hidden_states": "false",
	"separate_reasoning":   "true",
	"stream_reasoning":     "true",
	"include_reasoning":    "true",
}

var knownFields sync.Map // reflect.Type → map[string]reflect.Type

// fieldTypes returns the JSON field names of struct type t (embedded
// structs included) with their types.
func fieldTypes(t reflect.Type) map[string]reflect.Type {
	if v, ok := knownFields.Load(t); ok {
		return v.(map[string]reflect.Type)
	}
	fields := map[string]reflect.Type{}
	var walk func(reflect.Type)
	walk = func(t reflect.Type) {
		for f := range t.Fields() {
			tag := f.Tag.Get("json")
			if f.Anonymous && tag == "" {
				walk(f.Type)
				continue
			}
			name, _, _ := strings.Cut(tag, ",")
			if name == "-" || !f.IsExported() {
				continue
			}
			if name == "" {
				name = f.Name
			}
			fields[name] = f.Type
		}
	}
	walk(t)
	knownFields.Store(t, fields)
	return fields
}

// checkFields refuses a JSON object body with a field that v's struct type
// does not have (400 naming the field), at the top level and in nested
// objects that decode into structs (response_format.json_schema,
// structured_outputs, stream_options; not the items of lists such as
// messages, whose extra keys clients echo back from earlier responses).
// Non-objects are left to json.Unmarshal's own errors.
func checkFields(body []byte, v any) *apiError {
	return checkObject(body, reflect.TypeOf(v), "")
}

func checkObject(body []byte, t reflect.Type, prefix string) *apiError {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct || !bytes.HasPrefix(bytes.TrimSpace(body), []byte("{")) {
		return nil
	}
	var fields map[string]json.RawMessage
	if json.Unmarshal(body, &fields) != nil {
		return nil
	}
	known := fieldTypes(t)
	var bad []string
	for k, v := range fields {
		if ft, ok := known[k]; ok {
			if aerr := checkObject(v, ft, prefix+k+"."); aerr != nil {
				return aerr
			}
			continue
		}
		if neutral, ok := neutralFields[k]; ok && prefix == "" && string(bytes.TrimSpace(v)) == neutral {
			continue
		}
		bad = append(bad, k)
	}
	if len(bad) == 0 {
		return nil
	}
	slices.Sort(bad)
	name := prefix + bad[0]
	if neutral, ok := neutralFields[name]; ok {
		return badRequest(name, "%s is not supported: only its default value %s is accepted", name, neutral)
	}
	if why, ok := unsupportedFields[name]; ok {
		return badRequest(name, "%s is not supported: %s", name, why)
	}
	return badRequest(name, "unknown field %q (this server does not implement it)", name)
}
