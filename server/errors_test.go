package server

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"pagoda/engine"
)

// checkError checks an OpenAI-shaped error response.
func checkError(t *testing.T, code int, body []byte, wantCode int, wantParam string, wantIn ...string) {
	t.Helper()
	var e errorBody
	if err := json.Unmarshal(body, &e); err != nil {
		t.Fatalf("status %d, body is not an OpenAI error: %s", code, body)
	}
	if code != wantCode {
		t.Fatalf("status %d, want %d: %s", code, wantCode, body)
	}
	if e.Error.Message == "" || e.Error.Type == "" {
		t.Fatalf("error without message or type: %s", body)
	}
	if wantParam != "" && (e.Error.Param == nil || *e.Error.Param != wantParam) {
		t.Fatalf("param %v, want %q: %s", e.Error.Param, wantParam, body)
	}
	for _, s := range wantIn {
		if !strings.Contains(e.Error.Message, s) {
			t.Fatalf("message %q does not mention %q", e.Error.Message, s)
		}
	}
}

// Invalid requests get 400 naming the field and its range; the prompt
// length check states both numbers.
func TestBadRequests(t *testing.T) {
	ts := newTestServer(t, nil, Options{})
	for _, tc := range []struct {
		name, path string
		body       any
		param      string
		wantIn     []string
	}{
		{"temperature", "/v1/completions", map[string]any{"prompt": "a", "temperature": -1}, "temperature", []string{"temperature", "-1"}},
		{"top_p", "/v1/completions", map[string]any{"prompt": "a", "top_p": 1.5}, "top_p", []string{"(0, 1]"}},
		{"n", "/v1/chat/completions", map[string]any{"messages": chatMessages, "n": 0}, "n", []string{"[1, 64]"}},
		{"max_tokens", "/v1/completions", map[string]any{"prompt": "a", "max_tokens": 0}, "max_tokens", []string{"≥ 1"}},
		{"too_long", "/v1/completions", map[string]any{"prompt": "a b c", "max_tokens": 600}, "max_tokens", []string{"600", "512"}},
		{"too_long_chat", "/v1/chat/completions", map[string]any{"messages": chatMessages, "max_tokens": 510}, "max_tokens", []string{"510", "512"}},
		{"unknown_model", "/v1/completions", map[string]any{"model": "gpt-4", "prompt": "a"}, "model", []string{"gpt-4", "stories260K"}},
		{"bad_json", "/v1/completions", `{"prompt": `, "", []string{"JSON"}},
		{"no_prompt", "/v1/completions", map[string]any{"max_tokens": 3}, "prompt", nil},
		{"empty_prompt_list", "/v1/completions", map[string]any{"prompt": []string{}}, "prompt", nil},
		{"token_out_of_range", "/v1/completions", map[string]any{"prompt": []int{1, 99999}}, "prompt", []string{"99999"}},
		{"logit_bias_key", "/v1/completions", map[string]any{"prompt": "a", "logit_bias": map[string]float64{"x": 1}}, "logit_bias", nil},
		{"logit_bias_value", "/v1/completions", map[string]any{"prompt": "a", "logit_bias": map[string]float64{"5": 1000}}, "logit_bias", []string{"logit_bias[5]"}},
		{"logprobs", "/v1/completions", map[string]any{"prompt": "a", "logprobs": 50}, "logprobs", []string{"[0, 20]"}},
		{"prompt_logprobs", "/v1/completions", map[string]any{"prompt": "a", "prompt_logprobs": 21}, "prompt_logprobs", []string{"[0, 20]", "21"}},
		{"prompt_logprobs_stream", "/v1/chat/completions", map[string]any{"messages": chatMessages, "prompt_logprobs": 1, "stream": true}, "prompt_logprobs", []string{"stream"}},
		{"top_logprobs_alone", "/v1/chat/completions", map[string]any{"messages": chatMessages, "top_logprobs": 2}, "top_logprobs", nil},
		{"stream_best_of", "/v1/completions", map[string]any{"prompt": "a", "best_of": 3, "stream": true}, "stream", nil},
		{"no_messages", "/v1/chat/completions", map[string]any{"messages": []any{}}, "messages", nil},
		{"bad_role", "/v1/chat/completions", map[string]any{"messages": []map[string]any{{"role": "robot", "content": "x"}}}, "messages", []string{"robot"}},
		{"image_part", "/v1/chat/completions", map[string]any{"messages": []map[string]any{{"role": "user",
			"content": []map[string]any{{"type": "image_url"}}}}}, "messages", []string{"image_url"}},
		{"response_format", "/v1/chat/completions", map[string]any{"messages": chatMessages,
			"response_format": map[string]string{"type": "xml"}}, "response_format", nil},
		{"beam_temperature", "/v1/completions", map[string]any{"prompt": "a", "use_beam_search": true, "best_of": 2, "temperature": 1}, "temperature", nil},
		{"detokenize_range", "/detokenize", map[string]any{"tokens": []int{-1}}, "tokens", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, body := post(t, ts.url+tc.path, tc.body)
			checkError(t, code, body, http.StatusBadRequest, tc.param, tc.wantIn...)
		})
	}
	settle(t, ts)
}

