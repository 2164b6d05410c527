package server

import (
	"regexp"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// droppedGoFamily is the one family of the Go collector left out of
// /metrics: the counter go_memstats_alloc_bytes_total. In the OpenMetrics
// exposition (what Prometheus asks for) a counter's family is named without
// _total, so it would be a second family go_memstats_alloc_bytes beside the
// gauge of that name: a second HELP line, which Prometheus's parser and
// `promtool check metrics` reject. Its value stays exposed under its
// runtime/metrics name, go_gc_heap_allocs_bytes_total.
const droppedGoFamily = "go_memstats_alloc_bytes_total"

// newGoCollector is the Go runtime collector with the default metrics,
// /gc/heap/allocs:bytes, and without droppedGoFamily.
func newGoCollector() prometheus.Collector {
	c := collectors.NewGoCollector(collectors.WithGoCollectorRuntimeMetrics(
		collectors.GoRuntimeMetricsRule{Matcher: regexp.MustCompile(`^/gc/heap/allocs:bytes$`)}))
	return dropFamily{c, `fqName: "` + droppedGoFamily + `"`}
}

// dropFamily is a collector without the metrics whose descriptor mentions
// match (a Desc shows its name only through String).
type dropFamily struct {
	prometheus.Collector
	match string
}

func (d dropFamily) Describe(ch chan<- *prometheus.Desc) {
	all := make(chan *prometheus.Desc)
	go func() { d.Collector.Describe(all); close(all) }()
	for desc := range all {
		if !strings.Contains(desc.String(), d.match) {
			ch <- desc
		}
	}
}

func (d dropFamily) Collect(ch chan<- prometheus.Metric) {
	all := make(chan prometheus.Metric)
	go func() { d.Collector.Collect(all); close(all) }()
	for m := range all {
		if !strings.Contains(m.Desc().String(), d.match) {
			ch <- m
		}
	}
}
