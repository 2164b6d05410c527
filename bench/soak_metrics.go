package bench

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// ScrapeAll reads the Prometheus text exposition at baseURL/metrics and
// returns every metric's value summed over its series (labels ignored),
// e.g. vllm:num_requests_running over the model_name label.
func ScrapeAll(ctx context.Context, hc *http.Client, baseURL string) (map[string]float64, error) {
	body, err := getMetrics(ctx, hc, baseURL)
	if err != nil {
		return nil, err
	}
	defer body.Close()
	out := map[string]float64{}
	sc := metricLines(body)
	for sc.Scan() {
		if name, v, ok := parseSample(sc.Text()); ok {
			out[name] += v
		}
	}
	return out, sc.Err()
}

// parseSample splits a sample line "name{labels} value [timestamp]".
func parseSample(line string) (string, float64, bool) {
	line = strings.TrimSpace(line)
	if line == "" || line[0] == '#' {
		return "", 0, false
	}
	name, rest := line, ""
	if i := strings.IndexAny(line, "{ "); i >= 0 {
		name, rest = line[:i], line[i:]
	}
	if strings.HasPrefix(rest, "{") {
		j := strings.LastIndexByte(rest, '}')
		if j < 0 {
			return "", 0, false
		}
		rest = rest[j+1:]
	}
	f := strings.Fields(rest)
	if len(f) == 0 {
		return "", 0, false
	}
	v, err := strconv.ParseFloat(f[0], 64)
	return name, v, err == nil
}

// Gauges the soak waits to return to 0: the first name of each group that
// the server exports (vLLM renamed its KV usage gauge).
var settleGauges = [][]string{
	{"vllm:num_requests_running"},
	{"vllm:num_requests_waiting"},
	{"vllm:num_requests_swapped"},
	{"vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc"},
}

// rssMetric is the process collector's resident memory; preemptMetric
// vLLM's preemption counter.
const (
	rssMetric     = "process_resident_memory_bytes"
	preemptMetric = "vllm:num_preemptions_total"
)

// pickGauges returns the settle gauges m has, by name.
func pickGauges(m map[string]float64) map[string]float64 {
	out := map[string]float64{}
	for _, group := range settleGauges {
		for _, name := range group {
			if v, ok := m[name]; ok {
				out[name] = v
				break
			}
		}
	}
	return out
}

// settleResult is where the gauges ended after a soak.
type settleResult struct {
	Gauges  map[string]float64
	Settled bool
	After   time.Duration
	Err     string
	Last    map[string]float64 // the last scrape
}

// settleAttempts failed scrapes in a row end the wait: the server is gone.
const settleAttempts = 5

// settle polls /metrics until the running, waiting (and swapped) request
// gauges and the KV usage are all 0, or timeout passes, or settleAttempts
// scrapes in a row fail. Without the running, waiting and KV gauges it
// reports an error.
func settle(ctx context.Context, hc *http.Client, base string, timeout, every time.Duration) settleResult {
	start := time.Now()
	var r settleResult
	for failures := 0; failures < settleAttempts; {
		m, err := ScrapeAll(ctx, hc, base)
		failures++
		if err == nil {
			failures = 0
			r.Last = m
			r.Gauges = pickGauges(m)
			r.Err = ""
			if !hasKV(r.Gauges) {
				r.Err = "the server exports no vllm:num_requests_running, vllm:num_requests_waiting and KV usage gauges"
				return r
			}
			if allZero(r.Gauges) {
				r.Settled, r.After = true, time.Since(start)
				return r
			}
		} else {
			r.Err = err.Error()
		}
		if time.Since(start) >= timeout || !sleep(ctx, every) {
			break
		}
	}
	r.After = time.Since(start)
	return r
}

// hasKV reports whether g has the running, waiting and a KV usage gauge.
func hasKV(g map[string]float64) bool {
	_, a := g["vllm:kv_cache_usage_perc"]
	_, b := g["vllm:gpu_cache_usage_perc"]
	_, run := g["vllm:num_requests_running"]
	_, wait := g["vllm:num_requests_waiting"]
	return (a || b) && run && wait
}

func allZero(g map[string]float64) bool {
	for _, v := range g {
		if v != 0 {
			return false
		}
	}
	return true
}

// scrapeRSS is the server's resident memory in bytes, 0 when it does not
// export it.
func scrapeRSS(ctx context.Context, hc *http.Client, base string) float64 {
	m, err := ScrapeAll(ctx, hc, base)
	if err != nil {
		return 0
	}
	return m[rssMetric]
}
