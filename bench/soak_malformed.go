package bench

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
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
// well-formed base for endpoint ep) and whether a server may accept it.
type malformedKind struct {
	name string
	// on lists the endpoints the kind applies to; nil means completions
	// and chat, all every endpoint.
	on        []string
	all       bool
	mayAccept bool
	build     func(base map[string]any, ep string, r *rand.Rand) []byte
}

// fits reports whether the kind applies to endpoint ep.
func (k malformedKind) fits(ep string) bool {
	switch {
	case k.all:
		return true
	case k.on == nil:
		return isOpenAI(ep)
	}
	return slices.Contains(k.on, ep)
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

// malformedKinds are the defects a soak sends. All but the ones marked
// mayAccept must get a 4xx.
var malformedKinds = []malformedKind{
	{name: "truncated-json", all: true, build: func(base map[string]any, _ string, r *rand.Rand) []byte {
		b := jsonWith(base)
		return b[:1+r.IntN(len(b)-1)]
	}},
	{name: "not-json", all: true, build: func(map[string]any, string, *rand.Rand) []byte { return []byte("hello, server") }},
	{name: "empty-body", all: true, build: func(map[string]any, string, *rand.Rand) []byte { return nil }},
	{name: "json-array", all: true, build: func(map[string]any, string, *rand.Rand) []byte { return []byte("[]") }},
	{name: "wrong-type-prompt", all: true, build: func(base map[string]any, ep string, _ *rand.Rand) []byte {
		return jsonWith(base, promptField(ep), 42)
	}},
	{name: "null-prompt", on: []string{CompletionsPath, ChatPath, ResponsesPath, MessagesPath, EmbeddingsPath}, build: func(base map[string]any, ep string, _ *rand.Rand) []byte {
		return []byte(strings.Replace(string(jsonWith(base, promptField(ep), "@")), `"@"`, "null", 1))
	}},
	{name: "wrong-type-max-tokens", build: func(base map[string]any, _ string, _ *rand.Rand) []byte {
		return jsonWith(base, "max_tokens", "ten")
	}},
	{name: "wrong-type-n", build: func(base map[string]any, _ string, _ *rand.Rand) []byte { return jsonWith(base, "n", "2") }},
	{name: "wrong-type-stop", build: func(base map[string]any, _ string, _ *rand.Rand) []byte { return jsonWith(base, "stop", 5) }},
	{name: "unknown-field", all: true, mayAccept: true, build: func(base map[string]any, _ string, _ *rand.Rand) []byte {
		return jsonWith(base, "frobnicate", map[string]any{"level": 11})
	}},
	{name: "empty-prompt", on: []string{CompletionsPath}, build: func(base map[string]any, _ string, _ *rand.Rand) []byte {
		return jsonWith(base, "prompt", "")
	}},
	{name: "empty-prompt-list", on: []string{CompletionsPath}, build: func(base map[string]any, _ string, _ *rand.Rand) []byte {
		return jsonWith(base, "prompt", []string{})
	}},
	{name: "empty-messages", on: []string{ChatPath}, build: func(base map[string]any, _ string, _ *rand.Rand) []byte {
		return jsonWith(base, "messages", []string{})
	}},
	{name: "bad-role", on: []string{ChatPath}, build: func(base map[string]any, _ string, _ *rand.Rand) []byte {
		return jsonWith(base, "messages", []map[string]string{{"role": "wizard", "content": "hi"}})
	}},
	{name: "token-id-out-of-vocab", on: []string{CompletionsPath}, build: func(base map[string]any, _ string, _ *rand.Rand) []byte {
		return jsonWith(base, "prompt", []int64{1, 1 << 30})
	}},
	{name: "negative-token-id", on: []string{CompletionsPath}, build: func(base map[string]any, _ string, _ *rand.Rand) []byte {
		return jsonWith(base, "prompt", []int64{1, -5})
	}},
	{name: "huge-max-tokens", build: func(base map[string]any, _ string, _ *rand.Rand) []byte {
		return []byte(strings.Replace(string(jsonWith(base, "max_tokens", "@")), `"@"`, "9223372036854775807", 1))
	}},
	{name: "zero-max-tokens", build: func(base map[string]any, _ string, _ *rand.Rand) []byte { return jsonWith(base, "max_tokens", 0) }},
	{name: "negative-n", build: func(base map[string]any, _ string, _ *rand.Rand) []byte { return jsonWith(base, "n", -1) }},
	{name: "huge-n", build: func(base map[string]any, _ string, _ *rand.Rand) []byte { return jsonWith(base, "n", 1<<20) }},
	{name: "best_of-below-n", build: func(base map[string]any, _ string, _ *rand.Rand) []byte {
		return jsonWith(base, "n", 3, "best_of", 2)
	}},
	{name: "stream-best_of", build: func(base map[string]any, _ string, _ *rand.Rand) []byte {
		return jsonWith(base, "n", 1, "best_of", 3, "stream", true)
	}},
	{name: "beam-with-temperature", build: func(base map[string]any, _ string, _ *rand.Rand) []byte {
		return jsonWith(base, "use_beam_search", true, "best_of", 2, "temperature", 0.9)
	}},
	{name: "negative-temperature", build: func(base map[string]any, _ string, _ *rand.Rand) []byte {
		return jsonWith(base, "temperature", -1)
	}},
	{name: "top-p-above-1", build: func(base map[string]any, _ string, _ *rand.Rand) []byte { return jsonWith(base, "top_p", 2) }},
	{name: "huge-logprobs", build: func(base map[string]any, ep string, _ *rand.Rand) []byte {
		if ep == ChatPath {
			return jsonWith(base, "logprobs", true, "top_logprobs", 1000)
		}
		return jsonWith(base, "logprobs", 1000)
	}},
	{name: "empty-stop-string", build: func(base map[string]any, _ string, _ *rand.Rand) []byte {
		return jsonWith(base, "stop", []string{""})
	}},
	{name: "content-length-stall", all: true}, // raw: announces 100 bytes, sends 1, stalls
	{name: "content-length-huge", all: true},  // raw: announces 1 TiB
}

// allMalformedKinds are malformedKinds then protocolMalformedKinds.
var allMalformedKinds = append(slices.Clip(malformedKinds), protocolMalformedKinds...)

// planMalformed draws a malformed request: an endpoint of c, a kind that
// fits it, built from a well-formed base body.
func planMalformed(c PlanConfig, r *rand.Rand, i int) soakRequest {
	endpoint := c.Endpoints[r.IntN(len(c.Endpoints))]
	var fits []malformedKind
	for _, k := range allMalformedKinds {
		if k.fits(endpoint) {
			fits = append(fits, k)
		}
	}
	k := fits[r.IntN(len(fits))]
	base := protocolBase(c, r, endpoint)
	req := soakRequest{Index: i, Endpoint: endpoint, Malformed: k.name, MayAccept: k.mayAccept, Choices: 1,
		Shape: fmt.Sprintf("malformed %s %s", strings.TrimPrefix(strings.TrimPrefix(endpoint, "/v1/"), "/"), k.name)}
	switch k.name {
	case "content-length-stall":
		req.Raw = &rawRequest{ContentLength: 100, Body: []byte("{")}
	case "content-length-huge":
		req.Raw = &rawRequest{ContentLength: 1 << 40, Body: []byte("{")}
	default:
		req.Body = k.build(base, endpoint, r)
	}
	return req
}
