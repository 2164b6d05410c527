package server

import (
	"maps"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"pagoda/engine"
)

// metrics are vLLM's Prometheus metrics, with the same names, types, help
// texts and labels (model_name and engine on every series), so that dashboards,
// autoscalers and gateways built for vLLM read pagoda unchanged. Counters
// carry the _total suffix in the exposition, as prometheus_client writes
// them for vLLM. Gauges and counters that mirror engine state are read from
// engine.Stats at scrape time; the request histograms are observed by the
// handlers; iteration tokens by the stats loop.
type metrics struct {
	ttft, e2e, queue           prometheus.Histogram // observed with an exemplar
	prefill, decode, inference prometheus.Histogram // observed with an exemplar
	itl, tpot                  prometheus.Observer  // once per token interval
	requestTPOT                prometheus.Observer  // once per request: its decode time per output token
	promptToks, genToks        prometheus.Observer
	maxGenToks, prefillKV      prometheus.Observer
	paramsN, paramsMaxTokens   prometheus.Observer
	iterToks                   prometheus.Observer
	cachedToks                 prometheus.Counter
	step                       stepMetrics
	success                    *prometheus.CounterVec // finished_reason
	finishReasons              []string
	modelName                  string
}

// vLLM's bucket boundaries.
var (
	ttftBuckets = []float64{0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0,
		2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0, 160.0, 640.0, 2560.0}
	itlBuckets = []float64{0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0,
		2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0}
	latencyBuckets = []float64{0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0,
		40.0, 50.0, 60.0, 120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0}
	nBuckets = []float64{1, 2, 5, 10, 20}
)

// buckets125 is vLLM's build_1_2_5_buckets: 1, 2, 5, 10, 20, 50, ... ≤ max.
func buckets125(max int) []float64 {
	var out []float64
	for exp := 1; ; exp *= 10 {
		for _, m := range []int{1, 2, 5} {
			if m*exp > max {
				return out
			}
			out = append(out, float64(m*exp))
		}
	}
}

// iterationBuckets are powers of two up to the step token budget, then the
// budget itself (vLLM: the captured batch sizes and max_num_batched_tokens).
func iterationBuckets(maxBatched int) []float64 {
	var out []float64
	for b := 1; b < maxBatched; b *= 2 {
		out = append(out, float64(b))
	}
	return append(out, float64(maxBatched))
}

// engineIndex is the value of vLLM's engine label, the index of the engine
// core a series comes from: one engine serves per pagoda process (replicas
// are separate servers), so always "0", as vLLM's single engine.
const engineIndex = "0"

// newMetrics registers the vLLM metrics of e, served as modelName, on reg.
func newMetrics(reg prometheus.Registerer, e *engine.Engine, modelName string) *metrics {
	labels := prometheus.Labels{"model_name": modelName, "engine": engineIndex}
	cfg := e.Config()
	hist := func(name, help string, buckets []float64) prometheus.Histogram {
		h := prometheus.NewHistogram(prometheus.HistogramOpts{Name: name, Help: help, Buckets: buckets, ConstLabels: labels})
		reg.MustRegister(h)
		return h
	}
	m := &metrics{modelName: modelName, finishReasons: []string{engine.FinishStop, engine.FinishLength, engine.FinishAbort}}
	m.ttft = hist("vllm:time_to_first_token_seconds", "Histogram of time to first token in seconds.", ttftBuckets)
	m.itl = hist("vllm:inter_token_latency_seconds", "Histogram of inter-token latency in seconds.", itlBuckets)
	m.tpot = hist("vllm:time_per_output_token_seconds", "Histogram of time per output token in seconds.", itlBuckets)
	m.requestTPOT = hist("vllm:request_time_per_output_token_seconds",
		"Histogram of time_per_output_token_seconds per request.", itlBuckets)
	m.e2e = hist("vllm:e2e_request_latency_seconds", "Histogram of e2e request latency in seconds.", latencyBuckets)
	m.queue = hist("vllm:request_queue_time_seconds", "Histogram of time spent in WAITING phase for request.", latencyBuckets)
	m.inference = hist("vllm:request_inference_time_seconds", "Histogram of time spent in RUNNING phase for request.",
		latencyBuckets)
	m.prefill = hist("vllm:request_prefill_time_seconds", "Histogram of time spent in PREFILL phase for request.",
		latencyBuckets)
	m.decode = hist("vllm:request_decode_time_seconds", "Histogram of time spent in DECODE phase for request.",
		latencyBuckets)
	m.promptToks = hist("vllm:request_prompt_tokens", "Number of prefill tokens processed.", buckets125(cfg.MaxModelLen))
	m.genToks = hist("vllm:request_generation_tokens", "Number of generation tokens processed.", buckets125(cfg.MaxModelLen))
	m.maxGenToks = hist("vllm:request_max_num_generation_tokens",
		"Histogram of maximum number of requested generation tokens.", buckets125(cfg.MaxModelLen))
	m.prefillKV = hist("vllm:request_prefill_kv_computed_tokens",
		"Histogram of new KV tokens computed during prefill (excluding cached tokens).", buckets125(cfg.MaxModelLen))
	m.paramsN = hist("vllm:request_params_n", "Histogram of the n request parameter.", nBuckets)
	m.paramsMaxTokens = hist("vllm:request_params_max_tokens", "Histogram of the max_tokens request parameter.",
		buckets125(cfg.MaxModelLen))
	m.iterToks = hist("vllm:iteration_tokens_total", "Histogram of number of tokens per engine_step.",
		iterationBuckets(cfg.MaxNumBatchedTokens))
	m.step = newStepMetrics(reg, labels, hist)
	m.success = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "vllm:request_success_total",
		Help: "Count of successfully processed requests.", ConstLabels: labels}, []string{"finished_reason"})
	reg.MustRegister(m.success)
	m.cachedToks = prometheus.NewCounter(prometheus.CounterOpts{Name: "vllm:prompt_tokens_cached_total",
		Help: "Number of cached prompt tokens (local + external).", ConstLabels: labels})
	reg.MustRegister(m.cachedToks)
	for _, r := range m.finishReasons {
		m.success.WithLabelValues(r) // every reason is exposed from the start
	}
	registerStateMetrics(reg, e, labels)
	registerCacheConfig(reg, e, labels)
	registerSpecMetrics(reg, e, labels)
	return m
}

