package bench

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
)

// answerProtocol answers a request to another protocol's endpoint as a
// server of that protocol would, misbehaving as how says: fakeTruncate
// cuts a stream before its end, fakeNoFinish leaves out the stop reason
// (the end event of a Responses stream), fakeErrEvent sends a server
// error event, fakeChoices answers JSON that is not finished (one
// embedding too few).
func (f *soakServer) answerProtocol(w http.ResponseWriter, r *http.Request, req soakRequest, how string) {
	if !req.Stream {
		if !wait(r.Context(), f.delay) {
			return
		}
		var resp map[string]any
		bad := how == fakeChoices
		switch req.Endpoint {
		case ResponsesPath:
			resp = map[string]any{"object": "response", "status": map[bool]string{false: "completed", true: "in_progress"}[bad]}
		case MessagesPath:
			resp = map[string]any{"type": "message", "stop_reason": map[bool]any{false: "end_turn", true: nil}[bad]}
		case OllamaChatPath:
			resp = map[string]any{"done": !bad, "done_reason": "stop"}
		case EmbeddingsPath:
			n := req.Choices
			if bad {
				n--
			}
			data := make([]map[string]any, n)
			for i := range data {
				data[i] = map[string]any{"index": i, "embedding": []float64{0.6, 0.8}}
			}
			resp = map[string]any{"object": "list", "data": data}
		}
		json.NewEncoder(w).Encode(resp)
		return
	}
	rc := http.NewResponseController(w)
	send := func(event string, v any) bool {
		b, _ := json.Marshal(v)
		if req.Endpoint == OllamaChatPath {
			fmt.Fprintf(w, "%s\n", b)
		} else {
			fmt.Fprintf(w, "event: %s\ndata: %s\n\n", event, b)
		}
		return rc.Flush() == nil && wait(r.Context(), f.delay)
	}
	type ev = map[string]any
	var events []ev // each with "type" (the SSE event name; dropped for Ollama)
	switch req.Endpoint {
	case ResponsesPath:
		events = []ev{{"type": "response.created"}, {"type": "response.output_text.delta", "delta": "a"},
			{"type": "response.output_text.delta", "delta": "b"}, {"type": "response.output_text.delta", "delta": "c"},
			{"type": "response.output_text.done"}, {"type": "response.completed"}}
		if how == fakeNoFinish {
			events = events[:5]
		}
		if how == fakeErrEvent {
			events = append(events[:3], ev{"type": "error", "code": "server_error", "message": "boom"}, ev{"type": "response.failed"})
		}
	case MessagesPath:
		stop := any("end_turn")
		if how == fakeNoFinish {
			stop = nil
		}
		events = []ev{{"type": "message_start"}, {"type": "content_block_start"},
			{"type": "content_block_delta"}, {"type": "content_block_delta"}, {"type": "content_block_delta"},
			{"type": "content_block_stop"}, {"type": "message_delta", "delta": ev{"stop_reason": stop}}, {"type": "message_stop"}}
		if how == fakeErrEvent {
			events = append(events[:3], ev{"type": "error", "error": ev{"type": "api_error", "message": "boom"}})
		}
	case OllamaChatPath:
		reason := "stop"
		if how == fakeNoFinish {
			reason = ""
		}
		events = []ev{{"done": false}, {"done": false}, {"done": false}, {"done": true, "done_reason": reason}}
		if how == fakeErrEvent {
			events = append(events[:2], ev{"error": "boom"})
		}
	}
	w.Header().Set("Content-Type", map[bool]string{false: "text/event-stream", true: "application/x-ndjson"}[req.Endpoint == OllamaChatPath])
	for k, e := range events {
		name, _ := e["type"].(string)
		if req.Endpoint == OllamaChatPath {
			delete(e, "type")
		}
		if !send(name, e) || (how == fakeTruncate && k == 2) {
			return
		}
	}
}

func protocolPlanConfig() PlanConfig {
	c := testPlanConfig()
	c.Endpoints = []string{ResponsesPath, MessagesPath, OllamaChatPath, EmbeddingsPath}
	return c
}

// Requests to the other protocols say what the plan expects: their
// endpoint's fields, the stream flag (Ollama streams unless told not to),
// the number of embeddings inputs; every endpoint and shape occurs.
func TestPlanProtocols(t *testing.T) {
	c := protocolPlanConfig()
	c.MalformedRate = 0
	features := map[string]int{}
	for i := range 2000 {
		r := planRequest(c, i)
		var body struct {
			Model           string          `json:"model"`
			Input           json.RawMessage `json:"input"`
			Messages        []any           `json:"messages"`
			Stream          *bool           `json:"stream"`
			MaxTokens       int             `json:"max_tokens"`
			MaxOutputTokens int             `json:"max_output_tokens"`
			Options         struct {
				NumPredict int `json:"num_predict"`
			} `json:"options"`
		}
		if err := json.Unmarshal(r.Body, &body); err != nil || body.Model != "m" {
			t.Fatalf("request %d: %v: %s", i, err, r.Body)
		}
		stream := body.Stream != nil && *body.Stream
		limit := 0
		switch r.Endpoint {
		case ResponsesPath:
			limit = body.MaxOutputTokens
		case MessagesPath:
			limit = body.MaxTokens
		case OllamaChatPath:
			limit, stream = body.Options.NumPredict, body.Stream == nil || *body.Stream
		case EmbeddingsPath:
			var list []string
			n := 1
			if json.Unmarshal(body.Input, &list) == nil {
				n = len(list)
			}
			limit = 1
			if r.Choices != n || r.Stream {
				t.Fatalf("request %d: %d choices, stream %v for %s", i, r.Choices, r.Stream, r.Body)
			}
		default:
			t.Fatalf("request %d to %s", i, r.Endpoint)
		}
		switch {
		case stream != r.Stream:
			t.Fatalf("request %d: planned stream %v: %s", i, r.Stream, r.Body)
		case limit < 1 || limit > c.MaxTokens:
			t.Fatalf("request %d: token limit %d: %s", i, limit, r.Body)
		case (len(body.Messages) > 0) != (r.Endpoint == MessagesPath || r.Endpoint == OllamaChatPath):
			t.Fatalf("request %d: messages on %s: %s", i, r.Endpoint, r.Body)
		case r.Hangup == HangupMidStream && !r.Stream:
			t.Fatalf("request %d: mid-stream hang-up without a stream", i)
		}
		features[r.Endpoint]++
		for _, f := range strings.Fields(r.Shape) {
			features[f]++
		}
	}
	for _, f := range []string{ResponsesPath, MessagesPath, OllamaChatPath, EmbeddingsPath, "stream", "items",
		"instructions", "store", "system", "stop", "top_k", "token-ids", "batch=2", "base64"} {
		if features[f] == 0 {
			t.Errorf("no request with %s", f)
		}
	}
}

