package server

import (
	"context"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
)

// Newer vLLM families dashboards read, after a known workload: per-request
// time per output token, the longest output, the prompt tokens served from
// the prefix cache and those computed, the waiting requests by reason; and
// vLLM's engine label on every vllm: family.
func TestMetricsVLLMNewFamilies(t *testing.T) {
	ts := newTestServer(t, nil, Options{StatsInterval: time.Hour})
	const requests, tokens = 3, 6
	prompt := strings.Repeat("Once upon a time there was a little girl. ", 4) // 2+ full blocks: cached
	body := map[string]any{"prompt": prompt, "max_tokens": tokens, "ignore_eos": true}
	promptLen, cached := 0, 0
	for range requests {
		var resp completionResponse
		postOK(t, ts.url+"/v1/completions", body, &resp)
		promptLen = resp.Usage.PromptTokens
		cached += resp.Usage.PromptTokensDetails.CachedTokens
	}
	settle(t, ts)
	if cached == 0 {
		t.Fatal("the repeated prompt never hit the prefix cache")
	}
	for name, typ := range map[string]dto.MetricType{
		"vllm:request_time_per_output_token_seconds": dto.MetricType_HISTOGRAM,
		"vllm:request_max_num_generation_tokens":     dto.MetricType_HISTOGRAM,
		"vllm:request_prefill_kv_computed_tokens":    dto.MetricType_HISTOGRAM,
		"vllm:prompt_tokens_cached_total":            dto.MetricType_COUNTER,
		"vllm:num_requests_waiting_by_reason":        dto.MetricType_GAUGE,
	} {
		if f := ts.metricFamilies(t)[name]; f == nil || f.GetType() != typ {
			t.Errorf("family %s missing or not a %v: %v", name, typ, f)
		}
	}
	for name, f := range ts.metricFamilies(t) {
		if strings.HasPrefix(name, "vllm:") && !hasLabel(f, "engine", "0") {
			t.Errorf("%s has a series without engine=\"0\"", name)
		}
	}
	const l = `{engine="0",model_name="stories260K"}`
	for _, tc := range []struct {
		series string
		want   float64
	}{
		{"vllm:request_time_per_output_token_seconds_count" + l, requests},
		{"vllm:request_max_num_generation_tokens_sum" + l, requests * tokens},
		{"vllm:request_max_num_generation_tokens_count" + l, requests},
		{"vllm:prompt_tokens_cached_total" + l, float64(cached)},
		{"vllm:request_prefill_kv_computed_tokens_sum" + l, float64(requests*promptLen - cached)},
		{"vllm:request_prefill_kv_computed_tokens_count" + l, requests},
		{`vllm:num_requests_waiting_by_reason{engine="0",model_name="stories260K",reason="capacity"}`, 0},
		{`vllm:num_requests_waiting_by_reason{engine="0",model_name="stories260K",reason="deferred"}`, 0},
	} {
		if got := metricValue(t, ts, tc.series); got != tc.want {
			t.Errorf("%s = %v, want %v", tc.series, got, tc.want)
		}
	}
	// Per request, decode time over tokens − 1 lies within the inter-token
	// latencies' range: the mean of the request means is the mean of all.
	sum := metricValue(t, ts, "vllm:request_time_per_output_token_seconds_sum"+l)
	itl := metricValue(t, ts, "vllm:inter_token_latency_seconds_sum"+l)
	if d := sum*(tokens-1) - itl; sum <= 0 || d > 1e-6*itl+1e-9 || d < -1e-6*itl-1e-9 {
		t.Errorf("time per output token: %v s per request × %d intervals, inter-token latencies %v s", sum, tokens-1, itl)
	}
}