// registerSpecMetrics exposes vLLM's speculative-decoding counters when
// speculation is on: drafts verified, tokens proposed and accepted, and
// the accepted ones by position in the draft.
func registerSpecMetrics(reg prometheus.Registerer, e *engine.Engine, labels prometheus.Labels) {
	sc := e.Config().Speculative
	if sc == nil {
		return
	}
	counter := func(name, help string, l prometheus.Labels, f func(engine.SpecStats) float64) {
		reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{Name: name, Help: help, ConstLabels: l},
			func() float64 { return f(e.Stats().Spec) }))
	}
	counter("vllm:spec_decode_num_drafts_total", "Number of spec decoding drafts.", labels,
		func(s engine.SpecStats) float64 { return float64(s.Drafts) })
	counter("vllm:spec_decode_num_draft_tokens_total", "Number of draft tokens.", labels,
		func(s engine.SpecStats) float64 { return float64(s.DraftTokens) })
	counter("vllm:spec_decode_num_accepted_tokens_total", "Number of accepted tokens.", labels,
		func(s engine.SpecStats) float64 { return float64(s.Accepted) })
	for pos := range sc.NumSpeculativeTokens {
		l := maps.Clone(labels)
		l["position"] = strconv.Itoa(pos)
		counter("vllm:spec_decode_num_accepted_tokens_per_pos_total", "Accepted tokens per draft position.", l,
			func(s engine.SpecStats) float64 {
				if pos < len(s.AcceptedPerPos) {
					return float64(s.AcceptedPerPos[pos])
				}
				return 0
			})
	}
}

// registerStateMetrics exposes the engine's gauges and counters, read at
// scrape time.
func registerStateMetrics(reg prometheus.Registerer, e *engine.Engine, labels prometheus.Labels) {
	gauge := func(name, help string, f func(engine.Stats) float64) {
		reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help, ConstLabels: labels},
			func() float64 { return f(e.Stats()) }))
	}
	counter := func(name, help string, f func(engine.Stats) float64) {
		reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{Name: name, Help: help, ConstLabels: labels},
			func() float64 { return f(e.Stats()) }))
	}
	gauge("vllm:num_requests_running", "Number of requests in model execution batches.",
		func(s engine.Stats) float64 { return float64(s.Running) })
	gauge("vllm:num_requests_waiting", "Number of requests waiting to be processed.",
		func(s engine.Stats) float64 { return float64(s.Waiting) })
	registerWaitingByReason(reg, e, labels)
	gauge("vllm:num_requests_swapped", "Number of requests swapped to CPU.",
		func(s engine.Stats) float64 { return float64(s.Swapped) })
	gauge("vllm:kv_cache_usage_perc", "KV-cache usage. 1 means 100 percent usage.",
		func(s engine.Stats) float64 { return s.KVUsage })
	counter("vllm:prefix_cache_queries_total", "Prefix cache queries, in terms of number of queried tokens.",
		func(s engine.Stats) float64 { return float64(s.Prefix.QueryTokens) })
	counter("vllm:prefix_cache_hits_total", "Prefix cache hits, in terms of number of cached tokens.",
		func(s engine.Stats) float64 { return float64(s.Prefix.HitTokens) })
	counter("vllm:num_preemptions_total", "Cumulative number of preemption from the engine.",
		func(s engine.Stats) float64 { return float64(s.Preemptions) })
	counter("vllm:prompt_tokens_total", "Number of prefill tokens processed.",
		func(s engine.Stats) float64 { return float64(s.PromptTokens) })
	counter("vllm:generation_tokens_total", "Number of generation tokens processed.",
		func(s engine.Stats) float64 { return float64(s.GenerationTokens) })
}

