package bench

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
)

// rawRequest is a malformed request sent over a plain connection, because
// net/http's client refuses to send it: a Content-Length that the body does
// not match. The client sends a head announcing ContentLength, then Body,
// then waits for a response until the soak's stall timeout and hangs up.
type rawRequest struct {
	ContentLength int64 // announced
	Body          []byte
}

// malformedKind builds one kind of malformed request: its body (from a
// well-formed base) and whether a server may accept it.
type malformedKind struct {
	name      string
	chatOnly  bool
	complOnly bool
	mayAccept bool
	build     func(base map[string]any, chat bool, r *rand.Rand) []byte
}

// jsonWith is base with the given fields set (nil deletes one), as JSON.
func jsonWith(base map[string]any, kv ...any) []byte {
	m := make(map[string]any, len(base)+len(kv)/2)
	for k, v := range base {
		m[k] = v
	}
	for i := 0; i+1 < len(kv); i += 2 {
		if kv[i+1] == nil {
			delete(m, kv[i].(string))
		} else {
			m[kv[i].(string)] = kv[i+1]
		}
	}
	b, _ := json.Marshal(m) // strings, numbers, lists and maps always marshal
	return b
}

// promptKey is the field holding the prompt on each endpoint.
func promptKey(chat bool) string {
	if chat {
		return "messages"
	}
	return "prompt"
}

// malformedKinds are the defects a soak sends. All but the ones marked
// mayAccept must get a 4xx.
var malformedKinds = []malformedKind{
	{name: "truncated-json", build: func(base map[string]any, _ bool, r *rand.Rand) []byte {
		b := jsonWith(base)
		return b[:1+r.IntN(len(b)-1)]
	}},
	{name: "not-json", build: func(map[string]any, bool, *rand.Rand) []byte { return []byte("hello, server") }},
	{name: "empty-body", build: func(map[string]any, bool, *rand.Rand) []byte { return nil }},
	{name: "json-array", build: func(map[string]any, bool, *rand.Rand) []byte { return []byte("[]") }},
	{name: "wrong-type-prompt", build: func(base map[string]any, chat bool, _ *rand.Rand) []byte {
		return jsonWith(base, promptKey(chat), 42)
	}},
	{name: "null-prompt", build: func(base map[string]any, chat bool, _ *rand.Rand) []byte {
		return []byte(strings.Replace(string(jsonWith(base, promptKey(chat), "@")), `"@"`, "null", 1))
	}},
	{name: "wrong-type-max-tokens", build: func(base map[string]any, _ bool, _ *rand.Rand) []byte {
		return jsonWith(base, "max_tokens", "ten")
	}},
	{name: "wrong-type-n", build: func(base map[string]any, _ bool, _ *rand.Rand) []byte { return jsonWith(base, "n", "2") }},
	{name: "wrong-type-stop", build: func(base map[string]any, _ bool, _ *rand.Rand) []byte { return jsonWith(base, "stop", 5) }},
	{name: "unknown-field", mayAccept: true, build: func(base map[string]any, _ bool, _ *rand.Rand) []byte {
		return jsonWith(base, "frobnicate", map[string]any{"level": 11})
	}},
	{name: "empty-prompt", complOnly: true, build: func(base map[string]any, _ bool, _ *rand.Rand) []byte {
		return jsonWith(base, "prompt", "")
	}},
	{name: "empty-prompt-list", complOnly: true, build: func(base map[string]any, _ bool, _ *rand.Rand) []byte {
		return jsonWith(base, "prompt", []string{})
	}},
	{name: "empty-messages", chatOnly: true, build: func(base map[string]any, _ bool, _ *rand.Rand) []byte {
		return jsonWith(base, "messages", []string{})
	}},
	{name: "bad-role", chatOnly: true, build: func(base map[string]any, _ bool, _ *rand.Rand) []byte {
		return jsonWith(base, "messages", []map[string]string{{"role": "wizard", "content": "hi"}})
	}},
	{name: "token-id-out-of-vocab", complOnly: true, build: func(base map[string]any, _ bool, _ *rand.Rand) []byte {
		return jsonWith(base, "prompt", []int64{1, 1 << 30})
	}},
	{name: "negative-token-id", complOnly: true, build: func(base map[string]any, _ bool, _ *rand.Rand) []byte {
		return jsonWith(base, "prompt", []int64{1, -5})
	}},
	{name: "huge-max-tokens", build: func(base map[string]any, _ bool, _ *rand.Rand) []byte {
		return []byte(strings.Replace(string(jsonWith(base, "max_tokens", "@")), `"@"`, "9223372036854775807", 1))
	}},
	{name: "zero-max-tokens", build: func(base map[string]any, _ bool, _ *rand.Rand) []byte { return jsonWith(base, "max_tokens", 0) }},
	{name: "negative-n", build: func(base map[string]any, _ bool, _ *rand.Rand) []byte { return jsonWith(base, "n", -1) }},
	{name: "huge-n", build: func(base map[string]any, _ bool, _ *rand.Rand) []byte { return jsonWith(base, "n", 1<<20) }},
	{name: "best_of-below-n", build: func(base map[string]any, _ bool, _ *rand.Rand) []byte {
		return jsonWith(base, "n", 3, "best_of", 2)
	}},
	{name: "stream-best_of", build: func(base map[string]any, _ bool, _ *rand.Rand) []byte {
		return jsonWith(base, "n", 1, "best_of", 3, "stream", true)
	}},
	{name: "beam-with-temperature", build: func(base map[string]any, _ bool, _ *rand.Rand) []byte {
		return jsonWith(base, "use_beam_search", true, "best_of", 2, "temperature", 0.9)
	}},
	{name: "negative-temperature", build: func(base map[string]any, _ bool, _ *rand.Rand) []byte {
		return jsonWith(base, "temperature", -1)
	}},
	{name: "top-p-above-1", build: func(base map[string]any, _ bool, _ *rand.Rand) []byte { return jsonWith(base, "top_p", 2) }},
	{name: "huge-logprobs", build: func(base map[string]any, chat bool, _ *rand.Rand) []byte {
		if chat {
			return jsonWith(base, "logprobs", true, "top_logprobs", 1000)
		}
		return jsonWith(base, "logprobs", 1000)
	}},
	{name: "empty-stop-string", build: func(base map[string]any, _ bool, _ *rand.Rand) []byte {
		return jsonWith(base, "stop", []string{""})
	}},
	{name: "content-length-stall"}, // raw: announces 100 bytes, sends 1, stalls
	{name: "content-length-huge"},  // raw: announces 1 TiB
}