// The HTTP metrics of prometheus-fastapi-instrumentator (vLLM's): requests
// by method, grouped status and route pattern, durations by method and
// route, not for the routes vLLM leaves out.
func TestMetricsHTTP(t *testing.T) {
	ts := newTestServer(t, nil, Options{})
	for range 2 {
		postOK(t, ts.url+"/v1/completions", map[string]any{"prompt": onceUpon, "max_tokens": 2}, &completionResponse{})
	}
	stream(t, ts.url+"/v1/completions", map[string]any{"prompt": onceUpon, "max_tokens": 3, "stream": true})
	for _, path := range []string{"/v1/models", "/v1/models/stories260K", "/nowhere", "/health", "/version"} {
		resp := do(t, context.Background(), "GET", ts.url+path, nil)
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	resp := do(t, context.Background(), "POST", ts.url+"/v1/completions", `{"prompt": 1}`)
	resp.Body.Close()
	expo := scrape(t, ts)
	for _, tc := range []struct {
		series string
		want   float64
	}{
		{`http_requests_total{handler="/v1/completions",method="POST",status="2xx"}`, 3},
		{`http_requests_total{handler="/v1/completions",method="POST",status="4xx"}`, 1},
		{`http_requests_total{handler="/v1/models",method="GET",status="2xx"}`, 1},
		{`http_requests_total{handler="/v1/models/{id...}",method="GET",status="2xx"}`, 1},
		{`http_requests_total{handler="none",method="GET",status="4xx"}`, 1},
		{`http_request_duration_seconds_count{handler="/v1/completions",method="POST"}`, 4},
		{`http_request_duration_seconds_bucket{handler="/v1/completions",method="POST",le="+Inf"}`, 4},
		{`http_request_duration_highr_seconds_count`, 7},
		{`http_request_size_bytes_count{handler="/v1/completions"}`, 4},
		{`http_response_size_bytes_count{handler="/v1/models"}`, 1},
	} {
		if got := metricValue(t, ts, tc.series); got != tc.want {
			t.Errorf("%s = %v, want %v", tc.series, got, tc.want)
		}
	}
	if metricValue(t, ts, `http_response_size_bytes_sum{handler="/v1/models"}`) <= 0 {
		t.Error("no response bytes counted")
	}
	for _, excluded := range []string{`handler="/health"`, `handler="/version"`, `handler="/metrics"`} {
		if strings.Contains(expo, excluded) {
			t.Errorf("the exposition counts %s, which vLLM leaves out", excluded)
		}
	}
}

// The exposition Prometheus asks for (OpenMetrics) names each family once
// — the Go collector's counter go_memstats_alloc_bytes_total made a second
// go_memstats_alloc_bytes family, which `promtool check metrics` rejects
// ("second HELP line") — and parses with the text parser promtool uses;
// the registry lints (testutil.GatherAndLint) with only vLLM's own two
// naming exceptions (see TestMetricsLint).
func TestMetricsExposition(t *testing.T) {
	ts := newTestServer(t, nil, Options{})
	postOK(t, ts.url+"/v1/completions", map[string]any{"prompt": onceUpon, "max_tokens": 2}, &completionResponse{})
	resp := do(t, context.Background(), "GET", ts.url+"/metrics", nil, "Accept", "application/openmetrics-text; version=1.0.0; charset=utf-8")
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/openmetrics-text") {
		t.Fatalf("Content-Type %q", ct)
	}
	om := string(b)
	seen := map[string]bool{}
	for _, line := range strings.Split(om, "\n") {
		if f := strings.Fields(line); len(f) >= 3 && f[0] == "#" && (f[1] == "HELP" || f[1] == "TYPE") {
			if seen[f[1]+" "+f[2]] {
				t.Errorf("second %s line for %s", f[1], f[2])
			}
			seen[f[1]+" "+f[2]] = true
		}
	}
	if !seen["HELP go_memstats_alloc_bytes"] || !seen["HELP go_gc_heap_allocs_bytes"] {
		t.Error("go_memstats_alloc_bytes or its total under the runtime/metrics name is missing")
	}
	// promtool reads the text format: drop exemplars (" # {...} v t") and
	// the "# EOF" trailer, then parse.
	exemplar := regexp.MustCompile(` # \{[^}]*\} \S+( \S+)?$`)
	var text []string
	for _, line := range strings.Split(om, "\n") {
		if line != "# EOF" {
			text = append(text, exemplar.ReplaceAllString(line, ""))
		}
	}
	lintExposition(t, strings.Join(text, "\n")) // fails the test if it does not parse
	problems, err := testutil.GatherAndLint(ts.s.Registry())
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		vllmName := strings.HasPrefix(p.Metric, "vllm:") && p.Text == "metric names should not contain ':'"
		if !vllmName && !(p.Metric == "vllm:iteration_tokens_total" && strings.Contains(p.Text, `"_total" suffix`)) {
			t.Errorf("GatherAndLint: %s: %s", p.Metric, p.Text)
		}
	}
	if code := resp.StatusCode; code != http.StatusOK {
		t.Errorf("/metrics: %d", code)
	}
}