// Every malformed kind of the other protocols occurs, on the endpoints it
// fits, with the generic kinds.
func TestPlanProtocolsMalformed(t *testing.T) {
	c := protocolPlanConfig()
	c.MalformedRate, c.HangupRate = 1, 0
	seen := map[string]bool{}
	for i := range 5000 {
		r := planRequest(c, i)
		seen[r.Endpoint+" "+r.Malformed] = true
		if r.Raw == nil && r.Malformed != "truncated-json" && r.Malformed != "not-json" && r.Malformed != "empty-body" &&
			!json.Valid(r.Body) {
			t.Fatalf("request %d of kind %s is not JSON: %s", i, r.Malformed, r.Body)
		}
	}
	fits := map[string]bool{} // a name may be in both lists, for other endpoints
	for _, k := range allMalformedKinds {
		for _, ep := range c.Endpoints {
			fits[ep+" "+k.name] = fits[ep+" "+k.name] || k.fits(ep)
		}
	}
	for k, ok := range fits {
		if ok != seen[k] {
			t.Errorf("kind and endpoint %s: fits %v, seen %v", k, ok, seen[k])
		}
	}
}

// A soak of the other protocols against a server answering well passes.
func TestSoakProtocolsWellBehaved(t *testing.T) {
	cfg := testSoakConfig("", 400)
	cfg.PlanConfig = protocolPlanConfig()
	cfg.Endpoints = AllEndpoints
	cfg.MalformedRate = 0.1
	rep, _ := fakeSoak(t, cfg, func(soakRequest) string { return fakeOK }, nil)
	if len(rep.Failures) > 0 || rep.Lost > 0 || rep.Aborted == 0 || rep.Completed == 0 || rep.MalformedSent == 0 {
		t.Fatalf("report:\n%s", report(rep))
	}
}

// Each protocol's broken answers are lost: streams cut short or without
// their end, server error events (5xx too), unfinished JSON answers, one
// embedding too few; hang-ups mid-stream are aborts.
func TestSoakProtocolsMisbehaving(t *testing.T) {
	cfg := testSoakConfig("", 400)
	cfg.PlanConfig = protocolPlanConfig()
	cfg.HangupRate, cfg.MalformedRate = 0, 0
	// The fake server knows a request by its body, and embeddings requests
	// may repeat one: misbehave by the first request with the body.
	first := map[string]int{}
	for i := cfg.NumRequests - 1; i >= 0; i-- {
		first[string(planRequest(cfg.PlanConfig, i).Body)] = i
	}
	how := func(r soakRequest) string {
		return []string{fakeTruncate, fakeNoFinish, fakeErrEvent, fakeChoices, fakeOK}[first[string(r.Body)]%5]
	}
	var lost, fivexx int
	for i := range cfg.NumRequests {
		r := planRequest(cfg.PlanConfig, i)
		switch h := how(r); {
		case (h == fakeTruncate || h == fakeNoFinish) && r.Stream, h == fakeChoices && !r.Stream:
			lost++
		case h == fakeErrEvent && r.Stream && r.Endpoint != OllamaChatPath:
			lost++
			fivexx++
		}
	}
	rep, _ := fakeSoak(t, cfg, how, nil)
	if rep.Lost != lost || rep.ServerErrors != fivexx {
		t.Fatalf("lost %d, 5xx %d; want %d, %d\n%s", rep.Lost, rep.ServerErrors, lost, fivexx, report(rep))
	}
	text := report(rep)
	for _, want := range []string{"without response.completed", "without message_stop", `without a line with "done": true`,
		"message_stop without a message_delta stop_reason", "no done_reason", "stream error event: boom",
		"stream error line: boom", "status \"in_progress\"", "embeddings"} {
		if !strings.Contains(text, want) {
			t.Errorf("the report lacks %q:\n%s", want, text)
		}
	}

	cfg.HangupRate = 1
	rep, _ = fakeSoak(t, cfg, func(soakRequest) string { return fakeOK }, nil)
	if rep.Lost > 0 || rep.AbortedByPhase[phaseMidStream] == 0 {
		t.Fatalf("hang-ups:\n%s", report(rep))
	}
}
