package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strings"
	"time"

	"pagoda/bench"
)

// benchSoakFlags are `pagoda bench soak`'s flags.
type benchSoakFlags struct {
	targetFlags
	endpoints                               string
	numRequests, maxConcurrency             int
	maxTokens, maxPromptWords               int
	hangupRate, malformedRate, maxRSSGrowth float64
	structuredRate, heavyRate               float64
	seed                                    uint64
	requestTimeout, stallTimeout, settle    time.Duration
	jsonOut, quiet, verbose                 bool
}

// soakEndpointNames name bench.AllEndpoints for --endpoints.
var soakEndpointNames = []string{"completions", "chat", "responses", "messages", "ollama", "embeddings"}

// runBenchSoak implements `pagoda bench soak`: requests of every shape,
// to OpenAI's, Anthropic's and Ollama's endpoints, with client hang-ups and
// malformed bodies, against any server that speaks them; it fails (exit status 1) when a request was lost, the server
// answered 5xx or accepted a malformed body, or its gauges did not return
// to 0 afterwards.
func runBenchSoak(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("bench soak", stdout)
	var f benchSoakFlags
	f.register(fs)
	fs.StringVar(&f.endpoints, "endpoints", strings.Join(soakEndpointNames, ","),
		"endpoints to mix, some of: "+strings.Join(soakEndpointNames, ", ")+
			" (OpenAI's completions, chat completions, Responses and embeddings, Anthropic's Messages, Ollama's /api/chat)")
	fs.IntVar(&f.numRequests, "num-requests", 1000, "requests to send (N)")
	fs.IntVar(&f.maxConcurrency, "max-concurrency", 16, "requests in flight (C)")
	fs.IntVar(&f.maxTokens, "max-tokens", 32, "max_tokens of each request is drawn from [1, this]")
	fs.IntVar(&f.maxPromptWords, "max-prompt-words", 32, "prompts have 1 to this many words")
	fs.Float64Var(&f.hangupRate, "hangup-rate", 0.2, "fraction of requests the client hangs up on (half early, half mid-stream)")
	fs.Float64Var(&f.malformedRate, "malformed-rate", 0.05, "fraction of requests with a malformed body")
	fs.Float64Var(&f.structuredRate, "structured-rate", 0, "fraction of requests with a light structured-output constraint (small schema, choice, regex, json_object)")
	fs.Float64Var(&f.heavyRate, "heavy-schema-rate", 0,
		"fraction of requests with a heavy structured-output constraint (large schemas, enums, choices, patterns; a third over the server's limits, to be refused); the report gives the other requests' TTFT")
	fs.Uint64Var(&f.seed, "seed", 0, "seed of the request plan")
	fs.DurationVar(&f.requestTimeout, "request-timeout", 5*time.Minute, "a request without an answer by then is lost")
	fs.DurationVar(&f.stallTimeout, "stall-timeout", 2*time.Second,
		"how long a request that announces more body than it sends waits for an answer before hanging up")
	fs.DurationVar(&f.settle, "settle-timeout", 30*time.Second, "how long to wait for running, waiting and KV usage to return to 0")
	fs.Float64Var(&f.maxRSSGrowth, "max-rss-growth", 0, "fail when the server's RSS at the end exceeds its RSS after warm-up by more than this factor (0 = report only)")
	fs.BoolVar(&f.jsonOut, "json", false, "print the report as JSON")
	fs.BoolVar(&f.quiet, "quiet", false, "no progress lines")
	fs.BoolVar(&f.verbose, "verbose", false, "list the outcomes of every malformed kind")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageError{fmt.Errorf("unexpected arguments %q", fs.Args())}
	}
	cfg, err := f.config(stderr)
	if err != nil {
		return usageError{err}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	rep, err := bench.Soak(ctx, cfg)
	if err != nil {
		return err
	}
	if f.jsonOut {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(rep); err != nil {
			return err
		}
	} else {
		rep.WriteText(stdout, f.verbose)
	}
	if ctx.Err() != nil {
		return errors.New("interrupted")
	}
	if len(rep.Failures) > 0 {
		return fmt.Errorf("soak failed: %s", strings.Join(rep.Failures, "; "))
	}
	return nil
}

// config checks the flags and builds the soak's configuration.
func (f *benchSoakFlags) config(stderr io.Writer) (bench.SoakConfig, error) {
	f.resolveBaseURL()
	var eps []string
	for _, e := range strings.Split(f.endpoints, ",") {
		k := slices.Index(soakEndpointNames, strings.TrimSpace(e))
		if k < 0 {
			return bench.SoakConfig{}, fmt.Errorf("--endpoints: %q is not one of %s", e, strings.Join(soakEndpointNames, ", "))
		}
		eps = append(eps, bench.AllEndpoints[k])
	}
	if f.requestTimeout <= 0 || f.stallTimeout <= 0 || f.settle < 0 {
		return bench.SoakConfig{}, errors.New("--request-timeout and --stall-timeout must be > 0, --settle-timeout ≥ 0")
	}
	cfg := bench.SoakConfig{
		PlanConfig: bench.PlanConfig{Model: f.model, Endpoints: eps, MaxTokens: f.maxTokens,
			MaxPromptWords: f.maxPromptWords, HangupRate: f.hangupRate, MalformedRate: f.malformedRate, Seed: f.seed,
			StructuredRate: f.structuredRate, HeavyRate: f.heavyRate},
		BaseURL: f.baseURL, APIKey: f.apiKey, NumRequests: f.numRequests, MaxConcurrency: f.maxConcurrency,
		RequestTimeout: f.requestTimeout, StallTimeout: f.stallTimeout, SettleTimeout: f.settle,
		MaxRSSGrowth: f.maxRSSGrowth,
	}
	if !f.quiet {
		cfg.Progress = stderr
	}
	if f.numRequests < 1 || f.maxConcurrency < 1 {
		return cfg, errors.New("--num-requests and --max-concurrency must be ≥ 1")
	}
	return cfg, cfg.PlanConfig.Validate()
}