// registerWaitingByReason exposes vLLM's split of the waiting requests by
// why they wait: "capacity" (for scheduling capacity: blocks, sequences,
// the token budget) and "deferred" (vLLM: a LoRA budget or a KV transfer,
// which pagoda does not have, so always 0). The reasons sum to
// vllm:num_requests_waiting.
func registerWaitingByReason(reg prometheus.Registerer, e *engine.Engine, labels prometheus.Labels) {
	const help = "Number of waiting requests by reason. Reason labels: 'capacity' = waiting for scheduling capacity; " +
		"'deferred' = deferred by transient constraints (LoRA budget, KV transfer, blocked status). " +
		"Sum of all reasons equals vllm:num_requests_waiting."
	for reason, f := range map[string]func(engine.Stats) int{
		"capacity": func(s engine.Stats) int { return s.Waiting },
		"deferred": func(engine.Stats) int { return 0 },
	} {
		l := maps.Clone(labels)
		l["reason"] = reason
		reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "vllm:num_requests_waiting_by_reason",
			Help: help, ConstLabels: l}, func() float64 { return float64(f(e.Stats())) }))
	}
}

// registerCacheConfig exposes vLLM's info gauge of the cache configuration.
func registerCacheConfig(reg prometheus.Registerer, e *engine.Engine, labels prometheus.Labels) {
	cfg := e.Config()
	dev, host := e.NumBlocks()
	lay := e.ModelConfig().KVLayout()
	window := "None" // vLLM's CacheConfig.sliding_window
	for _, w := range lay.Windows {
		if w > 0 {
			window = strconv.Itoa(w)
		}
	}
	g := prometheus.NewGauge(prometheus.GaugeOpts{Name: "vllm:cache_config_info",
		Help: "Information of the LLMEngine CacheConfig", ConstLabels: prometheus.Labels{
			"model_name":            labels["model_name"],
			"engine":                labels["engine"],
			"block_size":            strconv.Itoa(cfg.BlockSize),
			"cache_dtype":           cfg.KVCacheType.String(),
			"enable_prefix_caching": strconv.FormatBool(cfg.EnablePrefixCaching),
			"num_gpu_blocks":        strconv.Itoa(dev),
			"num_cpu_blocks":        strconv.Itoa(host),
			"swap_space_bytes":      strconv.FormatInt(cfg.SwapSpace, 10),
			"sliding_window":        window,
			"num_kv_cache_groups":   strconv.Itoa(lay.NumGroups()),
		}})
	g.Set(1)
	reg.MustRegister(g)
}

// finishedRequest is what observeFinished records of a request.
type finishedRequest struct {
	id                      string // the exemplar's request_id
	reason                  string
	m                       engine.Metrics
	promptTokens, genTokens int
	cachedTokens            int // prompt tokens served from the prefix cache
	maxGenTokens            int // generated tokens of the longest output (n > 1: the outputs decode side by side)
	n, maxTokens            int
}

// observeFinished records a finished request: its finish reason and, unless
// it was aborted, its latencies, token counts and parameters, as vLLM's
// PrometheusStatLogger does. The phases: queue = first scheduled − arrival,
// prefill = first token − first scheduled, decode = last token − first
// token, inference = last token − first scheduled (preemptions included).
// Its time per output token is decode ÷ (tokens of the longest output − 1),
// 0 with one token, as vLLM's mean_time_per_output_token; the KV computed
// in prefill is the prompt less its cached tokens. The latency histograms
// carry the request id as an exemplar.
func (m *metrics) observeFinished(f finishedRequest) {
	m.success.WithLabelValues(f.reason).Inc()
	if f.reason == engine.FinishAbort {
		return
	}
	ex := exemplar(f.id)
	em := f.m
	if !em.FirstScheduled.IsZero() {
		observe(m.queue, em.FirstScheduled.Sub(em.Arrival), ex)
	}
	if !em.FirstToken.IsZero() {
		observe(m.ttft, em.FirstToken.Sub(em.Arrival), ex)
		if !em.FirstScheduled.IsZero() {
			observe(m.prefill, em.FirstToken.Sub(em.FirstScheduled), ex)
			observe(m.inference, em.LastToken.Sub(em.FirstScheduled), ex)
		}
		observe(m.decode, em.LastToken.Sub(em.FirstToken), ex)
	}
	observe(m.e2e, em.Finished.Sub(em.Arrival), ex)
	tpot := 0.0
	if !em.FirstToken.IsZero() && f.maxGenTokens > 1 {
		tpot = em.LastToken.Sub(em.FirstToken).Seconds() / float64(f.maxGenTokens-1)
	}
	m.requestTPOT.Observe(tpot)
	m.prefillKV.Observe(float64(f.promptTokens - max(f.cachedTokens, 0)))
	m.maxGenToks.Observe(float64(f.maxGenTokens))
	m.promptToks.Observe(float64(f.promptTokens))
	m.genToks.Observe(float64(f.genTokens))
	m.paramsN.Observe(float64(f.n))
	if f.maxTokens > 0 {
		m.paramsMaxTokens.Observe(float64(f.maxTokens))
	}
}

