package bench

import (
	"math"
	"strings"
	"testing"
	"time"
)

// percentile interpolates linearly between ranks, as numpy.percentile.
func TestPercentile(t *testing.T) {
	xs := []float64{1, 2, 3, 4, 10}
	for _, tc := range []struct{ p, want float64 }{{0, 1}, {50, 3}, {90, 7.6}, {99, 9.76}, {100, 10}, {25, 2}} {
		if got := percentile(xs, tc.p); math.Abs(got-tc.want) > 1e-9 {
			t.Errorf("p%v = %v, want %v", tc.p, got, tc.want)
		}
	}
	s := summarize([]float64{10, 1, 4, 3, 2}, []float64{99})
	if math.Abs(s.Mean-4) > 1e-9 || s.Median != 3 || math.Abs(s.Std-math.Sqrt(10)) > 1e-9 || s.Percentiles[0].Value != 9.76 {
		t.Fatalf("summary %+v", s)
	}
	if e := summarize(nil, []float64{50}); e.Mean != 0 || e.Percentiles[0].Value != 0 {
		t.Fatalf("empty summary %+v", e)
	}
}

// Summarize: throughputs over the duration; TTFT, TPOT, ITL and E2EL of the
// successful requests only; the table and JSON carry them.
func TestSummarize(t *testing.T) {
	ms := time.Millisecond
	results := []Result{
		{Success: true, PromptTokens: 10, OutputTokens: 5, TTFT: 100 * ms, Latency: 500 * ms,
			ITL: []time.Duration{100 * ms, 100 * ms, 100 * ms, 100 * ms}, UsageReported: true},
		{Success: true, PromptTokens: 20, OutputTokens: 3, TTFT: 300 * ms, Latency: 700 * ms,
			ITL: []time.Duration{200 * ms, 200 * ms}, UsageReported: true},
		{Success: false, Error: "HTTP 503", PromptTokens: 7},
	}
	r := Summarize(results, 2*time.Second, []string{MetricTTFT, MetricTPOT, MetricITL, MetricE2EL}, []float64{50, 99})
	if r.Completed != 2 || r.Failed != 1 || r.TotalInput != 30 || r.TotalOutput != 8 {
		t.Fatalf("totals %+v", r)
	}
	for _, tc := range []struct {
		name      string
		got, want float64
	}{
		{"request throughput", r.RequestThroughput, 1},
		{"output throughput", r.OutputThroughput, 4},
		{"total throughput", r.TotalTokenThroughput, 19},
		{"mean ttft", r.Metrics[MetricTTFT].Mean, 200},
		{"mean tpot", r.Metrics[MetricTPOT].Mean, 150}, // (400/4 + 400/2) / 2
		{"mean itl", r.Metrics[MetricITL].Mean, 800.0 / 6},
		{"median e2el", r.Metrics[MetricE2EL].Median, 600},
		{"p99 ttft", r.Metrics[MetricTTFT].Percentiles[1].Value, 298},
	} {
		if math.Abs(tc.got-tc.want) > 1e-6 {
			t.Errorf("%s = %v, want %v", tc.name, tc.got, tc.want)
		}
	}
	var table strings.Builder
	r.MaxConcurrency = 8
	r.WriteTable(&table)
	for _, want := range []string{"Successful requests:                     2", "Failed requests:                         1",
		"Maximum request concurrency:             8", "Mean TTFT (ms):                          200.00",
		"P99 TPOT (ms):", "Median ITL (ms):", "Mean E2EL (ms):", "Time per Output Token (excl. 1st token)",
		"Total Token throughput (tok/s):          19.00"} {
		if !strings.Contains(table.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, table.String())
		}
	}
	j := r.JSON(Meta{Model: "m", RequestRate: math.Inf(1), NumPrompts: 3, Seed: 42}, true)
	for key, want := range map[string]any{"completed": 2, "failed": 1, "retries": 0, "seed": uint64(42),
		"request_rate": "inf", "mean_ttft_ms": 200.0,
		"p99_ttft_ms": 298.0, "median_e2el_ms": 600.0, "total_output_tokens": 8, "model_id": "m"} {
		got := j[key]
		if f, ok := got.(float64); ok {
			if math.Abs(f-want.(float64)) > 1e-6 {
				t.Errorf("%s = %v, want %v", key, got, want)
			}
		} else if got != want {
			t.Errorf("%s = %v, want %v", key, got, want)
		}
	}
	if errs := j["errors"].([]string); errs[2] != "HTTP 503" {
		t.Errorf("errors %q", errs)
	}
}