// planMalformed draws a malformed request: a kind that fits an endpoint of
// c, built from a well-formed base body.
func planMalformed(c PlanConfig, r *rand.Rand, i int) soakRequest {
	chat := c.Endpoints[r.IntN(len(c.Endpoints))] == ChatPath
	var fits []malformedKind
	for _, k := range malformedKinds {
		if (chat && !k.complOnly) || (!chat && !k.chatOnly) {
			fits = append(fits, k)
		}
	}
	k := fits[r.IntN(len(fits))]
	base := map[string]any{"model": c.Model, "max_tokens": 1 + r.IntN(c.MaxTokens)}
	endpoint := CompletionsPath
	if chat {
		endpoint = ChatPath
		base["messages"] = chatMessages(r, c.MaxPromptWords)
	} else {
		base["prompt"] = promptText(r, c.MaxPromptWords)
	}
	req := soakRequest{Index: i, Endpoint: endpoint, Malformed: k.name, MayAccept: k.mayAccept, Choices: 1,
		Shape: fmt.Sprintf("malformed %s %s", strings.TrimPrefix(endpoint, "/v1/"), k.name)}
	switch k.name {
	case "content-length-stall":
		req.Raw = &rawRequest{ContentLength: 100, Body: []byte("{")}
	case "content-length-huge":
		req.Raw = &rawRequest{ContentLength: 1 << 40, Body: []byte("{")}
	default:
		req.Body = k.build(base, chat, r)
	}
	return req
}
