package server

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log"
	"net/http"
	"slices"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"

	"pagoda/engine"
)

// Several served names: all answer, /v1/models lists them all (as vLLM),
// /v1/models/{id} returns one card, responses carry the first name.
func TestServedModelNames(t *testing.T) {
	ts := newTestServer(t, nil, Options{ServedModelNames: []string{"first", "org/second"}})
	var list modelList
	getJSON(t, ts.url+"/v1/models", &list)
	if len(list.Data) != 2 || list.Data[0].ID != "first" || list.Data[1].ID != "org/second" {
		t.Fatalf("models %+v", list)
	}
	var card modelCard
	getJSON(t, ts.url+"/v1/models/org/second", &card)
	if card.ID != "org/second" || card.Object != "model" || card.MaxModelLen != 512 {
		t.Errorf("card %+v", card)
	}
	resp := do(t, context.Background(), "GET", ts.url+"/v1/models/nope", nil)
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var e struct {
		Error struct{ Code, Type, Message string }
	}
	if err := json.Unmarshal(b, &e); err != nil || resp.StatusCode != http.StatusNotFound || e.Error.Code != "model_not_found" ||
		e.Error.Type != "invalid_request_error" {
		t.Errorf("unknown model: %d %s", resp.StatusCode, b)
	}
	for _, name := range []string{"first", "org/second", ""} {
		var c completionResponse
		postOK(t, ts.url+"/v1/completions", map[string]any{"model": name, "prompt": onceUpon, "max_tokens": 2}, &c)
		if c.Model != "first" {
			t.Errorf("model %q answered as %q", name, c.Model)
		}
	}
	if code, b := post(t, ts.url+"/v1/completions", map[string]any{"model": "third", "prompt": onceUpon}); code != 400 ||
		!strings.Contains(string(b), "`first`, `org/second`") {
		t.Errorf("unknown model: %d %s", code, b)
	}
}

// X-Request-Id is echoed and names the request (cmpl-<id>); without one
// the generated id is echoed.
func TestRequestID(t *testing.T) {
	var logs bytes.Buffer
	// log.Logger serializes its writes: handlers may log at once.
	ts := newTestServer(t, nil, Options{LogRequests: true, Logger: log.New(&logs, "", 0)})
	body := map[string]any{"prompt": onceUpon, "max_tokens": 2}
	resp := do(t, context.Background(), "POST", ts.url+"/v1/completions", body, "X-Request-Id", "client-42")
	var c completionResponse
	json.NewDecoder(resp.Body).Decode(&c)
	resp.Body.Close()
	if got := resp.Header.Get("X-Request-Id"); got != "client-42" || c.ID != "cmpl-client-42" {
		t.Errorf("echoed %q, response id %q", got, c.ID)
	}
	resp = do(t, context.Background(), "POST", ts.url+"/v1/chat/completions",
		map[string]any{"messages": []map[string]string{{"role": "user", "content": "hi"}}, "max_tokens": 2})
	var ch chatResponse
	json.NewDecoder(resp.Body).Decode(&ch)
	resp.Body.Close()
	if got := resp.Header.Get("X-Request-Id"); len(got) != 24 || ch.ID != "chatcmpl-"+got {
		t.Errorf("generated id %q, response id %q", got, ch.ID)
	}
	resp = do(t, context.Background(), "GET", ts.url+"/health", nil, "X-Request-Id", "probe")
	resp.Body.Close()
	if resp.Header.Get("X-Request-Id") != "probe" {
		t.Errorf("/health did not echo X-Request-Id")
	}
	resp = do(t, context.Background(), "GET", ts.url+"/v1/models", nil, "X-Request-Id", strings.Repeat("x", 300))
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Errorf("a 300-byte X-Request-Id: %d", resp.StatusCode)
	}
	settle(t, ts)
	if !strings.Contains(logs.String(), "INFO Received request cmpl-client-42: prompt ") ||
		!strings.Contains(logs.String(), "max_tokens=2") {
		t.Errorf("request log:\n%s", logs.String())
	}
}

