package bench

import (
	"cmp"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
)

// WriteText prints the report for people: the accounting, the reasons
// behind rejections and losses (most frequent first), latencies, gauges,
// RSS and the verdict; verbose adds the outcomes of every malformed kind.
func (r *SoakReport) WriteText(w io.Writer, verbose bool) {
	line := func(format string, args ...any) { fmt.Fprintf(w, format+"\n", args...) }
	line("============ Soak Result ============")
	line("%-34s %s", "Model:", r.Model)
	line("%-34s %d at concurrency %d, seed %d", "Requests:", r.NumRequests, r.MaxConcurrency, r.Seed)
	line("%-34s %.2f", "Duration (s):", r.DurationS)
	line("%-34s %d", "Sent:", r.Sent)
	if len(r.ByEndpoint) > 0 {
		line("  by endpoint and outcome:")
		for _, k := range slices.Sorted(maps.Keys(r.ByEndpoint)) {
			fmt.Fprintf(w, "    %6d  %s\n", r.ByEndpoint[k], k)
		}
	}
	line("%-34s %d", "Completed:", r.Completed)
	line("%-34s %d (of %d hang-ups planned; %d came after the response)", "Aborted (client hang-ups):",
		r.Aborted, r.HangupsPlanned, r.HangupsMissed)
	counts(w, r.AbortedByPhase, 10)
	line("%-34s %d", "Rejected (4xx, 503):", r.Rejected)
	counts(w, r.RejectedReasons, 8)
	line("%-34s %d", "Lost:", r.Lost)
	counts(w, r.LostReasons, 10)
	if len(r.LostShapes) > 0 {
		line("  lost by shape:")
		counts(w, r.LostShapes, 10)
		line("  first lost: %s", r.FirstLost)
	}
	line("%-34s %d", "Server errors (5xx):", r.ServerErrors)
	line("%-34s %d sent, %d rejected, %d accepted wrongly", "Malformed:", r.MalformedSent, r.MalformedRejected,
		sumCounts(r.MalformedAccepted))
	counts(w, r.MalformedAccepted, 20)
	if verbose && len(r.MalformedOutcomes) > 0 {
		line("  malformed outcomes:")
		counts(w, r.MalformedOutcomes, 100)
	}
	line("%-34s %g", "Preemptions during the soak:", r.Preemptions)
	line("%-34s p50 %.1f  p90 %.1f  p99 %.1f  max %.1f", "Latency of completed (ms):",
		r.LatencyMs.P50, r.LatencyMs.P90, r.LatencyMs.P99, r.LatencyMs.Max)
	if s := r.Structured; s != nil {
		line("%-34s %v sent, %v completed, %d over-limit accepted", "Structured outputs:", s.Sent, s.Completed, s.OverLimitAccepted)
		line("%-34s %d; TTFT (streamed) p50 %.1f  p90 %.1f  p99 %.1f  max %.1f", "Bystanders (no constraint), ms:",
			s.Bystanders, s.BystanderTTFTMs.P50, s.BystanderTTFTMs.P90, s.BystanderTTFTMs.P99, s.BystanderTTFTMs.Max)
		line("  %-32s p50 %.1f  p90 %.1f  p99 %.1f  max %.1f", "bystander latency:",
			s.BystanderLatencyMs.P50, s.BystanderLatencyMs.P90, s.BystanderLatencyMs.P99, s.BystanderLatencyMs.Max)
	}
	settled := fmt.Sprintf("settled in %.1fs", r.SettleS)
	if !r.Settled {
		settled = fmt.Sprintf("NOT settled after %.1fs", r.SettleS)
	}
	if r.GaugeError != "" {
		settled = r.GaugeError
	}
	line("%-34s %s", "Gauges after the soak:", settled)
	for _, k := range slices.Sorted(maps.Keys(r.Gauges)) {
		line("  %-32s %g", k, r.Gauges[k])
	}
	line("%-34s start %s, after warm-up %s, end %s (×%.2f)", "Server RSS:", mib(r.RSS.Start), mib(r.RSS.Warmup),
		mib(r.RSS.End), r.RSS.Growth)
	line("%-34s %v", "Server alive:", r.ServerAlive)
	if len(r.Failures) == 0 {
		line("PASS")
	} else {
		line("FAIL: %s", strings.Join(r.Failures, "; "))
	}
	line("=====================================")
}

// counts prints the top entries of m, most frequent first.
func counts(w io.Writer, m map[string]int, top int) {
	keys := slices.SortedFunc(maps.Keys(m), func(a, b string) int {
		return cmp.Or(cmp.Compare(m[b], m[a]), cmp.Compare(a, b))
	})
	for i, k := range keys {
		if i == top {
			fmt.Fprintf(w, "    … %d more\n", len(keys)-top)
			break
		}
		fmt.Fprintf(w, "    %6d  %s\n", m[k], k)
	}
}

func mib(b float64) string {
	if b == 0 {
		return "n/a"
	}
	return fmt.Sprintf("%.1f MiB", b/(1<<20))
}
