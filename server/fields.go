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
//
// fieldPolicies is the one table of the fields of OpenAI's, vLLM's and the
// routers' APIs that the request structs do not hold. A field is either
// accepted and ignored, because no value it may take here changes the
// output (request bookkeeping, caching and routing hints, a default the
// server has anyway), or refused with why. The invariant: a field that is
// accepted without being implemented cannot change a token of the answer.
// Accepted fields are logged at debug level (decodeJSON).
var fieldPolicies = map[string]fieldPolicy{
	// OpenAI's bookkeeping and hints: they never reach the model.
	"metadata":               {accept: anyValue, why: "request metadata (for stored completions)"},
	"store":                  {accept: isJSON("false"), why: "only false is accepted: stored completions are not implemented"},
	"service_tier":           {accept: anyValue, why: "a processing tier of OpenAI's"},
	"prompt_cache_key":       {accept: anyValue, why: "a prompt-cache routing key (pagoda's prefix cache needs none)"},
	"prompt_cache_retention": {accept: anyValue, why: "prompt-cache retention (pagoda's prefix cache evicts by LRU)"},
	"prompt_cache_options":   {accept: anyValue, why: "prompt-cache options (pagoda's prefix cache is automatic)"},
	"safety_identifier":      {accept: anyValue, why: "an end-user identifier for abuse monitoring"},
	"modalities":             {accept: isJSON(`["text"]`), why: "only [\"text\"] is accepted: audio output is not implemented"},
	// What routers in front of vLLM-style servers (vllm-router,
	// sglang-router) add to every request with their default value.
	"no_stop_trim":         {accept: isJSON("false"), why: "only its default value false is accepted"},
	"return_hidden_states": {accept: isJSON("false"), why: "only its default value false is accepted"},
	"separate_reasoning":   {accept: isJSON("true"), why: "only its default value true is accepted"},
	"stream_reasoning":     {accept: isJSON("true"), why: "only its default value true is accepted"},
	"include_reasoning":    {accept: isJSON("true"), why: "only its default value true is accepted"},
	// Refused: each would change the output and is not implemented.
	"functions":                 {why: "the deprecated functions API is not supported; use tools"},
	"function_call":             {why: "the deprecated functions API is not supported; use tool_choice"},
	"audio":                     {why: "audio output is not supported"},
	"prediction":                {why: "predicted outputs are not supported"},
	"verbosity":                 {why: "pagoda cannot make answers shorter or longer on request; leave it out (or use max_tokens)"},
	"reasoning_effort":          {why: "reasoning_effort applies to chat completions, where it goes to the chat template"},
	"web_search_options":        {why: "web search is not supported"},
	"truncate_prompt_tokens":    {why: "prompt truncation is not supported; send a shorter prompt"},
	"guided_whitespace_pattern": {why: "a custom whitespace pattern is not supported"},
	"logits_processors":         {why: "custom logits processors are not supported"},
	"bad_words":                 {why: "bad_words is not supported; use logit_bias"},
	"allowed_token_ids":         {why: "allowed_token_ids is not supported; use logit_bias or guided_choice"},
}

// fieldPolicy is what happens to one field of fieldPolicies: accepted and
// ignored when accept(value) holds (accept nil: never), else a 400 saying
// why (which, for a field accepted with any value, says what it is).
type fieldPolicy struct {
	accept func(value []byte) bool
	why    string
}

func anyValue([]byte) bool { return true }

// isJSON accepts exactly the JSON value want (whitespace aside).
func isJSON(want string) func([]byte) bool {
	return func(v []byte) bool {
		var a, b bytes.Buffer
		return json.Compact(&a, v) == nil && json.Compact(&b, []byte(want)) == nil && a.String() == b.String()
	}
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
// Top-level fields that fieldPolicies accepts are returned, sorted, as
// ignored. Non-objects are left to json.Unmarshal's own errors.
func checkFields(body []byte, v any) (ignored []string, aerr *apiError) {
	return checkObject(body, reflect.TypeOf(v), "")
}

func checkObject(body []byte, t reflect.Type, prefix string) ([]string, *apiError) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct || !bytes.HasPrefix(bytes.TrimSpace(body), []byte("{")) {
		return nil, nil
	}
	var fields map[string]json.RawMessage
	if json.Unmarshal(body, &fields) != nil {
		return nil, nil
	}
	known := fieldTypes(t)
	var bad, ignored []string
	for k, v := range fields {
		if ft, ok := known[k]; ok {
			if _, aerr := checkObject(v, ft, prefix+k+"."); aerr != nil {
				return nil, aerr
			}
			continue
		}
		if p, ok := fieldPolicies[k]; ok && prefix == "" && p.accept != nil && p.accept(v) {
			ignored = append(ignored, k)
			continue
		}
		bad = append(bad, k)
	}
	if len(bad) == 0 {
		slices.Sort(ignored)
		return ignored, nil
	}
	slices.Sort(bad)
	name := prefix + bad[0]
	if p, ok := fieldPolicies[name]; ok {
		return nil, badRequest(name, "%s is not supported: %s", name, p.why)
	}
	return nil, badRequest(name, "unknown field %q (this server does not implement it)", name)
}
