package server

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"pagoda/engine"
	"pagoda/internal/testmodel"
	"pagoda/model"
	_ "pagoda/model/archs" // registers every architecture
)

// testTemplate is the chat template the tests give the stories model.
const testTemplate = "{{ bos_token }}{% for m in messages %}{{ m['role'] }}: {{ m['content'] }}\n{% endfor %}" +
	"{% if add_generation_prompt %}assistant:{% endif %}"

// testServer is a ready server over a running stories engine.
type testServer struct {
	s   *Server
	e   *engine.Engine
	srv *httptest.Server
	url string
}

// newTestServer starts an engine over stories260K (testmodel.Stories: the
// tiny real model, fast enough for hundreds of requests, with a
// SentencePiece vocabulary, BOS 1 and EOS 2, and no chat template of its
// own) with cfg adjusted by mutate, and serves it with opts (ChatTemplate
// defaults to testTemplate). Cleanup stops both.
func newTestServer(t testing.TB, mutate func(*engine.Config), opts Options) *testServer {
	t.Helper()
	if opts.ChatTemplate == "" {
		opts.ChatTemplate = testTemplate
	}
	return startServer(t, testmodel.Stories(t), mutate, opts)
}

// newDefaultServer serves the default model (testmodel.Default:
// SmolLM2-135M-Instruct, whose own chat template is ChatML and ignores
// tools) with a 2048-token model length, as newTestServer serves stories.
func newDefaultServer(t testing.TB, opts Options) *testServer {
	t.Helper()
	return startServer(t, testmodel.Default(t), func(c *engine.Config) { c.MaxModelLen, c.Threads = 2048, 2 }, opts)
}

// startServer starts an engine over the GGUF file at path and serves it
// with opts; Cleanup stops both.
func startServer(t testing.TB, path string, mutate func(*engine.Config), opts Options) *testServer {
	t.Helper()
	cfg := engine.DefaultConfig(path)
	cfg.MaxModelLen, cfg.KVCacheType, cfg.Threads, cfg.MaxNumSeqs = 512, model.KVF32, 1, 8
	if mutate != nil {
		mutate(&cfg)
	}
	e, err := engine.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	e.Start(ctx)
	s := New(opts)
	if err := s.SetEngine(e); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(func() {
		srv.Close()
		s.Shutdown(context.Background())
		cancel()
		e.Close()
	})
	return &testServer{s: s, e: e, srv: srv, url: srv.URL}
}

// post sends body (a string is sent as is, anything else as JSON) and
// returns the status and response body.
func post(t testing.TB, url string, body any, header ...string) (int, []byte) {
	t.Helper()
	resp := do(t, context.Background(), "POST", url, body, header...)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, b
}

func do(t testing.TB, ctx context.Context, method, url string, body any, header ...string) *http.Response {
	t.Helper()
	var r io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		r = strings.NewReader(b)
	default:
		j, err := json.Marshal(b)
		if err != nil {
			t.Fatal(err)
		}
		r = bytes.NewReader(j)
	}
	req, err := http.NewRequestWithContext(ctx, method, url, r)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// postOK posts and decodes a 200 response into v.
func postOK(t testing.TB, url string, body any, v any) {
	t.Helper()
	code, b := post(t, url, body)
	if code != http.StatusOK {
		t.Fatalf("status %d: %s", code, b)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("%v: %s", err, b)
	}
}

