package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"pagoda/bench"
)

// benchServeFlags are `pagoda bench serve`'s flags, spelled as `vllm bench
// serve`'s.
type benchServeFlags struct {
	targetFlags
	endpoint                             string
	dataset, datasetPath                 string
	inputLen, outputLen, numPrompts      int
	rangeRatio                           float64
	seed                                 optionalInt
	requestRate                          string
	maxConcurrency                       int
	ignoreEOS, disableTqdm               bool
	percentileMetrics, metricPercentiles string
	saveResult, saveDetailed             bool
	resultDir, resultFile                string
}

// runBenchServe implements `pagoda bench serve`, like `vllm bench serve`:
// it benchmarks any OpenAI-compatible server (pagoda, vLLM, llama.cpp's
// llama-server, Ollama). Random prompts are made of common English words,
// one token each in the usual vocabularies, so no tokenizer is needed; the
// token counts reported are the server's own (usage), when it sends them.
func runBenchServe(args []string, stdout, stderr io.Writer) error {
	f, err := parseBenchServe(args, stdout)
	if err != nil {
		return err
	}
	return benchServe(f, stdout, stderr)
}

// parseBenchServe reads `pagoda bench serve`'s flags.
func parseBenchServe(args []string, out io.Writer) (benchServeFlags, error) {
	fs := newFlagSet("bench serve", out)
	var f benchServeFlags
	f.register(fs)
	fs.StringVar(&f.endpoint, "endpoint", "/v1/completions", "/v1/completions or /v1/chat/completions")
	fs.StringVar(&f.dataset, "dataset-name", "random", "random, or jsonl (--dataset-path lines {\"prompt\": ..., \"output_len\": N})")
	fs.StringVar(&f.datasetPath, "dataset-path", "", "JSONL file of prompts (--dataset-name jsonl)")
	fs.IntVar(&f.inputLen, "random-input-len", 1024, "prompt tokens (random dataset)")
	fs.IntVar(&f.outputLen, "random-output-len", 128, "output tokens (random dataset; default for JSONL lines without one)")
	fs.Float64Var(&f.rangeRatio, "random-range-ratio", 0, "lengths drawn from [len·(1−r), len·(1+r)]")
	fs.Var(&f.seed, "seed", "seed of the random prompts and the arrival times (default: a new one each run, printed; "+
		"give it to send the same prompts again)")
	fs.IntVar(&f.numPrompts, "num-prompts", 1000, "requests to send")
	fs.StringVar(&f.requestRate, "request-rate", "inf", "requests/s, Poisson arrivals; inf sends all at once")
	fs.IntVar(&f.maxConcurrency, "max-concurrency", 0, "requests in flight at most (0 = no limit)")
	fs.BoolVar(&f.ignoreEOS, "ignore-eos", false, "ask the server to ignore EOS (vLLM, llama.cpp)")
	fs.StringVar(&f.percentileMetrics, "percentile-metrics", "ttft,tpot,itl,e2el", "metrics to report: ttft, tpot, itl, e2el")
	fs.StringVar(&f.metricPercentiles, "metric-percentiles", "99", "percentiles to report, e.g. 50,90,99")
	fs.BoolVar(&f.saveResult, "save-result", false, "save the result as JSON")
	fs.BoolVar(&f.saveDetailed, "save-detailed", false, "include per-request lengths, latencies, texts and errors")
	fs.StringVar(&f.resultDir, "result-dir", ".", "directory of the saved result")
	fs.StringVar(&f.resultFile, "result-filename", "", "file name of the saved result (default: backend-rate-qps-concurrency-model-date.json)")
	fs.BoolVar(&f.disableTqdm, "disable-tqdm", false, "no progress bar")
	if err := parseFlags(fs, args); err != nil {
		return f, err
	}
	if fs.NArg() > 0 {
		return f, usageError{fmt.Errorf("unexpected arguments %q", fs.Args())}
	}
	return f, nil
}

// parseRate reads --request-rate: a positive number or inf.
func parseRate(s string) (float64, error) {
	if strings.EqualFold(s, "inf") {
		return math.Inf(1), nil
	}
	r, err := strconv.ParseFloat(s, 64)
	if err != nil || r <= 0 || math.IsNaN(r) {
		return 0, fmt.Errorf("--request-rate must be a positive number or inf, got %q", s)
	}
	return r, nil
}

// parseMetrics reads --percentile-metrics and --metric-percentiles.
func parseMetrics(metrics, percentiles string) ([]string, []float64, error) {
	var ms []string
	for _, m := range strings.Split(metrics, ",") {
		switch m = strings.TrimSpace(m); m {
		case bench.MetricTTFT, bench.MetricTPOT, bench.MetricITL, bench.MetricE2EL:
			ms = append(ms, m)
		default:
			return nil, nil, fmt.Errorf("--percentile-metrics: %q is not one of ttft, tpot, itl, e2el", m)
		}
	}
	var ps []float64
	for _, p := range strings.Split(percentiles, ",") {
		v, err := strconv.ParseFloat(strings.TrimSpace(p), 64)
		if err != nil || v <= 0 || v >= 100 {
			return nil, nil, fmt.Errorf("--metric-percentiles: %q is not in (0, 100)", p)
		}
		ps = append(ps, v)
	}
	return ms, ps, nil
}

