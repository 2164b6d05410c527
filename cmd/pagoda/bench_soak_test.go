package main

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestBenchSoakUsageErrors(t *testing.T) {
	for _, args := range [][]string{
		{"--hangup-rate", "0.9", "--malformed-rate", "0.2"},
		{"--endpoints", "audio"},
		{"--endpoints", ""},
		{"--num-requests", "0"},
		{"--max-tokens", "0"},
		{"--stall-timeout", "0s"},
		{"extra"},
	} {
		code, _, stderr := runCLI(append([]string{"bench", "soak", "--model", "m"}, args...)...)
		if code != 2 {
			t.Errorf("bench soak %v: exit %d, want 2 (%s)", args, code, stderr)
		}
	}
}

// A server that refuses every request with 400 loses nothing, but no
// request completes: the soak fails (exit 1) and says why, in JSON.
func TestBenchSoakJSONAndExitStatus(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/metrics":
			w.Write([]byte("vllm:num_requests_running 0\nvllm:num_requests_waiting 0\nvllm:kv_cache_usage_perc 0\n"))
		case "/health":
		default:
			http.Error(w, `{"error":{"message":"no"}}`, http.StatusBadRequest)
		}
	}))
	defer srv.Close()
	code, stdout, stderr := runCLI("bench", "soak", "--base-url", srv.URL, "--model", "m", "--num-requests", "50",
		"--max-concurrency", "4", "--stall-timeout", "50ms", "--json", "--quiet")
	var rep struct {
		Sent, Rejected, Lost int
		Settled              bool     `json:"gauges_settled"`
		Failures             []string `json:"failures"`
	}
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
		t.Fatalf("%v: %s", err, stdout)
	}
	if code != 1 || rep.Sent != 50 || rep.Lost != 0 || !rep.Settled || len(rep.Failures) != 1 ||
		!strings.Contains(stderr, "no request completed") {
		t.Fatalf("exit %d, report %+v, stderr %s", code, rep, stderr)
	}
}
