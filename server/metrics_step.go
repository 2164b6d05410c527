package server

import (
	"github.com/prometheus/client_golang/prometheus"

	"pagoda/engine"
)

// stepMetrics are pagoda's own per-step counters (not vLLM's): where the
// engine's steps spend their time, summed over the steps, from
// engine.StepInfo. Divided by the step count (vllm:iteration_tokens_total's
// _count) they give the mean per-step breakdown that scripts/tp-netns.sh
// reports: forward = compute + communication + wait; duration − forward
// is the engine's own work (scheduling, sampling, bookkeeping).
type stepMetrics struct {
	duration, forward, compute, comm, wait prometheus.Counter
	split                                  prometheus.Counter // steps run as two micro-batches
}

func newStepMetrics(reg prometheus.Registerer, labels prometheus.Labels) *stepMetrics {
	counter := func(name, help string) prometheus.Counter {
		c := prometheus.NewCounter(prometheus.CounterOpts{Name: name, Help: help, ConstLabels: labels})
		reg.MustRegister(c)
		return c
	}
	return &stepMetrics{
		duration: counter("pagoda_step_duration_seconds_total", "Time of the engine's steps (schedule, execute, process)."),
		forward:  counter("pagoda_step_forward_seconds_total", "Time of the steps' forward passes."),
		compute: counter("pagoda_step_compute_seconds_total",
			"Forward-pass time outside communication calls (one process: all of it)."),
		comm: counter("pagoda_step_communication_seconds_total",
			"Time inside tensor-parallel communication calls that do not block: broadcasting the step, starting and driving all-reduces."),
		wait: counter("pagoda_step_wait_seconds_total",
			"Time blocked waiting for tensor-parallel all-reduces (a slower peer, or data still on the link)."),
		split: counter("pagoda_step_micro_batches_split_total", "Steps run as two micro-batches (dual-batch overlap)."),
	}
}

// observe adds one step.
func (m *stepMetrics) observe(si engine.StepInfo) {
	m.duration.Add(si.Duration.Seconds())
	m.forward.Add(si.Forward.Seconds())
	m.compute.Add(si.Compute.Seconds())
	m.comm.Add(si.Comm.Seconds())
	m.wait.Add(si.Wait.Seconds())
	if si.MicroBatches > 1 {
		m.split.Inc()
	}
}
