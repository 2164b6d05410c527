package bench

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"strings"
	"sync"
	"testing"
)

// idleCloser closes a server's connections on demand, as llama.cpp's
// server closes an idle keep-alive connection when its timeout expires.
type idleCloser struct {
	mu    sync.Mutex
	conns map[string]net.Conn // by the client's address
}

func (s *idleCloser) connState(c net.Conn, st http.ConnState) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.conns[c.RemoteAddr().String()] = c
}

// close closes the server's end of the client's connection c.
func (s *idleCloser) close(c net.Conn) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.conns[c.LocalAddr().String()].Close()
}

// watchedConn tells when the client's transport closed it.
type watchedConn struct {
	net.Conn
	once   sync.Once
	closed chan struct{}
}

func (c *watchedConn) Close() error {
	c.once.Do(func() { close(c.closed) })
	return c.Conn.Close()
}

// A request that goes out on a keep-alive connection the server has just
// closed fails in Go's transport with "server closed idle connection"; the
// client sends it once more and counts the retry. The server closes the
// connection at the worst moment, after the transport took it from its
// idle pool and before it wrote the request.
func TestSendRetriesClosedIdleConnection(t *testing.T) {
	f := &fakeServer{usage: true}
	srv := httptest.NewUnstartedServer(f)
	closer := &idleCloser{conns: map[string]net.Conn{}}
	srv.Config.ConnState = closer.connState
	srv.Start()
	defer srv.Close()
	tr := &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return &watchedConn{Conn: c, closed: make(chan struct{})}, nil
	}}
	defer tr.CloseIdleConnections()
	ctx := httptrace.WithClientTrace(context.Background(), &httptrace.ClientTrace{
		GotConn: func(info httptrace.GotConnInfo) {
			if info.Reused { // the client read the whole last response: the connection is idle
				closer.close(info.Conn)
				<-info.Conn.(*watchedConn).closed // the transport saw the close
			}
		}})
	c := &Client{BaseURL: srv.URL, Endpoint: "/v1/completions", HTTP: &http.Client{Transport: tr}}
	p := Prompt{Text: "a b", InputLen: 2, OutputLen: 3}
	if res := c.Send(ctx, p); !res.Success || res.Retries != 0 {
		t.Fatalf("first request on a new connection: %+v", res)
	}
	retries := 0
	for i := range 8 {
		res := c.Send(ctx, p)
		if !res.Success || res.OutputTokens != 3 {
			t.Fatalf("request %d: %+v", i, res)
		}
		retries += res.Retries
	}
	// Go's transport retries by itself when it notices the close before
	// writing anything; the race it cannot see is the one the client
	// handles, which this server provokes every time but the first.
	if retries == 0 {
		t.Fatal("no request was retried: the server did not provoke the closed idle connection")
	}
	if n := len(f.bodies); n != 9 {
		t.Fatalf("the server handled %d requests, want 9 (a retried request reached it once)", n)
	}
}

// failingTransport fails the first fails round trips with err, then passes
// them to the default transport.
type failingTransport struct {
	err   error
	fails int
	calls int
}

func (t *failingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	t.calls++
	if t.calls <= t.fails {
		return nil, t.err
	}
	return http.DefaultTransport.RoundTrip(r)
}

// Only the closed idle connection is retried, and only once; the report
// counts retries.
func TestSendRetriesOnce(t *testing.T) {
	srv := httptest.NewServer(&fakeServer{usage: true})
	defer srv.Close()
	closed := errors.New("http: server closed idle connection")
	for _, tc := range []struct {
		name          string
		err           error
		fails         int
		ok            bool
		retries, sent int
	}{
		{"closed_once", closed, 1, true, 1, 2},
		{"closed_twice", closed, 2, false, 1, 2},
		{"other_error", errors.New("connection reset by peer"), 1, false, 0, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr := &failingTransport{err: tc.err, fails: tc.fails}
			c := &Client{BaseURL: srv.URL, Endpoint: "/v1/completions", HTTP: &http.Client{Transport: tr}}
			res := c.Send(context.Background(), Prompt{Text: "x", InputLen: 1, OutputLen: 2})
			if res.Success != tc.ok || res.Retries != tc.retries || tr.calls != tc.sent {
				t.Fatalf("success %v retries %d round trips %d (%s), want %v %d %d",
					res.Success, res.Retries, tr.calls, res.Error, tc.ok, tc.retries, tc.sent)
			}
			r := Summarize([]Result{res}, 1, []string{MetricTTFT}, []float64{99})
			var table strings.Builder
			r.WriteTable(&table)
			if r.Retries != tc.retries || !strings.Contains(table.String(), "Retried requests:") ||
				r.JSON(Meta{}, false)["retries"] != tc.retries {
				t.Fatalf("report retries %d, JSON %v, table:\n%s", r.Retries, r.JSON(Meta{}, false)["retries"], table.String())
			}
		})
	}
}
