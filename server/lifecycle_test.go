package server

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// long asks for more tokens than a test waits for.
var long = map[string]any{"prompt": onceUpon, "max_tokens": 480, "ignore_eos": true}

func withStream(m map[string]any) map[string]any {
	out := map[string]any{"stream": true}
	for k, v := range m {
		out[k] = v
	}
	return out
}

// A client that disconnects mid-stream or mid-request has its request
// aborted at once: the engine frees its blocks long before 480 tokens.
func TestAbortOnDisconnect(t *testing.T) {
	for _, tc := range []struct {
		name, path string
		body       map[string]any
		all        int64 // the tokens the request generates when it runs to the end
	}{
		{"completion_stream", "/v1/completions", withStream(long), 480},
		{"chat_stream", "/v1/chat/completions", withStream(map[string]any{"messages": chatMessages, "max_tokens": 400, "ignore_eos": true}), 400},
		{"multi_prompt_stream", "/v1/completions", withStream(map[string]any{"prompt": []string{"a", "b"}, "max_tokens": 480, "ignore_eos": true}), 960},
		{"completion", "/v1/completions", long, 480},
		{"chat_n2", "/v1/chat/completions", map[string]any{"messages": chatMessages, "max_tokens": 400, "ignore_eos": true, "n": 2}, 800},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ts := newTestServer(t, nil, Options{})
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan struct{})
			go func() {
				defer close(done)
				req, _ := http.NewRequestWithContext(ctx, "POST", ts.url+tc.path, strings.NewReader(jsonString(tc.body)))
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					return
				}
				defer resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					b, _ := io.ReadAll(resp.Body)
					t.Errorf("status %d: %s", resp.StatusCode, b)
				}
				bufio.NewReader(resp.Body).ReadString('\n') // the first event (streams)
				cancel()
				io.Copy(io.Discard, resp.Body)
			}()
			waitFor(t, 10*time.Second, "generation to start", func() bool { return ts.e.Stats().GenerationTokens > 0 })
			cancel()
			<-done
			st := settle(t, ts)
			t.Logf("generated %d tokens before the abort took effect", st.GenerationTokens-1)
			if st.GenerationTokens >= tc.all {
				t.Fatalf("the aborted request ran to the end: %+v", st)
			}
			if v := metricValue(t, ts, `vllm:request_success_total{engine="0",finished_reason="abort",model_name="stories260K"}`); v < 1 {
				t.Fatalf("request_success abort = %v", v)
			}
		})
	}
}

// No goroutine outlives its request: after streamed, whole, multi-prompt
// and aborted requests the count returns to where it was.
func TestNoGoroutineLeft(t *testing.T) {
	ts := newTestServer(t, nil, Options{})
	small := map[string]any{"prompt": []string{"a", "b"}, "max_tokens": 4}
	postOK(t, ts.url+"/v1/completions", small, &completionResponse{}) // warm the client and server
	http.DefaultClient.CloseIdleConnections()
	before := runtime.NumGoroutine()
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			switch i % 4 {
			case 0:
				postOK(t, ts.url+"/v1/completions", small, &completionResponse{})
			case 1:
				stream(t, ts.url+"/v1/completions", withStream(small))
			case 2:
				stream(t, ts.url+"/v1/chat/completions", map[string]any{"messages": chatMessages, "max_tokens": 4, "stream": true, "n": 2})
			case 3:
				ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
				defer cancel()
				req, _ := http.NewRequestWithContext(ctx, "POST", ts.url+"/v1/completions", strings.NewReader(jsonString(withStream(long))))
				if resp, err := http.DefaultClient.Do(req); err == nil {
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
				}
			}
		}()
	}
	wg.Wait()
	settle(t, ts)
	http.DefaultClient.CloseIdleConnections()
	waitFor(t, 5*time.Second, "the goroutine count to return", func() bool { return runtime.NumGoroutine() <= before })
}