// resolveSeed returns --seed, or draws one the first time when it was not
// given (and keeps it): each run then sends new prompts, which no prefix
// cache of an earlier run on the same server holds.
func (f *benchServeFlags) resolveSeed() uint64 {
	if !f.seed.set {
		f.seed = optionalInt{v: int64(rand.Uint64() >> 1), set: true}
	}
	return uint64(f.seed.v)
}

func (f *benchServeFlags) prompts() ([]bench.Prompt, error) {
	switch f.dataset {
	case "random":
		return bench.RandomPrompts(f.numPrompts, f.inputLen, f.outputLen, f.rangeRatio, f.resolveSeed())
	case "jsonl":
		if f.datasetPath == "" {
			return nil, usageError{errors.New("--dataset-name jsonl needs --dataset-path")}
		}
		return bench.ReadJSONL(f.datasetPath, f.numPrompts, f.outputLen)
	}
	return nil, usageError{fmt.Errorf("--dataset-name: %q is not random or jsonl", f.dataset)}
}

func benchServe(f benchServeFlags, stdout, stderr io.Writer) error {
	rate, err := parseRate(f.requestRate)
	if err != nil {
		return usageError{err}
	}
	metrics, percentiles, err := parseMetrics(f.percentileMetrics, f.metricPercentiles)
	if err != nil {
		return usageError{err}
	}
	prompts, err := f.prompts()
	if err != nil {
		return err
	}
	f.resolveBaseURL()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if f.model == "" {
		if f.model, err = bench.FetchModel(ctx, nil, f.baseURL, f.apiKey); err != nil {
			return fmt.Errorf("--model not given and %w", err)
		}
	}
	c := &bench.Client{BaseURL: f.baseURL, Endpoint: f.endpoint, Model: f.model, APIKey: f.apiKey, IgnoreEOS: f.ignoreEOS}
	fmt.Fprintf(stderr, "Starting initial single prompt test run...\n")
	if res := c.Send(ctx, prompts[0]); !res.Success {
		return fmt.Errorf("initial test run failed (check the server and --endpoint/--model): %s", res.Error)
	}
	fmt.Fprintf(stderr, "Initial test run completed. Starting main benchmark run...\n")
	fmt.Fprintf(stderr, "Traffic request rate: %s, maximum request concurrency: %s, %d prompts, seed %d\n",
		f.requestRate, concurrencyText(f.maxConcurrency), len(prompts), f.resolveSeed())
	cfg := bench.Config{Client: c, RequestRate: rate, MaxConcurrency: f.maxConcurrency, Seed: f.resolveSeed()}
	if !f.disableTqdm {
		cfg.Progress, cfg.ProgressTTY = stderr, isTerminal(stderr)
	}
	const gcMetric = "go_gc_duration_seconds_count" // the server's GC cycles (Go servers)
	gc0, gcErr := bench.ScrapeMetric(ctx, nil, f.baseURL, gcMetric)
	start := time.Now()
	results, d := bench.Run(ctx, cfg, prompts)
	r := bench.Summarize(results, d, metrics, percentiles)
	r.MaxConcurrency, r.RequestRate = f.maxConcurrency, rate
	r.WriteTable(stdout)
	if gcErr == nil {
		if gc1, err := bench.ScrapeMetric(ctx, nil, f.baseURL, gcMetric); err == nil {
			fmt.Fprintf(stdout, "%-40s %d\n", "Server GC cycles during the run:", int64(gc1-gc0))
		}
	}
	if r.UsageReported < r.Completed {
		fmt.Fprintf(stderr, "note: %d of %d responses had no usage; their token counts are estimates\n",
			r.Completed-r.UsageReported, r.Completed)
	}
	if f.saveResult {
		if err := f.save(r, rate, start, stderr); err != nil {
			return err
		}
	}
	if ctx.Err() != nil {
		return errors.New("interrupted")
	}
	return nil
}

func concurrencyText(n int) string {
	if n <= 0 {
		return "none"
	}
	return strconv.Itoa(n)
}

// save writes the JSON result, named as vLLM names it unless
// --result-filename is given.
func (f *benchServeFlags) save(r bench.Report, rate float64, start time.Time, w io.Writer) error {
	backend := "openai"
	if strings.Contains(f.endpoint, "chat") {
		backend = "openai-chat"
	}
	meta := bench.Meta{Date: start, Backend: backend, BaseURL: f.baseURL, Endpoint: f.endpoint, Model: f.model,
		Dataset: f.dataset, NumPrompts: f.numPrompts, Seed: f.resolveSeed(), RequestRate: rate,
		Concurrency: f.maxConcurrency, IgnoreEOS: f.ignoreEOS}
	name := f.resultFile
	if name == "" {
		name = fmt.Sprintf("%s-%sqps-concurrency%s-%s-%s.json", backend, f.requestRate, concurrencyText(f.maxConcurrency),
			filepath.Base(f.model), start.Format("20060102-150405"))
	}
	path := filepath.Join(f.resultDir, name)
	if err := bench.Save(path, r.JSON(meta, f.saveDetailed)); err != nil {
		return err
	}
	fmt.Fprintf(w, "saved the result to %s\n", path)
	return nil
}
