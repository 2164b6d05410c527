package bench

import (
	"bytes"
	"context"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

func testSoakConfig(base string, n int) SoakConfig {
	return SoakConfig{PlanConfig: testPlanConfig(), BaseURL: base, NumRequests: n, MaxConcurrency: 8,
		RequestTimeout: time.Minute, StallTimeout: 100 * time.Millisecond, SettleTimeout: 2 * time.Second}
}

// fakeSoak runs cfg against a fake server that misbehaves as asked.
func fakeSoak(t *testing.T, cfg SoakConfig, misbehave func(soakRequest) string,
	setup func(*soakServer, *httptest.Server)) (*SoakReport, *soakServer) {
	t.Helper()
	f, srv := newSoakServer(t, cfg, misbehave)
	if setup != nil {
		setup(f, srv)
	}
	cfg.BaseURL = srv.URL
	rep, err := Soak(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if sum := rep.Completed + rep.Aborted + rep.Rejected + rep.Lost; rep.Sent != cfg.NumRequests || sum != rep.Sent {
		t.Fatalf("sent %d of %d, completed+aborted+rejected+lost = %d", rep.Sent, cfg.NumRequests, sum)
	}
	return rep, f
}

func report(rep *SoakReport) string {
	var b bytes.Buffer
	rep.WriteText(&b, true)
	return b.String()
}

// A server that answers everything well passes: hang-ups are aborts,
// malformed requests rejections, nothing is lost.
func TestSoakWellBehavedServer(t *testing.T) {
	cfg := testSoakConfig("", 400)
	cfg.MalformedRate = 0.1
	rep, _ := fakeSoak(t, cfg, func(soakRequest) string { return fakeOK }, nil)
	if len(rep.Failures) > 0 || rep.Lost > 0 || rep.ServerErrors > 0 || rep.Aborted == 0 || rep.Completed == 0 ||
		rep.MalformedSent == 0 || !rep.Settled || !rep.ServerAlive || rep.RSS.End != 1.5e7 || rep.Model != "m" {
		t.Fatalf("report:\n%s", report(rep))
	}
	unknown := 0
	for i := range cfg.NumRequests {
		if r := planRequest(cfg.PlanConfig, i); r.Malformed == "unknown-field" {
			unknown++
		}
	}
	// Stalled bodies are hung up on; unknown fields may be accepted.
	stalled := rep.AbortedByPhase[phaseStalled]
	if rep.MalformedRejected+unknown+stalled != rep.MalformedSent {
		t.Fatalf("malformed: %d sent, %d rejected, %d unknown fields, %d stalled\n%s",
			rep.MalformedSent, rep.MalformedRejected, unknown, stalled, report(rep))
	}
	if !strings.Contains(report(rep), "PASS") {
		t.Fatalf("no PASS:\n%s", report(rep))
	}
}

// Dropped connections, 500s, truncated streams, streams without
// finish_reason, server_error events and missing choices are lost (5xx
// counted too); 503s are rejections.
func TestSoakMisbehavingServer(t *testing.T) {
	cfg := testSoakConfig("", 350)
	cfg.HangupRate, cfg.MalformedRate = 0, 0
	how := func(r soakRequest) string {
		return []string{fakeDrop, fake500, fake503, fakeTruncate, fakeNoFinish, fakeErrEvent, fakeChoices, fakeOK}[r.Index%8]
	}
	var lost, fivexx, rejected int
	for i := range cfg.NumRequests {
		r := planRequest(cfg.PlanConfig, i)
		switch h := how(r); {
		case h == fakeDrop, h == fakeChoices && !r.Stream, (h == fakeTruncate || h == fakeNoFinish) && r.Stream:
			lost++
		case h == fake500, h == fakeErrEvent && r.Stream:
			lost++
			fivexx++
		case h == fake503:
			rejected++
		}
	}
	rep, _ := fakeSoak(t, cfg, how, nil)
	if rep.Lost != lost || rep.ServerErrors != fivexx || rep.Rejected != rejected {
		t.Fatalf("lost %d, 5xx %d, rejected %d; want %d, %d, %d\n%s", rep.Lost, rep.ServerErrors, rep.Rejected,
			lost, fivexx, rejected, report(rep))
	}
	text := report(rep)
	for _, want := range []string{"FAIL", "requests lost", "server errors (5xx)", "without [DONE]", "choices finished",
		"stream error event: boom", "HTTP 500", "first lost: #0"} {
		if !strings.Contains(text, want) {
			t.Errorf("the report lacks %q:\n%s", want, text)
		}
	}
}

// Hang-ups are aborts (or completions when the answer came first), at
// every phase; none is lost, and the server sees the disconnections.
func TestSoakHangups(t *testing.T) {
	cfg := testSoakConfig("", 300)
	cfg.HangupRate, cfg.MalformedRate = 1, 0
	rep, f := fakeSoak(t, cfg, func(soakRequest) string { return fakeOK }, func(f *soakServer, _ *httptest.Server) { f.delay = 10 * time.Millisecond })
	if rep.Lost > 0 || rep.HangupsPlanned != 300 || rep.Aborted+rep.HangupsMissed != 300 || len(rep.Failures) > 0 ||
		f.disconnects.Load() == 0 {
		t.Fatalf("report:\n%s", report(rep))
	}
	for _, phase := range []string{phaseMidStream, phaseBeforeResponse} {
		if rep.AbortedByPhase[phase] == 0 {
			t.Errorf("no hang-up %s:\n%s", phase, report(rep))
		}
	}
}

// Gauges that stay above 0 fail the soak.
func TestSoakGaugesNotSettled(t *testing.T) {
	cfg := testSoakConfig("", 20)
	cfg.SettleTimeout = 300 * time.Millisecond
	rep, _ := fakeSoak(t, cfg, func(soakRequest) string { return fakeOK }, func(f *soakServer, _ *httptest.Server) { f.stuck = true })
	if rep.Settled || rep.Gauges["vllm:num_requests_running"] != 1 || !strings.Contains(strings.Join(rep.Failures, ";"), "did not return to 0") {
		t.Fatalf("report:\n%s", report(rep))
	}
}

// A server that accepts malformed bodies fails the soak, by kind; unknown
// fields may be accepted.
func TestSoakMalformedAccepted(t *testing.T) {
	cfg := testSoakConfig("", 300)
	cfg.HangupRate, cfg.MalformedRate = 0, 1
	rep, _ := fakeSoak(t, cfg, func(soakRequest) string { return fakeAcceptAll }, nil)
	if rep.MalformedAccepted["empty-prompt"] == 0 || rep.MalformedAccepted["huge-max-tokens"] == 0 ||
		rep.MalformedAccepted["unknown-field"] != 0 || rep.AbortedByPhase[phaseStalled] == 0 ||
		!strings.Contains(strings.Join(rep.Failures, ";"), "malformed requests accepted") {
		t.Fatalf("report:\n%s", report(rep))
	}
	if rep.MalformedOutcomes["content-length-huge: rejected HTTP 413"] == 0 {
		t.Fatalf("the announced 1 TiB body was not refused with 413:\n%s", report(rep))
	}
}

// A server that dies during the soak: the requests after are lost, the
// gauges cannot be read, the server is not alive.
func TestSoakServerDies(t *testing.T) {
	cfg := testSoakConfig("", 200)
	cfg.HangupRate, cfg.MalformedRate, cfg.SettleTimeout = 0, 0, 200*time.Millisecond
	var die sync.Once
	var srv *httptest.Server
	rep, _ := fakeSoak(t, cfg, func(r soakRequest) string {
		if r.Index == 50 {
			die.Do(func() {
				srv.Listener.Close()
				srv.CloseClientConnections()
			})
			return fakeDrop
		}
		return fakeOK
	}, func(_ *soakServer, s *httptest.Server) { srv = s })
	if rep.Lost < 200-50-cfg.MaxConcurrency || rep.ServerAlive || rep.GaugeError == "" ||
		!strings.Contains(strings.Join(rep.Failures, ";"), "not healthy") {
		t.Fatalf("report:\n%s", report(rep))
	}
}

func TestFoldReason(t *testing.T) {
	for in, want := range map[string]string{
		`HTTP 400: prompt has 150 tokens, over 128`:                        `HTTP 400: prompt has N tokens, over N`,
		`Post "http://127.0.0.1:8000/v1/completions": EOF`:                 `Post "http://server/vN/completions": EOF`,
		`dial tcp 127.0.0.1:8000: connect: connection refused`:             `dial tcp server: connect: connection refused`,
		`HTTP 503: 70 requests are waiting, over the limit of 64 (--max-q`: `HTTP 503: N requests are waiting, over the limit of N (--max-q`,
	} {
		if got := foldReason(in, "127.0.0.1:8000"); got != want {
			t.Errorf("foldReason(%q) = %q, want %q", in, got, want)
		}
	}
}
