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
	"reasoning_effort":          "reasoning models are not supported",
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

var knownFields sync.Map // reflect.Type → []string (sorted)

// fieldNames returns the JSON field names of struct type t, sorted.
func fieldNames(t reflect.Type) []string {
	if v, ok := knownFields.Load(t); ok {
		return v.([]string)
	}
	var names []string
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
			names = append(names, name)
		}
	}
	walk(t)
	slices.Sort(names)
	knownFields.Store(t, names)
	return names
}

// checkFields refuses a JSON object body with a field that v's struct type
// does not have (400 naming the field). Non-objects are left to
// json.Unmarshal's own errors.
func checkFields(body []byte, v any) *apiError {
	t := reflect.TypeOf(v)
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
	known := fieldNames(t)
	var bad []string
	for k, v := range fields {
		if _, ok := slices.BinarySearch(known, k); ok {
			continue
		}
		if neutral, ok := neutralFields[k]; ok && string(bytes.TrimSpace(v)) == neutral {
			continue
		}
		bad = append(bad, k)
	}
	if len(bad) == 0 {
		return nil
	}
	slices.Sort(bad)
	if neutral, ok := neutralFields[bad[0]]; ok {
		return badRequest(bad[0], "%s is not supported: only its default value %s is accepted", bad[0], neutral)
	}
	if why, ok := unsupportedFields[bad[0]]; ok {
		return badRequest(bad[0], "%s is not supported: %s", bad[0], why)
	}
	return badRequest(bad[0], "unknown field %q (this server does not implement it)", bad[0])
}
