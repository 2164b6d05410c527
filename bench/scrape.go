package bench

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
)

// ScrapeMetric reads the Prometheus text exposition at baseURL/metrics
// and returns the value of the first sample named name (without labels),
// e.g. go_gc_duration_seconds_count, the server's GC cycles since start.
func ScrapeMetric(ctx context.Context, hc *http.Client, baseURL, name string) (float64, error) {
	req, err := http.NewRequestWithContext(ctx, "GET", strings.TrimRight(baseURL, "/")+"/metrics", nil)
	if err != nil {
		return 0, err
	}
	if hc == nil {
		hc = http.DefaultClient
	}
	resp, err := hc.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("GET /metrics: HTTP %d", resp.StatusCode)
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
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
