package bench

import (
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"time"
)

// SoakReport is the accounting of a soak. Every request sent is counted
// once: Sent = Completed + Aborted + Rejected + Lost. ServerErrors (5xx
// statuses and server_error stream events) are part of Lost; malformed
// requests are counted in those four too, and again in Malformed*.
type SoakReport struct {
	Model          string  `json:"model"`
	NumRequests    int     `json:"num_requests"`
	MaxConcurrency int     `json:"max_concurrency"`
	HangupRate     float64 `json:"hangup_rate"`
	MalformedRate  float64 `json:"malformed_rate"`
	Seed           uint64  `json:"seed"`
	DurationS      float64 `json:"duration_s"`

	Sent         int `json:"sent"`
	Completed    int `json:"completed"`
	Aborted      int `json:"aborted"`
	Rejected     int `json:"rejected"`
	Lost         int `json:"lost"`
	ServerErrors int `json:"server_errors_5xx"`

	// Hang-ups: planned, and those that came after the response had
	// already completed (counted as completed).
	HangupsPlanned int            `json:"hangups_planned"`
	HangupsMissed  int            `json:"hangups_missed"`
	AbortedByPhase map[string]int `json:"aborted_by_phase"`

	MalformedSent     int `json:"malformed_sent"`
	MalformedRejected int `json:"malformed_rejected"`
	// MalformedAccepted are malformed requests answered 2xx that a server
	// must refuse, by kind; MalformedOutcomes every malformed kind's
	// outcomes and statuses.
	MalformedAccepted map[string]int `json:"malformed_accepted"`
	MalformedOutcomes map[string]int `json:"malformed_outcomes"`

	// Reasons, digits folded to N: why requests were rejected or lost.
	RejectedReasons map[string]int `json:"rejected_reasons"`
	LostReasons     map[string]int `json:"lost_reasons"`
	// LostShapes counts the lost requests by shape; FirstLost is the
	// first lost request in plan order.
	LostShapes map[string]int `json:"lost_shapes"`
	// ByEndpoint counts the requests by endpoint and outcome
	// ("/v1/messages completed").
	ByEndpoint map[string]int `json:"by_endpoint"`
	FirstLost  string         `json:"first_lost,omitempty"`

	// Preemptions is the growth of vllm:num_preemptions_total during the
	// soak (when the server exports it).
	Preemptions float64 `json:"preemptions"`

	LatencyMs Percentiles `json:"latency_ms"` // completed requests

	// Structured is the structured-output share (nil without one).
	Structured *StructuredReport `json:"structured_outputs,omitempty"`

	Gauges      map[string]float64 `json:"gauges"`
	Settled     bool               `json:"gauges_settled"`
	SettleS     float64            `json:"settle_s"`
	GaugeError  string             `json:"gauge_error,omitempty"`
	RSS         RSSReport          `json:"rss_bytes"`
	ServerAlive bool               `json:"server_alive"`

	// Failures say why the soak failed; empty when it passed.
	Failures []string `json:"failures"`

	host string // the server's host:port, folded out of reasons
}

// Percentiles of a latency distribution, in milliseconds.
type Percentiles struct {
	P50 float64 `json:"p50"`
	P90 float64 `json:"p90"`
	P99 float64 `json:"p99"`
	Max float64 `json:"max"`
}

// RSSReport is the server's resident memory (0 when not exported) at the
// start, after warm-up (warmupFraction of the requests), and at the end.
type RSSReport struct {
	Start  float64 `json:"start"`
	Warmup float64 `json:"warmup"`
	End    float64 `json:"end"`
	// Growth is End / Warmup (0 when either is unknown).
	Growth float64 `json:"growth"`
}

func newSoakReport(cfg SoakConfig) *SoakReport {
	r := &SoakReport{Model: cfg.Model, NumRequests: cfg.NumRequests, MaxConcurrency: cfg.MaxConcurrency,
		HangupRate: cfg.HangupRate, MalformedRate: cfg.MalformedRate, Seed: cfg.Seed,
		AbortedByPhase: map[string]int{}, MalformedAccepted: map[string]int{}, MalformedOutcomes: map[string]int{},
		RejectedReasons: map[string]int{}, LostReasons: map[string]int{}, LostShapes: map[string]int{},
		ByEndpoint: map[string]int{}}
	if u, err := url.Parse(cfg.BaseURL); err == nil {
		r.host = u.Host
	}
	return r
}

