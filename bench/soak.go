package bench

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// SoakConfig is a soak: NumRequests requests, MaxConcurrency at a time,
// planned from PlanConfig's seed, against BaseURL.
type SoakConfig struct {
	PlanConfig
	BaseURL        string
	APIKey         string
	NumRequests    int
	MaxConcurrency int
	// RequestTimeout bounds each request; one that runs out is lost.
	RequestTimeout time.Duration
	// StallTimeout is how long a raw request whose body never comes waits
	// for the server's answer before hanging up.
	StallTimeout time.Duration
	// SettleTimeout is how long to wait, after the last request, for the
	// running, waiting and KV usage gauges to return to 0.
	SettleTimeout time.Duration
	// MaxRSSGrowth, when > 0, fails the soak when the server's RSS at the
	// end exceeds its RSS after warm-up by more than this factor.
	MaxRSSGrowth float64
	HTTP         *http.Client
	Progress     io.Writer // progress lines, when set
}

// warmupFraction of the requests done marks the end of warm-up, when the
// soak reads the server's RSS for the flatness check.
const warmupFraction = 0.1

// soaker runs one soak.
type soaker struct {
	cfg  SoakConfig
	base string
	hc   *http.Client
	// scale is the typical latency (an exponential moving average, in
	// ns) of non-streamed requests, then of streams' first chunk: early
	// hang-ups land at a fraction of it.
	scale [2]atomic.Int64
	mu    sync.Mutex // serializes progress lines
}

// Soak runs the soak and reports it; an error means it could not run (bad
// configuration, no model). Failures of the server are in the report.
func Soak(ctx context.Context, cfg SoakConfig) (*SoakReport, error) {
	if cfg.Model == "" {
		m, err := FetchModel(ctx, cfg.HTTP, cfg.BaseURL, cfg.APIKey)
		if err != nil {
			return nil, fmt.Errorf("no --model given and none listed: %w", err)
		}
		cfg.Model = m
	}
	if err := cfg.PlanConfig.Validate(); err != nil {
		return nil, err
	}
	if cfg.NumRequests < 1 || cfg.MaxConcurrency < 1 {
		return nil, fmt.Errorf("want ≥ 1 request and concurrency ≥ 1, got %d and %d", cfg.NumRequests, cfg.MaxConcurrency)
	}
	s := &soaker{cfg: cfg, base: strings.TrimRight(cfg.BaseURL, "/"), hc: cfg.HTTP}
	if s.hc == nil {
		s.hc = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: cfg.MaxConcurrency}}
	}
	for i := range s.scale {
		s.scale[i].Store(int64(20 * time.Millisecond))
	}
	rep := newSoakReport(cfg)
	m0, _ := ScrapeAll(ctx, s.hc, s.base)
	rep.RSS.Start = m0[rssMetric]
	start := time.Now()
	results := s.run(ctx, rep)
	rep.DurationS = time.Since(start).Seconds()
	reqs := make([]soakRequest, len(results))
	for i, r := range results {
		reqs[i] = planRequest(cfg.PlanConfig, i)
		rep.add(reqs[i], r)
	}
	rep.latencies(results)
	if cfg.StructuredRate > 0 || cfg.HeavyRate > 0 {
		rep.structured(reqs, results)
	}
	st := settle(ctx, s.hc, s.base, cfg.SettleTimeout, 200*time.Millisecond)
	rep.Gauges, rep.Settled, rep.SettleS, rep.GaugeError = st.Gauges, st.Settled, st.After.Seconds(), st.Err
	rep.RSS.End = st.Last[rssMetric]
	p0, ok0 := m0[preemptMetric]
	if p1, ok1 := st.Last[preemptMetric]; ok0 && ok1 {
		rep.Preemptions = p1 - p0
	}
	rep.ServerAlive = healthy(ctx, s.hc, s.base)
	rep.judge(cfg.MaxRSSGrowth)
	return rep, nil
}

// run sends every request, MaxConcurrency at a time, and returns their
// results in plan order. After warmupFraction of them it reads the RSS.
func (s *soaker) run(ctx context.Context, rep *SoakReport) []soakResult {
	n := s.cfg.NumRequests
	results := make([]soakResult, n)
	next := make(chan int)
	var done atomic.Int64
	var wg sync.WaitGroup
	warm := max(1, int64(float64(n)*warmupFraction))
	for range s.cfg.MaxConcurrency {
		wg.Go(func() {
			for i := range next {
				results[i] = s.one(ctx, planRequest(s.cfg.PlanConfig, i))
				d := done.Add(1)
				if d == warm {
					rep.RSS.Warmup = scrapeRSS(ctx, s.hc, s.base)
				}
				s.progress(int(d), n)
			}
		})
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	return results
}

// one sends req and updates the latency scale.
func (s *soaker) one(ctx context.Context, req soakRequest) soakResult {
	ctx, cancel := context.WithTimeoutCause(ctx, s.cfg.RequestTimeout,
		fmt.Errorf("no answer within the request timeout of %v", s.cfg.RequestTimeout))
	defer cancel()
	if req.Raw != nil {
		return s.sendRaw(ctx, req, s.cfg.StallTimeout)
	}
	k := 0
	if req.Stream {
		k = 1
	}
	delay := time.Duration(req.HangupAt * float64(s.scale[k].Load()))
	res := s.sendHTTP(ctx, req, delay)
	obs := res.Latency
	if req.Stream {
		obs = res.TTFC
	}
	if obs > 0 {
		old := s.scale[k].Load()
		s.scale[k].Store(old + (int64(obs)-old)/16)
	}
	return res
}

// progress prints a line at every 10% of the requests.
func (s *soaker) progress(done, total int) {
	if s.cfg.Progress == nil || (done*10/total == (done-1)*10/total && done != total) {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	fmt.Fprintf(s.cfg.Progress, "soak: %d/%d requests done\n", done, total)
}

// healthy reports whether GET /health answers 200 (or, on a server
// without /health, whether GET /v1/models does).
func healthy(ctx context.Context, hc *http.Client, base string) bool {
	for _, path := range []string{"/health", "/v1/models"} {
		req, err := http.NewRequestWithContext(ctx, "GET", base+path, nil)
		if err != nil {
			return false
		}
		resp, err := hc.Do(req)
		if err != nil {
			return false
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusNotFound {
			return resp.StatusCode == http.StatusOK
		}
	}
	return false
}
