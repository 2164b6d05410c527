package server

import (
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// httpMetrics are the HTTP metrics vLLM's API server exposes through
// prometheus-fastapi-instrumentator's default instrumentation, with its
// names, help texts, labels and buckets:
//
//	http_requests_total{handler,method,status}      counter
//	http_request_duration_seconds{handler,method}   histogram, buckets 0.1, 0.5, 1
//	http_request_duration_highr_seconds             histogram without labels, many buckets
//	http_request_size_bytes{handler}                summary (sum and count) of request bodies
//	http_response_size_bytes{handler}               summary of response bodies
//
// handler is the route's path pattern ("/v1/chat/completions",
// "/v1/models/{id...}"), "none" for a path no route serves; status is
// grouped as "2xx", "4xx", …; durations run to the end of the response
// (a stream's last event). The routes vLLM leaves out are not counted.
type httpMetrics struct {
	total                 *prometheus.CounterVec
	duration              *prometheus.HistogramVec
	durationHighr         prometheus.Histogram
	requestSize, respSize *prometheus.SummaryVec
}

// uninstrumented are the routes vLLM excludes from the HTTP metrics.
var uninstrumented = []string{"/metrics", "/health", "/load", "/ping", "/version", "/server_info"}

// instrumentHTTP registers the HTTP metrics on reg and returns mux
// observing them. It must wrap the mux itself: the mux records the route's
// pattern in the request it is given.
func instrumentHTTP(reg prometheus.Registerer, mux *http.ServeMux) http.Handler {
	m := &httpMetrics{
		total: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "http_requests_total",
			Help: "Total number of requests by method, status and handler."}, []string{"method", "status", "handler"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "http_request_duration_seconds",
			Help:    "Latency with only few buckets by handler. Made to be only used if aggregation by handler is important.",
			Buckets: []float64{0.1, 0.5, 1}}, []string{"method", "handler"}),
		durationHighr: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "http_request_duration_highr_seconds",
			Help: "Latency with many buckets but no API specific labels. Made for more accurate percentile calculations.",
			Buckets: []float64{0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1, 1.5, 2, 2.5, 3, 3.5, 4, 4.5, 5,
				7.5, 10, 30, 60}}),
		requestSize: prometheus.NewSummaryVec(prometheus.SummaryOpts{Name: "http_request_size_bytes",
			Help: "Content length of incoming requests by handler. Only value of header is respected. Otherwise ignored."},
			[]string{"handler"}),
		respSize: prometheus.NewSummaryVec(prometheus.SummaryOpts{Name: "http_response_size_bytes",
			Help: "Content length of outgoing responses by handler."}, []string{"handler"}),
	}
	reg.MustRegister(m.total, m.duration, m.durationHighr, m.requestSize, m.respSize)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		rec := &metricsRecorder{ResponseWriter: w}
		mux.ServeHTTP(rec, r)
		m.observe(r, rec, time.Since(start))
	})
}

// observe records one request, unless its route is uninstrumented.
func (m *httpMetrics) observe(r *http.Request, rec *metricsRecorder, d time.Duration) {
	handler := r.Pattern
	if _, path, ok := strings.Cut(handler, " "); ok {
		handler = path // "GET /v1/models" → "/v1/models"
	}
	switch {
	case slices.Contains(uninstrumented, handler):
		return
	case handler == "" || handler == "/":
		handler = "none" // the root's 404: no route serves the path
	}
	status := rec.status
	if status == 0 {
		status = http.StatusOK
	}
	m.total.WithLabelValues(r.Method, strconv.Itoa(status/100)+"xx", handler).Inc()
	m.duration.WithLabelValues(r.Method, handler).Observe(d.Seconds())
	m.durationHighr.Observe(d.Seconds())
	m.requestSize.WithLabelValues(handler).Observe(float64(max(r.ContentLength, 0)))
	m.respSize.WithLabelValues(handler).Observe(float64(rec.bytes))
}

// metricsRecorder records a response's status and body bytes. Streams
// flush through it (http.ResponseController: FlushError, Unwrap).
type metricsRecorder struct {
	http.ResponseWriter
	status int
	bytes  int64
}

func (w *metricsRecorder) WriteHeader(code int) {
	if w.status == 0 && code >= 200 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *metricsRecorder) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	n, err := w.ResponseWriter.Write(b)
	w.bytes += int64(n)
	return n, err
}

// FlushError flushes through the writers this one wraps, whichever of
// them implements it (http.ResponseController unwraps them).
func (w *metricsRecorder) FlushError() error {
	return http.NewResponseController(w.ResponseWriter).Flush()
}

// Unwrap lets http.ResponseController reach the connection's writer.
func (w *metricsRecorder) Unwrap() http.ResponseWriter { return w.ResponseWriter }