// readEvents reads an SSE body: the data of every event, checking the
// framing (each event one "data: " line then a blank line).
func readEvents(t testing.TB, body io.Reader) []string {
	t.Helper()
	var events []string
	sc := bufio.NewScanner(body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok {
			t.Fatalf("event line %q does not start with \"data: \"", line)
		}
		events = append(events, data)
		if !sc.Scan() || sc.Text() != "" {
			t.Fatalf("event %q is not followed by a blank line", data)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return events
}

// stream posts a streaming request and returns its events' data, checking
// the status, content type and the final [DONE].
func stream(t testing.TB, url string, body any) []string {
	t.Helper()
	resp := do(t, context.Background(), "POST", url, body)
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("status %d: %s", resp.StatusCode, b)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("Content-Type %q", ct)
	}
	ev := readEvents(t, resp.Body)
	if len(ev) == 0 || ev[len(ev)-1] != "[DONE]" {
		t.Fatalf("the stream does not end with [DONE]: %q", ev)
	}
	return ev[:len(ev)-1]
}

// waitFor polls cond every few milliseconds until it holds or d passes.
func waitFor(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// idle reports whether the engine holds no request and no KV block.
func idle(e *engine.Engine) bool {
	st := e.Stats()
	return st.Running == 0 && st.Waiting == 0 && st.Swapped == 0 && st.KVUsage == 0
}

// greedy returns the engine's own greedy output for prompt ids, for
// comparison with what the server returns.
func greedy(t testing.TB, e *engine.Engine, ids []int32, maxTokens int, mutate func(*engine.SamplingParams)) engine.CompletionOutput {
	t.Helper()
	p := engine.GreedyParams(maxTokens)
	if mutate != nil {
		mutate(&p)
	}
	s, err := e.AddRequest(engine.Request{PromptTokens: ids, Params: p})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	o, err := s.Collect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return o.Outputs[0]
}

func itoa(id int32) string { return strconv.Itoa(int(id)) }

// newPlainServer serves s (no engine needed) until the test ends.
func newPlainServer(t testing.TB, s *Server) string {
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(srv.Close)
	return srv.URL
}

// settle waits until no handler runs (so every abort has been sent), then
// runs a one-token probe request through the engine and checks that the
// engine is left holding no request and no KV block. The probe is needed
// because the engine publishes Stats only after a step: aborts drained
// while it idles leave the last snapshot stale.
func settle(t testing.TB, ts *testServer) engine.Stats {
	t.Helper()
	waitFor(t, 10*time.Second, "the handlers to return", func() bool { return ts.s.active.Load() == 0 })
	greedy(t, ts.e, []int32{1}, 1, nil)
	// The probe's output arrives just before the step publishes its Stats.
	deadline := time.Now().Add(10 * time.Second)
	for !idle(ts.e) {
		if time.Now().After(deadline) {
			t.Fatalf("the engine still holds requests or blocks: %+v", ts.e.Stats())
		}
		time.Sleep(5 * time.Millisecond)
	}
	return ts.e.Stats()
}

func jsonString(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// getJSON GETs url and decodes a 200 response into v.
func getJSON(t testing.TB, url string, v any) {
	t.Helper()
	resp := do(t, context.Background(), "GET", url, nil)
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d %s", url, resp.StatusCode, b)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("GET %s: %v: %s", url, err, b)
	}
}

// scrape returns the /metrics exposition.
func scrape(t testing.TB, ts *testServer) string {
	t.Helper()
	resp := do(t, context.Background(), "GET", ts.url+"/metrics", nil)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("/metrics: %d %v", resp.StatusCode, err)
	}
	return string(b)
}

// metricValue returns the value of one series, written exactly as in the
// exposition (labels sorted by name).
func metricValue(t testing.TB, ts *testServer, series string) float64 {
	t.Helper()
	for _, line := range strings.Split(scrape(t, ts), "\n") {
		if v, ok := strings.CutPrefix(line, series+" "); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				t.Fatalf("%s: %v", line, err)
			}
			return f
		}
	}
	t.Fatalf("no series %s in /metrics", series)
	return 0
}

// metricFamilies gathers the server's registry, keyed by metric name.
func (ts *testServer) metricFamilies(t *testing.T) map[string]*dto.MetricFamily {
	t.Helper()
	fams, err := ts.s.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]*dto.MetricFamily{}
	for _, f := range fams {
		byName[f.GetName()] = f
	}
	return byName
}
