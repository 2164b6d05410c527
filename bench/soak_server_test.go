package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"
)

// Ways the fake server misbehaves on a request.
const (
	fakeOK        = ""
	fakeDrop      = "drop"      // close the connection without an answer
	fake500       = "500"       // answer 500
	fake503       = "503"       // answer 503 (a rejection, not a loss)
	fakeTruncate  = "truncate"  // stream: one chunk, then end without [DONE]
	fakeNoFinish  = "nofinish"  // stream: [DONE] without finish_reason
	fakeErrEvent  = "errevent"  // stream: a server_error event
	fakeChoices   = "choices"   // JSON: one choice too few
	fakeAcceptAll = "acceptall" // answer malformed requests 200
)

// soakServer answers the soak's requests as a server would, knowing the
// plan: it finds each request by its body. misbehave picks, per request,
// how it misbehaves.
type soakServer struct {
	t         *testing.T
	plan      map[string]soakRequest
	misbehave func(soakRequest) string
	delay     time.Duration // before a JSON answer, and between stream chunks
	running   atomic.Int64  // requests in the handler (the running gauge)
	stuck     bool          // the running gauge never returns to 0
	// disconnects counts requests whose client left before the handler
	// returned.
	disconnects atomic.Int64
}

func newSoakServer(t *testing.T, cfg SoakConfig, misbehave func(soakRequest) string) (*soakServer, *httptest.Server) {
	f := &soakServer{t: t, plan: map[string]soakRequest{}, misbehave: misbehave, delay: time.Millisecond}
	for i := range cfg.NumRequests {
		r := planRequest(cfg.PlanConfig, i)
		if r.Raw == nil {
			f.plan[string(r.Body)] = r
		}
	}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	return f, srv
}

func (f *soakServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch r.URL.Path {
	case "/health":
		return
	case "/v1/models":
		fmt.Fprint(w, `{"data":[{"id":"m"}]}`)
		return
	case "/metrics":
		run := f.running.Load()
		if f.stuck {
			run++
		}
		fmt.Fprintf(w, "# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running{model_name=\"m\"} %d\n"+
			"vllm:num_requests_waiting{model_name=\"m\"} 0\nvllm:kv_cache_usage_perc{model_name=\"m\"} 0\n"+
			"process_resident_memory_bytes 1.5e+07\n", run)
		return
	}
	f.running.Add(1)
	defer f.running.Add(-1)
	if r.ContentLength > 1<<20 {
		http.Error(w, `{"error":{"message":"too large"}}`, http.StatusRequestEntityTooLarge)
		return
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, `{"error":{"message":"reading the body"}}`, http.StatusBadRequest)
		return
	}
	req, ok := f.plan[string(body)]
	how := f.misbehave(req)
	if !ok || (req.Malformed != "" && !req.MayAccept && how != fakeAcceptAll) {
		http.Error(w, `{"error":{"message":"bad request"}}`, http.StatusBadRequest)
		return
	}
	f.answer(w, r, req, how)
	if r.Context().Err() != nil {
		f.disconnects.Add(1)
	}
}

func (f *soakServer) answer(w http.ResponseWriter, r *http.Request, req soakRequest, how string) {
	switch how {
	case fakeDrop:
		conn, _, err := http.NewResponseController(w).Hijack()
		if err != nil {
			f.t.Error(err)
			return
		}
		conn.Close()
		return
	case fake500, fake503:
		code := map[string]int{fake500: 500, fake503: 503}[how]
		w.WriteHeader(code)
		fmt.Fprint(w, `{"error":{"message":"no"}}`)
		return
	}
	if !isOpenAI(req.Endpoint) {
		f.answerProtocol(w, r, req, how)
		return
	}
	if !req.Stream {
		if !wait(r.Context(), f.delay) {
			return
		}
		n := req.Choices
		if how == fakeChoices {
			n--
		}
		resp := map[string]any{"choices": choices(n, "length")}
		json.NewEncoder(w).Encode(resp)
		return
	}
	f.stream(w, r, req, how)
}

// stream sends three chunks per choice, the last with a finish_reason,
// then a usage chunk and [DONE].
func (f *soakServer) stream(w http.ResponseWriter, r *http.Request, req soakRequest, how string) {
	w.Header().Set("Content-Type", "text/event-stream")
	rc := http.NewResponseController(w)
	send := func(s string) bool {
		fmt.Fprintf(w, "data: %s\n\n", s)
		return rc.Flush() == nil && wait(r.Context(), f.delay)
	}
	for k := range 3 {
		reason := ""
		if k == 2 && how != fakeNoFinish {
			reason = "stop"
		}
		b, _ := json.Marshal(map[string]any{"choices": choices(req.Choices, reason)})
		if !send(string(b)) {
			return
		}
		switch {
		case how == fakeTruncate:
			return
		case how == fakeErrEvent:
			send(`{"error":{"message":"boom","type":"server_error"}}`)
			send("[DONE]")
			return
		}
	}
	send(`{"choices":[],"usage":{"prompt_tokens":1,"completion_tokens":3}}`)
	send("[DONE]")
}

// choices are n choices with text and the finish reason ("" → null).
func choices(n int, reason string) []map[string]any {
	out := make([]map[string]any, n)
	for i := range out {
		out[i] = map[string]any{"index": i, "text": "x", "finish_reason": nil}
		if reason != "" {
			out[i]["finish_reason"] = reason
		}
	}
	return out
}

func wait(ctx context.Context, d time.Duration) bool {
	select {
	case <-time.After(d):
		return true
	case <-ctx.Done():
		return false
	}
}