// statusText is "HTTP 400", or "no status".
func statusText(code int) string {
	if code == 0 {
		return "no status"
	}
	return fmt.Sprintf("HTTP %d", code)
}

var digits = regexp.MustCompile(`[0-9]+`)

// foldReason makes reasons that differ only in numbers one: an HTTP
// status is kept, the server's address becomes "server", other digit runs
// become N.
func foldReason(reason, host string) string {
	if host != "" {
		reason = strings.ReplaceAll(reason, host, "server")
	}
	prefix := ""
	if strings.HasPrefix(reason, "HTTP ") && len(reason) >= 8 {
		prefix, reason = reason[:8], reason[8:]
	}
	reason = prefix + digits.ReplaceAllString(reason, "N")
	if len(reason) > 160 {
		reason = reason[:160] + "…"
	}
	return reason
}

// add counts one request's outcome.
func (r *SoakReport) add(req soakRequest, res soakResult) {
	r.Sent++
	r.ByEndpoint[req.Endpoint+" "+res.Outcome.String()]++
	if req.Hangup != NoHangup {
		r.HangupsPlanned++
		if res.Outcome == Completed {
			r.HangupsMissed++
		}
	}
	if req.Malformed != "" {
		r.MalformedSent++
		if res.Outcome == Rejected {
			r.MalformedRejected++
		}
		if res.Accepted {
			r.MalformedAccepted[req.Malformed]++
		}
		r.MalformedOutcomes[fmt.Sprintf("%s: %s %s", req.Malformed, res.Outcome, statusText(res.Status))]++
	}
	if res.ServerError {
		r.ServerErrors++
	}
	reason := foldReason(res.Reason, r.host)
	switch res.Outcome {
	case Completed:
		r.Completed++
	case Aborted:
		r.Aborted++
		r.AbortedByPhase[res.Reason]++
	case Rejected:
		r.Rejected++
		r.RejectedReasons[reason]++
	case Lost:
		r.Lost++
		r.LostReasons[reason]++
		r.LostShapes[req.Shape]++
		if r.FirstLost == "" {
			r.FirstLost = fmt.Sprintf("#%d %s (hang-up %s): %s", req.Index, req.Shape, req.Hangup, res.Reason)
		}
	}
}

// latencies sets the percentiles of the completed requests' latencies.
func (r *SoakReport) latencies(results []soakResult) {
	var ms []float64
	for _, res := range results {
		if res.Outcome == Completed && res.Latency > 0 {
			ms = append(ms, float64(res.Latency)/float64(time.Millisecond))
		}
	}
	if len(ms) == 0 {
		return
	}
	slices.Sort(ms)
	at := func(p float64) float64 { return ms[min(len(ms)-1, int(p*float64(len(ms))))] }
	r.LatencyMs = Percentiles{P50: at(0.5), P90: at(0.9), P99: at(0.99), Max: ms[len(ms)-1]}
}

// judge lists the failures: lost requests, server errors, no completed
// request at all, malformed requests accepted, gauges that did not return to 0, a dead server, and
// RSS growth beyond maxGrowth (when > 0).
func (r *SoakReport) judge(maxGrowth float64) {
	if r.RSS.Warmup > 0 && r.RSS.End > 0 {
		r.RSS.Growth = r.RSS.End / r.RSS.Warmup
	}
	fail := func(format string, args ...any) { r.Failures = append(r.Failures, fmt.Sprintf(format, args...)) }
	if r.Lost > 0 {
		fail("%d requests lost", r.Lost)
	}
	if r.Completed == 0 && r.Sent > r.MalformedSent {
		fail("no request completed")
	}
	if r.ServerErrors > 0 {
		fail("%d server errors (5xx)", r.ServerErrors)
	}
	if n := sumCounts(r.MalformedAccepted); n > 0 {
		fail("%d malformed requests accepted", n)
	}
	switch {
	case r.GaugeError != "":
		fail("gauges: %s", r.GaugeError)
	case !r.Settled:
		fail("gauges did not return to 0: %v", r.Gauges)
	}
	if !r.ServerAlive {
		fail("the server is not healthy after the soak")
	}
	if r.Structured != nil && r.Structured.OverLimitAccepted > 0 {
		fail("%d structured-output constraints over the limits accepted", r.Structured.OverLimitAccepted)
	}
	if maxGrowth > 0 && r.RSS.Growth > maxGrowth {
		fail("RSS grew ×%.2f after warm-up (limit ×%.2f)", r.RSS.Growth, maxGrowth)
	}
}

func sumCounts(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}