// A reused id gets a suffix while the first request lives, and is free
// again once released.
func TestClaimID(t *testing.T) {
	var b backend
	a := b.claimID("x")
	dup := b.claimID("x")
	if a != "x" || !strings.HasPrefix(dup, "x-") || len(dup) != 10 {
		t.Fatalf("claimed %q then %q", a, dup)
	}
	b.releaseID("x")
	if again := b.claimID("x"); again != "x" {
		t.Errorf("after release: %q", again)
	}
}

// The six request metrics vLLM has besides the others, with vLLM's buckets,
// and the latency histograms carry the request id as an exemplar in the
// OpenMetrics exposition.
func TestRequestPhaseMetrics(t *testing.T) {
	ts := newTestServer(t, nil, Options{})
	resp := do(t, context.Background(), "POST", ts.url+"/v1/completions",
		map[string]any{"prompt": onceUpon, "max_tokens": 5, "n": 2, "ignore_eos": true}, "X-Request-Id", "ex-1")
	resp.Body.Close()
	byName := ts.metricFamilies(t)
	for name, want := range map[string][]float64{
		"vllm:request_prefill_time_seconds":   latencyBuckets,
		"vllm:request_decode_time_seconds":    latencyBuckets,
		"vllm:request_inference_time_seconds": latencyBuckets,
		"vllm:request_params_n":               {1, 2, 5, 10, 20},
		"vllm:request_params_max_tokens":      {1, 2, 5, 10, 20, 50, 100, 200, 500},
		"vllm:time_per_output_token_seconds": {0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0,
			2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0},
	} {
		f := byName[name]
		if f == nil || f.GetType() != dto.MetricType_HISTOGRAM {
			t.Errorf("%s missing or not a histogram", name)
			continue
		}
		h := f.GetMetric()[0].GetHistogram()
		var got []float64
		for _, b := range h.GetBucket() {
			got = append(got, b.GetUpperBound())
		}
		if !slices.Equal(got, want) {
			t.Errorf("%s buckets %v, want %v", name, got, want)
		}
		if name != "vllm:time_per_output_token_seconds" && h.GetSampleCount() != 1 {
			t.Errorf("%s count %d, want 1", name, h.GetSampleCount())
		}
	}
	if v := metricValue(t, ts, `vllm:request_params_n_sum{engine="0",model_name="stories260K"}`); v != 2 {
		t.Errorf("n sum %v", v)
	}
	req, _ := http.NewRequest("GET", ts.url+"/metrics", nil)
	req.Header.Set("Accept", "application/openmetrics-text; version=1.0.0")
	mresp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	expo, _ := io.ReadAll(mresp.Body)
	mresp.Body.Close()
	for _, fam := range []string{"vllm:e2e_request_latency_seconds", "vllm:request_prefill_time_seconds", "vllm:time_to_first_token_seconds"} {
		if !hasExemplar(string(expo), fam, `request_id="cmpl-ex-1"`) {
			t.Errorf("%s has no exemplar request_id=cmpl-ex-1", fam)
		}
	}
}

// hasExemplar reports whether a bucket line of family fam carries the
// exemplar label set.
func hasExemplar(expo, fam, labels string) bool {
	for _, line := range strings.Split(expo, "\n") {
		if strings.HasPrefix(line, fam+"_bucket{") && strings.Contains(line, " # {"+labels+"}") {
			return true
		}
	}
	return false
}

// An exemplar is cut to OpenMetrics' 128 runes and must be valid UTF-8.
func TestExemplarBound(t *testing.T) {
	ex := exemplar(strings.Repeat("é", 200))
	if n := len([]rune(ex["request_id"])) + len("request_id"); n != 128 {
		t.Errorf("exemplar of %d runes", n)
	}
	if exemplar("") != nil {
		t.Error("an empty id gives an exemplar")
	}
}

