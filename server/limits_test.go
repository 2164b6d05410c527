package server

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"math"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"pagoda/engine"
	"pagoda/internal/testmodel"
)

// Requests a client can send that the server must refuse with a 400 naming
// the field, at once and at no cost to anyone else.
func TestRequestLimits(t *testing.T) {
	ts := newTestServer(t, nil, Options{})
	manyStops := make([]string, 1_000_000)
	for i := range manyStops {
		manyStops[i] = "a"
	}
	// A 10 MB text (1 MB under -short, which the race pass runs: still
	// thousands of times the model length).
	huge := strings.Repeat("Once upon a time. ", 580000)
	if testing.Short() {
		huge = huge[:len(huge)/10]
	}
	manyPrompts := make([]string, MaxPrompts+1)
	for i := range manyPrompts {
		manyPrompts[i] = "x"
	}
	for _, tc := range []struct {
		name, path string
		body       any
		param      string
		msg        string
	}{
		{"empty prompt", "/v1/completions", map[string]any{"prompt": ""}, "prompt", "must not be empty"},
		{"empty prompt in a list", "/v1/completions", map[string]any{"prompt": []string{"a", ""}}, "prompt", "prompt[1] must not be empty"},
		{"empty token list", "/v1/completions", map[string]any{"prompt": [][]int{{1, 2}, {}}}, "prompt", "prompt[1] must not be empty"},
		{"too many prompts", "/v1/completions", map[string]any{"prompt": manyPrompts}, "prompt", "at most 256 prompts"},
		{"a million stop strings", "/v1/completions", map[string]any{"prompt": "a", "stop": manyStops}, "stop", "at most 64 strings"},
		{"a long stop string", "/v1/completions", map[string]any{"prompt": "a", "stop": strings.Repeat("x", 257)}, "stop", "at most 256 bytes"},
		{"max_tokens MaxInt64", "/v1/completions", map[string]any{"prompt": "a", "max_tokens": int64(math.MaxInt64)}, "max_tokens", "prompt too long"},
		{"10 MB prompt", "/v1/completions", map[string]any{"prompt": huge}, "prompt", "prompt too long"},
		{"10 MB chat message", "/v1/chat/completions", map[string]any{"messages": []map[string]any{{"role": "user", "content": huge}}}, "prompt", "prompt too long"},
		{"10 MB prompt to tokenize", "/tokenize", map[string]any{"prompt": huge}, "prompt", "prompt too long"},
		{"reserved template variable", "/v1/chat/completions", map[string]any{"messages": chatMessages, "chat_template_kwargs": map[string]any{"messages": []any{}}}, "chat_template_kwargs", "cannot be overridden"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, b := post(t, ts.url+tc.path, tc.body)
			var e errorBody
			if err := json.Unmarshal(b, &e); err != nil || code != http.StatusBadRequest {
				t.Fatalf("status %d: %.300s", code, b)
			}
			if e.Error.Param == nil || *e.Error.Param != tc.param || !strings.Contains(e.Error.Message, tc.msg) {
				t.Fatalf("error %+v (param %v), want param %q and %q", e.Error, e.Error.Param, tc.param, tc.msg)
			}
		})
	}
	settle(t, ts)
}

// Every sequence counts against --max-queue: a request larger than the
// queue is a 400, one that does not fit beside the waiting ones a 503.
func TestMaxQueueCountsSequences(t *testing.T) {
	e, err := engine.New(func() engine.Config {
		c := engine.DefaultConfig(testmodel.Stories(t))
		c.MaxModelLen, c.Threads = 256, 1
		return c
	}())
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close() // the loop never runs: requests stay queued
	s := New(Options{MaxQueue: 4, ChatTemplate: testTemplate})
	if err := s.SetEngine(e); err != nil {
		t.Fatal(err)
	}
	url := newPlainServer(t, s)
	code, b := post(t, url+"/v1/completions", map[string]any{"prompt": []string{"a", "b", "c"}, "n": 2})
	if code != http.StatusBadRequest || !strings.Contains(string(b), "needs 6 sequences") {
		t.Fatalf("3 prompts × n 2 with --max-queue 4: %d %s", code, b)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "POST", url+"/v1/completions", strings.NewReader(`{"prompt":"a","n":3}`))
	if resp, err := http.DefaultClient.Do(req); err == nil {
		resp.Body.Close()
		t.Fatalf("a request on a stopped engine answered %d", resp.StatusCode)
	}
	if q := e.QueuedSeqs(); q != 3 {
		t.Fatalf("QueuedSeqs = %d, want 3", q)
	}
	code, b = post(t, url+"/v1/completions", map[string]any{"prompt": "a", "best_of": 2})
	if code != http.StatusServiceUnavailable || !strings.Contains(string(b), "3 sequences are waiting and this request adds 2") {
		t.Fatalf("best_of 2 beside 3 queued, --max-queue 4: %d %s", code, b)
	}
	code, _ = post(t, url+"/tokenize", map[string]any{"prompt": "a"})
	if code != http.StatusOK {
		t.Fatalf("tokenize while the queue is full: %d", code)
	}
	s.Shutdown(context.Background())
}

// A body that never arrives gets a 400 after the body timeout and its
// connection is closed; net/http does not then wait forever to discard it.
func TestBodyTimeout(t *testing.T) {
	ts := newTestServer(t, nil, Options{BodyTimeout: 200 * time.Millisecond})
	conn, err := net.Dial("tcp", strings.TrimPrefix(ts.url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	io.WriteString(conn, "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{")
	conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("no response to a stalled body: %v", err)
	}
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(b), "did not arrive within") || !resp.Close {
		t.Fatalf("status %d, close %v: %s", resp.StatusCode, resp.Close, b)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := ts.s.Shutdown(ctx); err != nil {
		t.Fatalf("Shutdown after a stalled body: %v", err)
	}
}

// A stream cut by shutdown ends with an error event and [DONE], not
// silently.
func TestStreamCutByShutdownEndsWithError(t *testing.T) {
	ts := newTestServer(t, nil, Options{})
	resp := do(t, context.Background(), "POST", ts.url+"/v1/completions", withStream(long))
	defer resp.Body.Close()
	r := bufio.NewReader(resp.Body)
	if _, err := r.ReadString('\n'); err != nil { // the first event
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	ts.s.Shutdown(ctx) // the grace period ends with the stream running
	ev := readEvents(t, io.MultiReader(strings.NewReader("data: x\n"), r))
	if n := len(ev); n < 2 || ev[n-1] != "[DONE]" || !strings.Contains(ev[n-2], `"error"`) || !strings.Contains(ev[n-2], "shutting down") {
		t.Fatalf("the cut stream ends with %q", ev[max(0, len(ev)-2):])
	}
	settle(t, ts)
}
