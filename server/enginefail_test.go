package server

import (
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"pagoda/dist"
	"pagoda/engine"
)

// deadRankComm is rank 0 of two whose other rank stops answering at the
// broadcast numbered failAt (1 is the cache layout, 2 the first step).
type deadRankComm struct {
	mu     sync.Mutex
	n      int
	failAt int
	broken error
}

func (c *deadRankComm) Rank() int { return 0 }
func (c *deadRankComm) Size() int { return 2 }
func (c *deadRankComm) Broadcast(msg []byte) ([]byte, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n++; c.n == c.failAt {
		c.broken = dist.ErrTimeout
	}
	return msg, c.broken
}
func (c *deadRankComm) err() error                                 { c.mu.Lock(); defer c.mu.Unlock(); return c.broken }
func (c *deadRankComm) Barrier() error                             { return c.err() }
func (c *deadRankComm) AllReduce([]float32) error                  { return c.err() }
func (c *deadRankComm) IAllReduce([]float32) (dist.Request, error) { return okRequest{}, c.err() }
func (c *deadRankComm) Progress() error                            { return c.err() }
func (c *deadRankComm) Close() error                               { return nil }

type okRequest struct{}

func (okRequest) Wait() error         { return nil }
func (okRequest) Test() (bool, error) { return true, nil }

// A tensor-parallel engine whose other rank stops answering mid-request:
// the stream in flight ends with an error event and [DONE], /health and
// /ready answer 503 with the reason, and new requests get a 503 error
// object (not a 500).
func TestEngineFailedIs503(t *testing.T) {
	ts := newTestServer(t, func(c *engine.Config) {
		c.TensorParallel, c.EnforceEager, c.NumBlocksOverride = &deadRankComm{failAt: 3}, true, 64
	}, Options{})
	events := stream(t, ts.url+"/v1/completions", map[string]any{"prompt": "Once upon a time", "max_tokens": 16, "stream": true})
	// stream checked the final [DONE]; before it, the error event.
	if last := events[len(events)-1]; len(events) < 2 || !strings.Contains(last, `"error"`) || !strings.Contains(last, "engine failed") {
		t.Fatalf("stream when the rank stops answering: %q", events)
	}
	select {
	case <-ts.e.Dead():
	case <-time.After(10 * time.Second):
		t.Fatal("the engine is not dead")
	}
	for _, path := range []string{"/health", "/ready"} {
		resp, err := http.Get(ts.url + path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(string(body), "timed out") {
			t.Fatalf("%s after the failure: %d %s", path, resp.StatusCode, body)
		}
	}
	code, body := post(t, ts.url+"/v1/completions", map[string]any{"prompt": "Hi", "max_tokens": 4})
	if code != http.StatusServiceUnavailable || !strings.Contains(string(body), `"error"`) || !strings.Contains(string(body), "engine failed") {
		t.Fatalf("a new request: %d %s", code, body)
	}
	if !errors.Is(ts.e.Failed(), engine.ErrEngineFailed) {
		t.Fatal(ts.e.Failed())
	}
}

// A plain (not streamed) request in flight when the rank stops answering
// gets a 503.
func TestEngineFailedPlainRequest(t *testing.T) {
	ts := newTestServer(t, func(c *engine.Config) {
		c.TensorParallel, c.EnforceEager, c.NumBlocksOverride = &deadRankComm{failAt: 4}, true, 64
	}, Options{})
	code, body := post(t, ts.url+"/v1/completions", map[string]any{"prompt": "Once upon a time", "max_tokens": 16})
	if code != http.StatusServiceUnavailable || !strings.Contains(string(body), "engine failed") {
		t.Fatalf("a request in flight: %d %s", code, body)
	}
}