// --max-logprobs bounds logprobs, top_logprobs and prompt_logprobs.
func TestMaxLogprobs(t *testing.T) {
	two := 2
	ts := newTestServer(t, nil, Options{MaxLogprobs: &two})
	for _, tc := range []struct {
		path string
		body map[string]any
		code int
	}{
		{"/v1/completions", map[string]any{"prompt": onceUpon, "max_tokens": 1, "logprobs": 2}, 200},
		{"/v1/completions", map[string]any{"prompt": onceUpon, "max_tokens": 1, "logprobs": 3}, 400},
		{"/v1/completions", map[string]any{"prompt": onceUpon, "max_tokens": 1, "prompt_logprobs": 3}, 400},
		{"/v1/chat/completions", map[string]any{"messages": []map[string]string{{"role": "user", "content": "hi"}},
			"max_tokens": 1, "logprobs": true, "top_logprobs": 3}, 400},
	} {
		if code, b := post(t, ts.url+tc.path, tc.body); code != tc.code {
			t.Errorf("%v: %d %s, want %d", tc.body, code, b, tc.code)
		} else if code == 400 && !strings.Contains(string(b), "--max-logprobs") {
			t.Errorf("%v: %s does not name --max-logprobs", tc.body, b)
		}
	}
}

// With --seed, the k-th unseeded request samples as if it had sent the
// seed deriveSeed(seed, k): two servers started alike answer alike.
func TestServerSeed(t *testing.T) {
	seed := int64(7)
	body := map[string]any{"prompt": onceUpon, "max_tokens": 12, "temperature": 1.5}
	texts := func(opts Options, extra map[string]any) []string {
		ts := newTestServer(t, nil, opts)
		var out []string
		for range 3 {
			b := map[string]any{}
			for k, v := range body {
				b[k] = v
			}
			for k, v := range extra {
				b[k] = v
			}
			var c completionResponse
			postOK(t, ts.url+"/v1/completions", b, &c)
			out = append(out, c.Choices[0].Text)
		}
		return out
	}
	a := texts(Options{Seed: &seed}, nil)
	b := texts(Options{Seed: &seed}, nil)
	if !slices.Equal(a, b) {
		t.Errorf("same --seed, different outputs:\n%q\n%q", a, b)
	}
	if a[0] == a[1] && a[1] == a[2] {
		t.Errorf("three unseeded requests gave the same text %q", a[0])
	}
	explicit := texts(Options{}, map[string]any{"seed": deriveSeed(seed, 1)})
	if explicit[0] != a[0] {
		t.Errorf("first request %q, with seed deriveSeed(7, 1) %q", a[0], explicit[0])
	}
}

// --generation-config defaults apply where the request sets nothing, and
// its max_new_tokens caps max_tokens as vLLM does.
func TestGenerationDefaults(t *testing.T) {
	zero, three := 0.0, 3
	ts := newTestServer(t, nil, Options{Generation: GenerationDefaults{Temperature: &zero, MaxTokens: &three}})
	var c completionResponse
	postOK(t, ts.url+"/v1/completions", map[string]any{"prompt": onceUpon, "max_tokens": 10, "ignore_eos": true}, &c)
	if c.Usage.CompletionTokens != 3 || *c.Choices[0].FinishReason != "length" {
		t.Errorf("capped request: %d tokens, finish %q", c.Usage.CompletionTokens, *c.Choices[0].FinishReason)
	}
	ids := ts.e.Tokenizer().Encode(onceUpon, true, true)
	want := greedy(t, ts.e, ids, 3, func(p *engine.SamplingParams) { p.IgnoreEOS = true })
	if c.Choices[0].Text != want.Text {
		t.Errorf("default temperature 0: %q, greedy %q", c.Choices[0].Text, want.Text)
	}
	var ch chatResponse
	postOK(t, ts.url+"/v1/chat/completions", map[string]any{"messages": []map[string]string{{"role": "user", "content": "hi"}},
		"ignore_eos": true}, &ch)
	if ch.Usage.CompletionTokens != 3 {
		t.Errorf("chat without max_tokens: %d tokens, want the cap 3", ch.Usage.CompletionTokens)
	}
}