// Shutdown lets in-flight requests finish within the grace period, and
// aborts them after it; then Serve returns http.ErrServerClosed.
func TestShutdown(t *testing.T) {
	for _, tc := range []struct {
		name    string
		grace   time.Duration
		tokens  int
		wantErr bool
	}{
		{"in_flight_finishes", 30 * time.Second, 40, false},
		{"grace_ends", 2 * time.Millisecond, 480, true}, // 480 tokens outlast 2 ms; since AttnTiled they fit in 100 ms
	} {
		t.Run(tc.name, func(t *testing.T) {
			ts := newTestServer(t, nil, Options{})
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			served := make(chan error, 1)
			go func() { served <- ts.s.Serve(ln) }()
			url := "http://" + ln.Addr().String()
			resp := do(t, context.Background(), "POST", url+"/v1/completions",
				map[string]any{"prompt": onceUpon, "max_tokens": tc.tokens, "ignore_eos": true, "stream": true})
			defer resp.Body.Close()
			bufio.NewReader(resp.Body).ReadString('\n')
			ctx, cancel := context.WithTimeout(context.Background(), tc.grace)
			defer cancel()
			err = ts.s.Shutdown(ctx)
			if (err != nil) != tc.wantErr {
				t.Fatalf("Shutdown: %v, want error %v", err, tc.wantErr)
			}
			if err := <-served; !errors.Is(err, http.ErrServerClosed) {
				t.Fatalf("Serve returned %v", err)
			}
			body, _ := io.ReadAll(resp.Body)
			cut := strings.Contains(string(body), `"error"`) && strings.Contains(string(body), "shutting down")
			if !strings.HasSuffix(string(body), "data: [DONE]\n\n") || cut != tc.wantErr {
				t.Fatalf("stream cut=%v after shutdown (want %v), or no [DONE]: %s", cut, tc.wantErr, tail(body))
			}
			if _, err := http.Get(url + "/health"); err == nil {
				t.Fatal("the server still accepts connections")
			}
			st := settle(t, ts)
			if tc.wantErr && st.GenerationTokens >= 480 {
				t.Fatalf("the aborted request ran to the end: %+v", st)
			}
		})
	}
}

func tail(b []byte) string {
	if len(b) > 200 {
		b = b[len(b)-200:]
	}
	return string(b)
}

// Health, version, models, tokenize and detokenize.
func TestInfoEndpoints(t *testing.T) {
	ts := newTestServer(t, nil, Options{Version: "1.2.3", ServedModelNames: []string{"tiny"}})
	resp := do(t, context.Background(), "GET", ts.url+"/health", nil)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("/health: %d", resp.StatusCode)
	}
	var v map[string]string
	getJSON(t, ts.url+"/version", &v)
	if v["version"] != "1.2.3" {
		t.Fatalf("/version: %v", v)
	}
	var ml modelList
	getJSON(t, ts.url+"/v1/models", &ml)
	if ml.Object != "list" || len(ml.Data) != 1 || ml.Data[0].ID != "tiny" || ml.Data[0].MaxModelLen != 512 {
		t.Fatalf("/v1/models: %+v", ml)
	}
	var tk tokenizeResponse
	postOK(t, ts.url+"/tokenize", map[string]any{"model": "tiny", "prompt": onceUpon}, &tk)
	want := ts.e.Tokenizer().Encode(onceUpon, true, true)
	if tk.Count != len(want) || !slices.Equal(tk.Tokens, want) {
		t.Fatalf("/tokenize: %+v, want %v", tk, want)
	}
	var dt map[string]string
	postOK(t, ts.url+"/detokenize", map[string]any{"tokens": tk.Tokens[1:]}, &dt)
	if dt["prompt"] != onceUpon {
		t.Fatalf("/detokenize: %q", dt["prompt"])
	}
	var resp2 completionResponse
	postOK(t, ts.url+"/v1/completions", map[string]any{"model": "tiny", "prompt": "a", "max_tokens": 1}, &resp2)
	if resp2.Model != "tiny" {
		t.Fatalf("model %q", resp2.Model)
	}
}

// A client that never finishes its headers is disconnected after the
// header timeout.
func TestHeaderTimeout(t *testing.T) {
	s := New(Options{ReadHeaderTimeout: 100 * time.Millisecond})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go s.Serve(ln)
	defer s.Shutdown(context.Background())
	conn, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	io.WriteString(conn, "POST /v1/completions HTTP/1.1\r\nHost: x\r\n") // and nothing more
	conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	start := time.Now()
	_, err = io.ReadAll(conn)
	if err != nil || time.Since(start) > 4*time.Second {
		t.Fatalf("the server kept a connection without headers open (%v after %v)", err, time.Since(start))
	}
}
