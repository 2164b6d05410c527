package bench

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
)

// ScrapeMetric reads the Prometheus text exposition at baseURL/metrics
// and returns the value of the first sample named name (without labels),
// e.g. go_gc_duration_seconds_count, the server's GC cycles since start.
func ScrapeMetric(ctx context.Context, hc *http.Client, baseURL, name string) (float64, error) {
	body, err := getMetrics(ctx, hc, baseURL)
	if err != nil {
		return 0, err
	}
	defer body.Close()
	sc := metricLines(body)
	for sc.Scan() {
		rest, ok := strings.CutPrefix(sc.Text(), name+" ")
		if !ok {
			continue
		}
		return strconv.ParseFloat(strings.TrimSpace(rest), 64)
	}
	if err := sc.Err(); err != nil {
		return 0, err
	}
	return 0, fmt.Errorf("GET /metrics: no sample %s", name)
}

// getMetrics opens the Prometheus text exposition at baseURL/metrics (hc
// nil: http.DefaultClient).
func getMetrics(ctx context.Context, hc *http.Client, baseURL string) (io.ReadCloser, error) {
	req, err := newAPIRequest(ctx, "GET", strings.TrimRight(baseURL, "/")+"/metrics", "", nil)
	if err != nil {
		return nil, err
	}
	if hc == nil {
		hc = http.DefaultClient
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		return nil, fmt.Errorf("GET /metrics: HTTP %d", resp.StatusCode)
	}
	return resp.Body, nil
}

// metricLines scans an exposition's lines (up to 1 MiB each).
func metricLines(body io.Reader) *bufio.Scanner {
	sc := bufio.NewScanner(body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	return sc
}