// observeCached counts the prompt tokens a request found in the prefix
// cache, once, when its first output arrives (vllm:prompt_tokens_total
// counts its prompt then too).
func (m *metrics) observeCached(n int) {
	if n > 0 {
		m.cachedToks.Add(float64(n))
	}
}

// observeTokenInterval records the time between two output deltas of a
// request: vllm:inter_token_latency_seconds and its older name
// vllm:time_per_output_token_seconds, which vLLM observes the same way.
func (m *metrics) observeTokenInterval(d time.Duration) {
	m.itl.Observe(d.Seconds())
	m.tpot.Observe(d.Seconds())
}

// maxExemplarRunes is OpenMetrics' bound on an exemplar's label names and
// values together.
const maxExemplarRunes = prometheus.ExemplarMaxRunes

// exemplar is the label set {request_id: id}, cut to fit OpenMetrics'
// bound; nil when id is empty.
func exemplar(id string) prometheus.Labels {
	const name = "request_id"
	id = strings.ToValidUTF8(id, "")
	if id == "" {
		return nil
	}
	if r := []rune(id); len(r)+len(name) > maxExemplarRunes {
		id = string(r[:maxExemplarRunes-len(name)])
	}
	return prometheus.Labels{name: id}
}

// observe records d in h, with the exemplar ex when there is one.
func observe(h prometheus.Histogram, d time.Duration, ex prometheus.Labels) {
	if eo, ok := h.(prometheus.ExemplarObserver); ok && ex != nil {
		eo.ObserveWithExemplar(d.Seconds(), ex)
		return
	}
	h.Observe(d.Seconds())
}

// stepBuckets bound a step's time split (seconds): 100 µs to about 100 s.
var stepBuckets = prometheus.ExponentialBuckets(1e-4, 2, 21)

// stepMetrics are pagoda's own per-step histograms (pagoda_ prefix; the
// vLLM names stay as vLLM has them): where each engine step's forward pass
// spent its time with tensor parallelism — compute, communication calls,
// waiting on an all-reduce (see engine.StepInfo) — and how many steps ran
// as two micro-batches (dual-batch overlap). A measurement script reads
// their _sum and _count before and after a run.
type stepMetrics struct {
	compute, comm, wait, forward prometheus.Observer
	split                        prometheus.Counter
}

func newStepMetrics(reg prometheus.Registerer, labels prometheus.Labels,
	hist func(name, help string, buckets []float64) prometheus.Histogram) stepMetrics {
	split := prometheus.NewCounter(prometheus.CounterOpts{Name: "pagoda_dbo_split_steps_total",
		Help: "Engine steps run as two micro-batches (dual-batch overlap).", ConstLabels: labels})
	reg.MustRegister(split)
	return stepMetrics{
		split:   split,
		forward: hist("pagoda_step_forward_seconds", "Histogram of the forward-pass time of each engine step.", stepBuckets),
		compute: hist("pagoda_step_compute_seconds",
			"Histogram of the compute time of each engine step (forward pass outside communication calls).", stepBuckets),
		comm: hist("pagoda_step_communication_seconds",
			"Histogram of the time each engine step spent inside nonblocking tensor-parallel communication calls (step broadcast, all-reduce starts, progress).", stepBuckets),
		wait: hist("pagoda_step_wait_seconds",
			"Histogram of the time each engine step spent blocked waiting for a tensor-parallel all-reduce (peer or link).", stepBuckets),
	}
}

// observe records one step.
func (m *stepMetrics) observe(si engine.StepInfo) {
	m.forward.Observe(si.Forward.Seconds())
	m.compute.Observe(si.Compute.Seconds())
	m.comm.Observe(si.Comm.Seconds())
	m.wait.Observe(si.Wait.Seconds())
	if si.MicroBatches == 2 {
		m.split.Inc()
	}
}
