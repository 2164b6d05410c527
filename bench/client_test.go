package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// fakeServer is an OpenAI-compatible stub: it streams max_tokens chunks of
// "w " (completions text or chat delta), then usage if asked, then [DONE].
// It records the largest number of requests in flight and the bodies.
type fakeServer struct {
	inFlight, peak atomic.Int64
	mu             sync.Mutex
	bodies         []map[string]any
	usage          bool          // send a usage chunk when asked
	status         int           // non-zero: fail with this status
	errorChunk     bool          // send an error event instead of text
	gap            time.Duration // between chunks
}

func (f *fakeServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/v1/models" {
		fmt.Fprint(w, `{"object": "list", "data": [{"id": "fake-model", "object": "model"}]}`)
		return
	}
	n := f.inFlight.Add(1)
	var leave sync.Once // before [DONE]: the client may send its next request right after it
	defer leave.Do(func() { f.inFlight.Add(-1) })
	for p := f.peak.Load(); n > p && !f.peak.CompareAndSwap(p, n); p = f.peak.Load() {
	}
	var body map[string]any
	json.NewDecoder(r.Body).Decode(&body)
	f.mu.Lock()
	f.bodies = append(f.bodies, body)
	f.mu.Unlock()
	if f.status != 0 {
		http.Error(w, `{"error": {"message": "nope"}}`, f.status)
		return
	}
	chat := strings.Contains(r.URL.Path, "chat")
	maxTokens := body["max_tokens"]
	if chat {
		maxTokens = body["max_completion_tokens"]
	}
	w.Header().Set("Content-Type", "text/event-stream")
	send := func(s string) { fmt.Fprintf(w, "data: %s\n\n", s); w.(http.Flusher).Flush() }
	if f.errorChunk {
		send(`{"error": {"message": "boom"}}`)
		return
	}
	if chat {
		send(`{"choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}}]}`)
	}
	n64 := int(maxTokens.(float64))
	for range n64 {
		time.Sleep(f.gap)
		if chat {
			send(`{"choices": [{"index": 0, "delta": {"content": "w "}}]}`)
		} else {
			send(`{"choices": [{"index": 0, "text": "w "}]}`)
		}
	}
	if f.usage {
		send(fmt.Sprintf(`{"choices": [], "usage": {"prompt_tokens": 11, "completion_tokens": %d}}`, n64))
	}
	leave.Do(func() { f.inFlight.Add(-1) })
	send("[DONE]")
}

// The client times every text chunk and takes the token counts from the
// usage chunk, or counts chunks when the server sends none.
func TestClientSend(t *testing.T) {
	for _, tc := range []struct {
		name, endpoint string
		usage          bool
		wantPrompt     int
	}{
		{"completions_usage", "/v1/completions", true, 11},
		{"chat_usage", "/v1/chat/completions", true, 11},
		{"completions_no_usage", "/v1/completions", false, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := &fakeServer{usage: tc.usage}
			srv := httptest.NewServer(f)
			defer srv.Close()
			c := &Client{BaseURL: srv.URL, Endpoint: tc.endpoint, Model: "m", IgnoreEOS: true, APIKey: "k"}
			res := c.Send(context.Background(), Prompt{Text: "a b c", InputLen: 3, OutputLen: 5})
			if !res.Success || res.OutputTokens != 5 || res.PromptTokens != tc.wantPrompt || len(res.ITL) != 4 ||
				res.Text != strings.Repeat("w ", 5) || res.TTFT <= 0 || res.Latency < res.TTFT || res.UsageReported != tc.usage {
				t.Fatalf("result %+v", res)
			}
			b := f.bodies[0]
			if b["model"] != "m" || b["ignore_eos"] != true || b["stream"] != true || b["temperature"] != 0.0 {
				t.Fatalf("request body %v", b)
			}
		})
	}
}

