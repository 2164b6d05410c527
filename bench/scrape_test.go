package bench

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
)

func TestScrapeMetric(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/metrics" {
			http.NotFound(w, r)
			return
		}
		fmt.Fprint(w, "# HELP go_gc_duration_seconds x\ngo_gc_duration_seconds{quantile=\"0\"} 1e-05\n"+
			"go_gc_duration_seconds_sum 0.5\ngo_gc_duration_seconds_count 42\n")
	}))
	defer srv.Close()
	v, err := ScrapeMetric(context.Background(), nil, srv.URL, "go_gc_duration_seconds_count")
	if err != nil || v != 42 {
		t.Fatalf("got %v, %v; want 42", v, err)
	}
	if _, err := ScrapeMetric(context.Background(), nil, srv.URL, "missing_metric"); err == nil {
		t.Fatal("missing metric: no error")
	}
}