// A field the server does not implement is a 400 naming it, never
// silently ignored (OpenAI's API answers "Unrecognized request argument"
// too); fields it knows of but does not implement say why.
func TestUnknownFieldsRefused(t *testing.T) {
	ts := newTestServer(t, nil, Options{})
	for _, tc := range []struct {
		path  string
		body  map[string]any
		param string
		want  string
	}{
		{"/v1/completions", map[string]any{"prompt": "a", "frobnicate": true}, "frobnicate", "unknown field"},
		{"/v1/completions", map[string]any{"prompt": "a", "store": true}, "store", "stored completions"},
		{"/v1/chat/completions", map[string]any{"messages": chatMessages, "functions": []any{}}, "functions", "use tools"},
		{"/tokenize", map[string]any{"prompt": "a", "extra": 1}, "extra", "unknown field"},
		{"/v1/completions", map[string]any{"prompt": "a", "return_hidden_states": true}, "return_hidden_states", "only its default value false"},
		{"/v1/completions", map[string]any{"prompt": "a", "structured_outputs": map[string]any{"structural_tag": "x"}},
			"structured_outputs.structural_tag", "unknown field"},
		{"/v1/chat/completions", map[string]any{"messages": chatMessages, "response_format": map[string]any{"type": "json_schema",
			"json_schema": map[string]any{"name": "x", "schema": map[string]any{}, "bogus": 1}}}, "response_format.json_schema.bogus", "unknown field"},
	} {
		code, body := post(t, ts.url+tc.path, tc.body)
		checkError(t, code, body, http.StatusBadRequest, tc.param, tc.want)
	}
	var resp completionResponse
	// What vllm-router and sglang-router add to every request, with the defaults that ask for nothing.
	postOK(t, ts.url+"/v1/completions", map[string]any{"prompt": "a", "max_tokens": 2, "user": "u1",
		"no_stop_trim": false, "return_hidden_states": false, "separate_reasoning": true, "stream_reasoning": true,
		"include_reasoning": true}, &resp)
	if len(resp.Choices) != 1 {
		t.Fatalf("%+v", resp)
	}
}

// Routing, size and method errors are JSON too.
func TestHTTPErrors(t *testing.T) {
	ts := newTestServer(t, nil, Options{MaxBodyBytes: 1 << 10})
	code, body := post(t, ts.url+"/v1/completions", `{"prompt": "`+strings.Repeat("a", 2000)+`"}`)
	checkError(t, code, body, http.StatusRequestEntityTooLarge, "")
	resp := do(t, context.Background(), "GET", ts.url+"/v1/completions", nil)
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Fatalf("GET /v1/completions: %d", resp.StatusCode)
	}
	code, body = post(t, ts.url+"/v2/nothing", "{}")
	checkError(t, code, body, http.StatusNotFound, "")
}

// With --api-key every endpoint but health, version and metrics needs the
// bearer key.
func TestAPIKey(t *testing.T) {
	ts := newTestServer(t, nil, Options{APIKey: "sekret"})
	body := map[string]any{"prompt": "a", "max_tokens": 1}
	for _, tc := range []struct {
		name   string
		header []string
		want   int
	}{
		{"missing", nil, http.StatusUnauthorized},
		{"wrong", []string{"Authorization", "Bearer nope"}, http.StatusUnauthorized},
		{"not_bearer", []string{"Authorization", "sekret"}, http.StatusUnauthorized},
		{"right", []string{"Authorization", "Bearer sekret"}, http.StatusOK},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, b := post(t, ts.url+"/v1/completions", body, tc.header...)
			if code != tc.want {
				t.Fatalf("status %d, want %d: %s", code, tc.want, b)
			}
			if code == http.StatusUnauthorized {
				checkError(t, code, b, code, "", "API key")
			}
		})
	}
	for _, path := range []string{"/health", "/version", "/metrics"} {
		resp := do(t, context.Background(), "GET", ts.url+path, nil)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("%s without a key: %d", path, resp.StatusCode)
		}
	}
	resp := do(t, context.Background(), "GET", ts.url+"/v1/models", nil)
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("/v1/models without a key: %d", resp.StatusCode)
	}
}

// Before SetEngine the server answers 503 with Retry-After.
func TestNotReady(t *testing.T) {
	s := New(Options{})
	srv := newPlainServer(t, s)
	resp := do(t, context.Background(), "GET", srv+"/health", nil)
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("/health while loading: %d, Retry-After %q", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	code, body := post(t, srv+"/v1/completions", map[string]any{"prompt": "a"})
	checkError(t, code, body, http.StatusServiceUnavailable, "", "loading")
}

// More waiting sequences than --max-queue: 503 with Retry-After.
func TestQueueLimit(t *testing.T) {
	ts := newTestServer(t, func(c *engine.Config) { c.MaxNumSeqs = 1 }, Options{MaxQueue: 1})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	long := map[string]any{"prompt": onceUpon, "max_tokens": 480, "ignore_eos": true, "stream": true}
	for i := range 2 { // one runs, one waits
		resp := do(t, ctx, "POST", ts.url+"/v1/completions", long)
		defer resp.Body.Close()
		if i == 0 {
			waitFor(t, 10*time.Second, "a running request", func() bool { return ts.e.QueuedSeqs() == 0 })
		}
	}
	waitFor(t, 10*time.Second, "a waiting request", func() bool { return ts.e.Stats().Waiting >= 1 })
	resp := do(t, context.Background(), "POST", ts.url+"/v1/completions", map[string]any{"prompt": "a"})
	defer resp.Body.Close()
	var e errorBody
	json.NewDecoder(resp.Body).Decode(&e)
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" ||
		!strings.Contains(e.Error.Message, "--max-queue") {
		t.Fatalf("over the queue limit: %d, Retry-After %q, %+v", resp.StatusCode, resp.Header.Get("Retry-After"), e)
	}
	cancel()
	if st := settle(t, ts); st.GenerationTokens >= 480 {
		t.Fatalf("the cancelled requests ran to the end: %+v", st)
	}
}
