package server

import (
	"testing"
	"time"
)

// The per-step counters add up the engine's steps: with one process the
// forward pass is all compute (no communication, no waiting), and it is
// part of the step's duration.
func TestStepMetrics(t *testing.T) {
	ts := newTestServer(t, nil, Options{StatsInterval: time.Hour})
	var resp completionResponse
	postOK(t, ts.url+"/v1/completions", map[string]any{"prompt": "Once upon a time", "max_tokens": 8, "ignore_eos": true}, &resp)
	settle(t, ts)
	v := func(name string) float64 {
		return metricValue(t, ts, name+`{model_name="stories260K"}`)
	}
	dur, fwd, comp := v("pagoda_step_duration_seconds_total"), v("pagoda_step_forward_seconds_total"), v("pagoda_step_compute_seconds_total")
	if fwd <= 0 || comp != fwd || dur < fwd {
		t.Errorf("step seconds: duration %v, forward %v, compute %v; want 0 < compute = forward ≤ duration", dur, fwd, comp)
	}
	for _, name := range []string{"pagoda_step_communication_seconds_total", "pagoda_step_wait_seconds_total", "pagoda_step_micro_batches_split_total"} {
		if got := v(name); got != 0 {
			t.Errorf("%s = %v with one process, want 0", name, got)
		}
	}
}
