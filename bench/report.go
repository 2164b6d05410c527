package bench

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Metric names for --percentile-metrics, as vLLM spells them.
const (
	MetricTTFT = "ttft"
	MetricTPOT = "tpot"
	MetricITL  = "itl"
	MetricE2EL = "e2el"
)

// metricTitles are the section titles of vLLM's result table.
var metricTitles = map[string][2]string{
	MetricTTFT: {"Time to First Token", "TTFT"},
	MetricTPOT: {"Time per Output Token (excl. 1st token)", "TPOT"},
	MetricITL:  {"Inter-token Latency", "ITL"},
	MetricE2EL: {"End-to-end Latency", "E2EL"},
}

// Stats summarize one latency metric in milliseconds.
type Stats struct {
	Mean, Median, Std float64
	Percentiles       []Percentile
}

// Percentile is one requested percentile of a metric, in milliseconds.
type Percentile struct {
	P     float64
	Value float64
}

// Report is a benchmark's outcome; JSON gives vLLM's field names.
type Report struct {
	Completed, Failed          int
	Retries                    int // requests sent twice (see Client.Send)
	Duration                   time.Duration
	TotalInput, TotalOutput    int
	RequestThroughput          float64 // completed requests/s
	OutputThroughput           float64 // output tokens/s
	TotalTokenThroughput       float64 // (input + output) tokens/s
	Metrics                    map[string]Stats
	MetricOrder                []string
	InputLens, OutputLens      []int
	TTFTs, Latencies           []float64 // seconds, per request (0 for failures)
	ITLs                       [][]float64
	Errors, GeneratedTexts     []string
	MaxConcurrency             int
	RequestRate                float64
	UsageReported, NumRequests int
}

// Summarize computes the report of results over duration d for the named
// metrics (ttft, tpot, itl, e2el) at the given percentiles (0..100).
func Summarize(results []Result, d time.Duration, metrics []string, percentiles []float64) Report {
	r := Report{Duration: d, Metrics: map[string]Stats{}, MetricOrder: metrics, NumRequests: len(results)}
	var ttft, tpot, itl, e2el []float64
	for _, res := range results {
		r.Errors = append(r.Errors, res.Error)
		r.GeneratedTexts = append(r.GeneratedTexts, res.Text)
		r.InputLens = append(r.InputLens, res.PromptTokens)
		r.OutputLens = append(r.OutputLens, res.OutputTokens)
		r.TTFTs = append(r.TTFTs, res.TTFT.Seconds())
		r.Latencies = append(r.Latencies, res.Latency.Seconds())
		r.ITLs = append(r.ITLs, seconds(res.ITL))
		r.Retries += res.Retries
		if !res.Success {
			r.Failed++
			continue
		}
		r.Completed++
		if res.UsageReported {
			r.UsageReported++
		}
		r.TotalInput += res.PromptTokens
		r.TotalOutput += res.OutputTokens
		ttft = append(ttft, ms(res.TTFT))
		e2el = append(e2el, ms(res.Latency))
		if res.OutputTokens > 1 {
			tpot = append(tpot, ms(res.Latency-res.TTFT)/float64(res.OutputTokens-1))
		}
		for _, g := range res.ITL {
			itl = append(itl, ms(g))
		}
	}
	if s := d.Seconds(); s > 0 {
		r.RequestThroughput = float64(r.Completed) / s
		r.OutputThroughput = float64(r.TotalOutput) / s
		r.TotalTokenThroughput = float64(r.TotalInput+r.TotalOutput) / s
	}
	values := map[string][]float64{MetricTTFT: ttft, MetricTPOT: tpot, MetricITL: itl, MetricE2EL: e2el}
	for _, m := range metrics {
		r.Metrics[m] = summarize(values[m], percentiles)
	}
	return r
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func seconds(ds []time.Duration) []float64 {
	out := make([]float64, len(ds))
	for i, d := range ds {
		out[i] = d.Seconds()
	}
	return out
}

// summarize is mean, median, population std and percentiles (linear
// interpolation, as numpy.percentile) of xs; all 0 for no values.
func summarize(xs []float64, percentiles []float64) Stats {
	var s Stats
	sorted := slices.Sorted(slices.Values(xs))
	if len(sorted) > 0 {
		sum := 0.0
		for _, x := range sorted {
			sum += x
		}
		s.Mean = sum / float64(len(sorted))
		v := 0.0
		for _, x := range sorted {
			v += (x - s.Mean) * (x - s.Mean)
		}
		s.Std = math.Sqrt(v / float64(len(sorted)))
		s.Median = percentile(sorted, 50)
	}
	for _, p := range percentiles {
		s.Percentiles = append(s.Percentiles, Percentile{P: p, Value: percentile(sorted, p)})
	}
	return s
}

// percentile of sorted values by linear interpolation between closest ranks.
func percentile(sorted []float64, p float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	pos := p / 100 * float64(len(sorted)-1)
	lo := int(math.Floor(pos))
	hi := min(lo+1, len(sorted)-1)
	return sorted[lo] + (pos-float64(lo))*(sorted[hi]-sorted[lo])
}

// pName formats a percentile for keys and labels: 99 → "99", 99.9 → "99.9".
func pName(p float64) string { return strconv.FormatFloat(p, 'f', -1, 64) }

// WriteTable prints vLLM's result table.
func (r *Report) WriteTable(w io.Writer) {
	line := func(label string, v any) {
		switch x := v.(type) {
		case float64:
			fmt.Fprintf(w, "%-40s %.2f\n", label, x)
		default:
			fmt.Fprintf(w, "%-40s %v\n", label, x)
		}
	}
	fmt.Fprintf(w, "%s\n", center(" Serving Benchmark Result ", '='))
	line("Successful requests:", r.Completed)
	line("Failed requests:", r.Failed)
	line("Retried requests:", r.Retries)
	if r.MaxConcurrency > 0 {
		line("Maximum request concurrency:", r.MaxConcurrency)
	}
	if r.RequestRate > 0 && !math.IsInf(r.RequestRate, 1) {
		line("Request rate configured (RPS):", r.RequestRate)
	}
	line("Benchmark duration (s):", r.Duration.Seconds())
	line("Total input tokens:", r.TotalInput)
	line("Total generated tokens:", r.TotalOutput)
	line("Request throughput (req/s):", r.RequestThroughput)
	line("Output token throughput (tok/s):", r.OutputThroughput)
	line("Total Token throughput (tok/s):", r.TotalTokenThroughput)
	for _, m := range r.MetricOrder {
		t, s := metricTitles[m], r.Metrics[m]
		fmt.Fprintf(w, "%s\n", center(t[0], '-'))
		line(fmt.Sprintf("Mean %s (ms):", t[1]), s.Mean)
		line(fmt.Sprintf("Median %s (ms):", t[1]), s.Median)
		for _, p := range s.Percentiles {
			line(fmt.Sprintf("P%s %s (ms):", pName(p.P), t[1]), p.Value)
		}
	}
	fmt.Fprintln(w, strings.Repeat("=", 50))
}

// center pads title to 50 characters with fill, as vLLM's table does.
func center(title string, fill rune) string {
	pad := max(0, 50-len([]rune(title)))
	left := pad / 2
	return strings.Repeat(string(fill), left) + title + strings.Repeat(string(fill), pad-left)
}