// Failures are results with an error, not panics or Go errors.
func TestClientFailures(t *testing.T) {
	for _, tc := range []struct {
		name   string
		f      *fakeServer
		wantIn string
	}{
		{"http_500", &fakeServer{status: 500}, "HTTP 500"},
		{"error_event", &fakeServer{errorChunk: true}, "boom"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(tc.f)
			defer srv.Close()
			c := &Client{BaseURL: srv.URL, Endpoint: "/v1/completions"}
			res := c.Send(context.Background(), Prompt{Text: "x", InputLen: 1, OutputLen: 2})
			if res.Success || !strings.Contains(res.Error, tc.wantIn) {
				t.Fatalf("result %+v, want an error with %q", res, tc.wantIn)
			}
		})
	}
	c := &Client{BaseURL: "http://127.0.0.1:1", Endpoint: "/v1/completions"}
	if res := c.Send(context.Background(), Prompt{Text: "x", OutputLen: 1}); res.Success || res.Error == "" {
		t.Fatalf("a refused connection gave %+v", res)
	}
}

// --max-concurrency bounds the requests in flight; without it all go at once.
func TestRunConcurrency(t *testing.T) {
	for _, tc := range []struct {
		limit, want int
	}{{3, 3}, {1, 1}, {0, 12}} {
		t.Run(fmt.Sprint(tc.limit), func(t *testing.T) {
			f := &fakeServer{usage: true, gap: 5 * time.Millisecond}
			srv := httptest.NewServer(f)
			defer srv.Close()
			prompts, _ := RandomPrompts(12, 4, 4, 0, 1)
			var progress strings.Builder
			results, d := Run(context.Background(), Config{Client: &Client{BaseURL: srv.URL, Endpoint: "/v1/completions"},
				MaxConcurrency: tc.limit, Progress: &progress}, prompts)
			if got := int(f.peak.Load()); got != tc.want {
				t.Fatalf("peak in flight %d, want %d", got, tc.want)
			}
			for i, r := range results {
				if !r.Success || r.OutputTokens != 4 {
					t.Fatalf("result %d: %+v", i, r)
				}
			}
			if d <= 0 || !strings.Contains(progress.String(), "12/12 requests done (0 failed)") {
				t.Fatalf("duration %v, progress %q", d, progress.String())
			}
		})
	}
}

// Arrivals form a Poisson process: gaps are exponential with mean 1/rate
// (checked on many draws), none before the first request, none at all for
// an infinite rate; the seed fixes them.
func TestArrivalGaps(t *testing.T) {
	const n, rate = 20000, 8.0
	gaps := ArrivalGaps(n, rate, 3)
	if gaps[0] != 0 {
		t.Fatal("the first request waits")
	}
	sum, below := 0.0, 0
	for _, g := range gaps[1:] {
		sum += g.Seconds()
		if g.Seconds() < 1/rate {
			below++
		}
	}
	mean := sum / (n - 1)
	if d := mean - 1/rate; d > 0.005 || d < -0.005 {
		t.Fatalf("mean gap %.4fs, want %.4fs", mean, 1/rate)
	}
	// P(gap < mean) = 1 - 1/e for an exponential distribution.
	if frac := float64(below) / (n - 1); frac < 0.62 || frac > 0.645 {
		t.Fatalf("%.3f of the gaps are below the mean, want 0.632", frac)
	}
	if again := ArrivalGaps(n, rate, 3); again[17] != gaps[17] {
		t.Fatal("the seed does not fix the gaps")
	}
	for _, r := range []float64{0, math.Inf(1)} {
		for _, g := range ArrivalGaps(5, r, 1) {
			if g != 0 {
				t.Fatalf("rate %v waits %v", r, g)
			}
		}
	}
}

func TestFetchModel(t *testing.T) {
	srv := httptest.NewServer(&fakeServer{})
	defer srv.Close()
	got, err := FetchModel(context.Background(), nil, srv.URL, "")
	if err != nil || got != "fake-model" {
		t.Fatalf("FetchModel = %q, %v", got, err)
	}
}
