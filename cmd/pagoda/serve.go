package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"pagoda/bucket"
	"pagoda/engine"
	"pagoda/model"
	"pagoda/sched"
	"pagoda/server"
)

// serveFlags are `pagoda serve`'s flags, spelled as vLLM's where vLLM has
// one. Each can also be set by the environment variable PAGODA_<NAME>
// (server.EnvName); the command line wins.
type serveFlags struct {
	speculative                       string // --speculative-config JSON
	model, host, apiKey               string
	servedNames                       nameList
	port, maxModelLen, maxNumSeqs     int
	maxBatched, blockSize, threads    int
	maxQueue, numBlocksOverride       int
	longPrefill, partialPrefills      int
	longPartialPrefills               int
	kvMemory, swapSpace, maxBody      server.SizeFlag
	prefixCaching, noPrefixCaching    bool
	disableLogStats                   bool
	chatTemplateFallback              bool        // --chat-template-fallback
	tpStepTimeout                     secondsFlag // --tp-step-timeout
	shutdownTimeout                   secondsFlag
	responsesStore                    server.SizeFlag // --responses-store-size
	responsesTTL                      secondsFlag     // --responses-store-ttl
	kvDtype, preemption, chatTemplate string
	pooling                           string
	enforceEager                      bool
	noRepack, exact                   bool
	bucketing                         bucket.Options
	dbo                               sched.DBO
	vllm                              vllmServeFlags
	notes                             []string // the no-op vLLM flags given, logged at startup
}

func (f *serveFlags) register(fs *flag.FlagSet) {
	d := engine.DefaultConfig("")
	fs.StringVar(&f.model, "model", "", "GGUF file or model reference (or the positional MODEL; default "+defaultModelRef+")")
	fs.StringVar(&f.host, "host", "127.0.0.1", "address to listen on")
	fs.IntVar(&f.port, "port", 8000, "port to listen on")
	fs.Var(&f.servedNames, "served-model-name", "model names in the API, e.g. --served-model-name a b: all answer, "+
		"responses and metrics carry the first (default: MODEL as given, and the file name without .gguf)")
	fs.IntVar(&f.maxModelLen, "max-model-len", 0, "context length per sequence (0 = the model's)")
	fs.IntVar(&f.maxNumSeqs, "max-num-seqs", d.MaxNumSeqs, "sequences running at once")
	fs.IntVar(&f.maxBatched, "max-num-batched-tokens", d.MaxNumBatchedTokens, "tokens computed per step")
	registerPrefillFlags(fs, &f.longPrefill, &f.partialPrefills, &f.longPartialPrefills)
	fs.IntVar(&f.blockSize, "block-size", d.BlockSize, "tokens per KV cache block")
	f.kvMemory = server.SizeFlag(d.KVCacheMemory)
	fs.Var(&f.kvMemory, "kv-cache-memory", "KV cache size, e.g. 2GiB, 512MiB or bytes (0 = --max-num-seqs sequences of --max-model-len tokens "+
		"and a quarter more for prefix caching, within a quarter of the available memory)")
	f.swapSpace = server.SizeFlag(d.SwapSpace)
	fs.Var(&f.swapSpace, "swap-space", "host swap space for preempted sequences, e.g. 1GiB or bytes")
	fs.IntVar(&f.numBlocksOverride, "num-gpu-blocks-override", 0, "KV cache blocks, overriding --kv-cache-memory (0 = off)")
	fs.StringVar(&f.kvDtype, "kv-cache-dtype", "auto", "KV cache element type: auto (f16), f32, f16, bf16, q8_0 (llama.cpp's blocks: 8 bits and one f16 scale per 32 values)")
	fs.BoolVar(&f.prefixCaching, "enable-prefix-caching", d.EnablePrefixCaching, "reuse the KV blocks of shared prompt prefixes")
	fs.BoolVar(&f.noPrefixCaching, "no-enable-prefix-caching", false, "turn prefix caching off")
	fs.StringVar(&f.preemption, "preemption-mode", "auto", "auto, recompute or swap")
	fs.StringVar(&f.speculative, "speculative-config", "", `speculative decoding as JSON, e.g. {"method": "ngram", "num_speculative_tokens": 5} `+
		`, {"method": "suffix"} or {"method": "draft_model", "model": "draft.gguf", "num_speculative_tokens": 4}; outputs stay those of plain decoding (docs/speculative-decoding.md)`)
	fs.IntVar(&f.threads, "threads", 0, threadsFlagHelp)
	fs.StringVar(&f.apiKey, "api-key", "", "require this bearer key on the API")
	fs.IntVar(&f.maxQueue, "max-queue", 1024, "refuse requests with 503 when their sequences (each prompt × max(n, best_of)) would take the waiting ones past this many (0 = no limit)")
	f.maxBody = server.DefaultMaxBodyBytes
	fs.Var(&f.maxBody, "max-request-body", "largest request body accepted (413 beyond)")
	f.shutdownTimeout = secondsFlag(30 * time.Second)
	fs.Var(&f.shutdownTimeout, "shutdown-timeout", "grace period for in-flight requests on SIGTERM/SIGINT (e.g. 30s, or seconds)")
	fs.StringVar(&f.chatTemplate, "chat-template", "", "chat template file or inline Jinja, replacing the model's")
	f.tpStepTimeout = secondsFlag(engine.DefaultTPStepTimeout)
	fs.Var(&f.tpStepTimeout, "tp-step-timeout", "tensor parallelism: how long a step waits for the other ranks, plus 10ms "+
		"per token of the step (and how long an idle heartbeat waits); past it the engine fails, /health answers 503 "+
		"and the job exits non-zero (e.g. 30s, or seconds)")
	fs.BoolVar(&f.chatTemplateFallback, "chat-template-fallback", false, "serve a plain ChatML template, with a warning, "+
		"when the chat template fails to compile or to render a probe conversation within its limits (default: refuse to start)")
	f.responsesStore, f.responsesTTL = server.DefaultResponsesStoreBytes, secondsFlag(time.Hour)
	fs.Var(&f.responsesStore, "responses-store-size", "memory for the responses /v1/responses keeps for previous_response_id "+
		"(store true), least recently used out first (0 = keep none)")
	fs.Var(&f.responsesTTL, "responses-store-ttl", "how long a stored response is kept (e.g. 1h, or seconds)")
	fs.StringVar(&f.pooling, "pooling", "", "how embeddings (/v1/embeddings, /api/embed) pool the final hidden states: last, mean or cls (vLLM's pooling_type); default: the model's (a BERT's pooling_type), else last")
	fs.BoolVar(&f.disableLogStats, "disable-log-stats", false, "do not log engine statistics every 5 s")
	fs.BoolVar(&f.enforceEager, "enforce-eager", false, "run every step without captured plans (no warm-up)")
	fs.BoolVar(&f.exact, "exact-arithmetic", false, exactFlagHelp)
	fs.BoolVar(&f.noRepack, "no-repack", false, "with --exact-arithmetic's llama.cpp arithmetic, keep Q4_0 weights plain too (llama.cpp's --no-repack); implies --exact-arithmetic")
	f.bucketing = d.Bucketing
	registerBucketFlags(fs, &f.bucketing)
	registerDBO(fs, &f.dbo)
	f.vllm.register(fs)
}

// registerPrefillFlags registers vLLM's partial-prefill flags (serve and
// bench throughput), with the engine's defaults.
func registerPrefillFlags(fs *flag.FlagSet, threshold, partial, long *int) {
	d := engine.DefaultConfig("")
	fs.IntVar(threshold, "long-prefill-token-threshold", d.LongPrefillTokenThreshold,
		"a prompt with more tokens left is long; no sequence computes more per step (0 = no threshold; "+
			"with --max-num-partial-prefills > 1, 0 means 4% of --max-model-len)")
	fs.IntVar(partial, "max-num-partial-prefills", d.MaxNumPartialPrefills,
		"prompts computed at once, chunk by chunk, beside the decodes (0 = no limit)")
	fs.IntVar(long, "max-long-partial-prefills", d.MaxLongPartialPrefills,
		"long prompts among them; shorter prompts may start ahead of a long one waiting for its turn")
}

// secondsFlag is a duration written as Go ("30s", "2m") or in seconds ("30").
type secondsFlag time.Duration

func (s *secondsFlag) String() string { return time.Duration(*s).String() }

func (s *secondsFlag) Set(v string) error {
	if f, err := strconv.ParseFloat(v, 64); err == nil && f >= 0 {
		*s = secondsFlag(time.Duration(f * float64(time.Second)))
		return nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < 0 {
		return fmt.Errorf("want a duration like 30s or a number of seconds, got %q", v)
	}
	*s = secondsFlag(d)
	return nil
}

// runServe implements `pagoda serve [MODEL] [flags]`.
func runServe(args []string, stdout, stderr io.Writer) error {
	f, err := parseServe(args, os.LookupEnv, stdout)
	if err != nil {
		return err
	}
	cfg, opts, err := f.config()
	if err != nil {
		return usageError{err}
	}
	if cfg.Model, err = resolveModel(cfg.Model, stderr); err != nil {
		return err
	}
	lead, release, err := joinTensorParallel(f.vllm.tensorParallel, &cfg)
	if !lead {
		return err
	}
	defer release()
	if cfg.TensorParallel != nil {
		if !cfg.EnforceEager {
			cfg.EnforceEager = true
			f.notes = append(f.notes, "--tensor-parallel-size > 1 runs eager (captured plans are not implemented with tensor parallelism)")
		}
	}
	return serve(f, cfg, opts, stderr)
}

// parseServe reads serve's flags from the environment (PAGODA_<FLAG>) and
// args, the command line winning; MODEL may come before, between or after
// the flags. Errors are one line (usageError), never a usage dump;
// -h/--help[=TOPIC] prints the help on out and returns flag.ErrHelp.
func parseServe(args []string, lookup func(string) (string, bool), out io.Writer) (serveFlags, error) {
	fs := newFlagSet("serve", out)
	var f serveFlags
	f.register(fs)
	h := helpOf(fs)
	h.usage, h.about, h.groups = "pagoda serve [MODEL] [flags]", serveAbout(), serveHelpGroups()
	if err := server.ApplyEnv(fs, lookup); err != nil {
		return f, usageError{err}
	}
	norm, err := normalizeServeArgs(fs, args)
	if errors.Is(err, flag.ErrHelp) {
		return f, h.show(fs)
	} else if err != nil {
		return f, usageError{err}
	}
	if err := parseFlags(fs, norm.args); err != nil {
		return f, err
	}
	if len(norm.servedNames) > 0 {
		f.servedNames = norm.servedNames
	}
	f.notes = norm.notes
	positional := ""
	switch len(norm.positional) {
	case 0:
	case 1:
		positional = norm.positional[0]
	default:
		return f, usageError{fmt.Errorf("unexpected arguments %q (one MODEL at most)", norm.positional)}
	}
	switch {
	case positional != "" && f.model != "" && positional != f.model:
		return f, usageError{fmt.Errorf("two models given: %s and --model %s", positional, f.model)}
	case positional != "":
		f.model = positional
	case f.model == "":
		f.model = defaultModelRef
	}
	return f, nil
}

// config maps the flags onto the engine and server configurations.
func (f *serveFlags) config() (engine.Config, server.Options, error) {
	cfg := engine.DefaultConfig(f.model)
	cfg.MaxModelLen, cfg.MaxNumSeqs, cfg.MaxNumBatchedTokens = f.maxModelLen, f.maxNumSeqs, f.maxBatched
	cfg.LongPrefillTokenThreshold, cfg.MaxNumPartialPrefills = f.longPrefill, f.partialPrefills
	cfg.MaxLongPartialPrefills = f.longPartialPrefills
	cfg.BlockSize, cfg.KVCacheMemory, cfg.SwapSpace = f.blockSize, int64(f.kvMemory), int64(f.swapSpace)
	cfg.NumBlocksOverride, cfg.Threads = f.numBlocksOverride, f.threads
	cfg.EnablePrefixCaching = f.prefixCaching && !f.noPrefixCaching
	cfg.EnforceEager, cfg.Bucketing, cfg.NoRepack, cfg.DBO = f.enforceEager, f.bucketing, f.noRepack, f.dbo
	cfg.Bucketing.PrefixCaching = cfg.EnablePrefixCaching // vllm-gaudi reads vLLM's flag; buckets do not depend on it
	cfg.ExactArithmetic, cfg.ExpertParallel = f.exact, f.vllm.expertParallel
	if f.speculative != "" {
		sc, err := engine.ParseSpeculativeConfig(f.speculative)
		if err != nil {
			return cfg, server.Options{}, err
		}
		cfg.Speculative = sc
	}
	dtype := f.kvDtype
	if dtype == "auto" {
		dtype = "f16"
	}
	var err error
	if cfg.KVCacheType, err = model.ParseKVType(dtype); err != nil {
		return cfg, server.Options{}, fmt.Errorf("--kv-cache-dtype: %w", err)
	}
	if cfg.Preemption, err = sched.ParsePreemptionMode(f.preemption); err != nil {
		return cfg, server.Options{}, err
	}
	if f.port < 0 || f.port > 65535 {
		return cfg, server.Options{}, fmt.Errorf("--port must be in [0, 65535], got %d", f.port)
	}
	if f.maxQueue < 0 {
		return cfg, server.Options{}, fmt.Errorf("--max-queue must be ≥ 0, got %d", f.maxQueue)
	}
	if f.dbo.Enable {
		if err := f.dbo.Validate(); err != nil {
			return cfg, server.Options{}, err
		}
	}
	opts := server.Options{ServedModelNames: f.servedNames, ModelRef: f.model, APIKey: f.apiKey, MaxQueue: f.maxQueue,
		MaxBodyBytes: int64(f.maxBody), Version: version, Pooling: f.pooling, Pull: pullInto}
	if _, err := engine.ParsePooling(f.pooling); f.pooling != "" && err != nil {
		return cfg, opts, fmt.Errorf("--pooling: %w", err)
	}
	opts.ResponsesStoreBytes, opts.ResponsesStoreTTL = int64(f.responsesStore), time.Duration(f.responsesTTL)
	if f.responsesStore == 0 {
		opts.ResponsesStoreBytes = -1 // keep none
	}
	if f.responsesTTL == 0 {
		return cfg, opts, fmt.Errorf("--responses-store-ttl must be > 0")
	}
	if !f.disableLogStats {
		opts.StatsInterval = 5 * time.Second
	}
	if opts.ChatTemplate, err = readTemplate(f.chatTemplate); err != nil {
		return cfg, opts, err
	}
	opts.ChatTemplateFallback = f.chatTemplateFallback
	if cfg.TPStepTimeout = time.Duration(f.tpStepTimeout); cfg.TPStepTimeout <= 0 {
		return cfg, opts, fmt.Errorf("--tp-step-timeout must be > 0")
	}
	if err := f.vllm.apply(&opts); err != nil {
		return cfg, opts, err
	}
	return cfg, opts, nil
}

// readTemplate reads --chat-template: a file path, else inline Jinja.
func readTemplate(v string) (string, error) {
	if v == "" {
		return "", nil
	}
	if b, err := os.ReadFile(v); err == nil {
		return string(b), nil
	} else if !strings.ContainsAny(v, "{}") {
		return "", fmt.Errorf("--chat-template: %w", err)
	}
	return v, nil
}

// serve listens, loads the model (the API answers 503 meanwhile), serves
// until SIGTERM/SIGINT, then shuts down gracefully.
func serve(f serveFlags, cfg engine.Config, opts server.Options, stderr io.Writer) error {
	if _, err := os.Stat(cfg.Model); err != nil {
		return fmt.Errorf("model file: %w (run `make model` for the default model)", err)
	}
	if f.vllm.generationConfig == genConfigAuto {
		g, err := ggufGenerationDefaults(cfg.Model)
		if err != nil {
			return err
		}
		opts.Generation = f.vllm.overrideGeneration.merge(g)
	}
	logger := log.New(levelFilter{w: stderr, min: f.vllm.logLevel}, "", log.LstdFlags)
	opts.Logger = logger
	for _, n := range f.notes {
		logger.Printf("INFO %s", n)
	}
	if g := opts.Generation; !g.IsZero() {
		logger.Printf("INFO default sampling parameters from %s: %s (--generation-config vllm ignores them)", g.Source, g)
	}
	progress := stderr
	if f.vllm.logLevel > levelInfo {
		progress = io.Discard
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(f.host, strconv.Itoa(f.port)))
	if err != nil {
		return err
	}
	srv := server.New(opts)
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	sig, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	e, err := loadEngine(sig, cfg, progress)
	if err != nil {
		srv.Shutdown(context.Background())
		if errors.Is(err, context.Canceled) {
			return nil // a signal during loading: nothing was served
		}
		return err
	}
	engineCtx, stopEngine := context.WithCancel(context.Background())
	defer e.Close() // after stopEngine: Close waits for the loop
	defer stopEngine()
	logger.Print(kvCacheLine(e))
	if err := warmup(e, logger, progress); err != nil {
		return err
	}
	e.Start(engineCtx)
	if err := srv.SetEngine(e); err != nil {
		return err
	}
	logger.Print(startupLine(e, ln.Addr().String(), opts))
	select {
	case err := <-served:
		return err
	case <-e.Dead():
		return engineDead(e, srv, logger)
	case <-sig.Done():
	}
	grace := time.Duration(f.shutdownTimeout)
	if cfg.TensorParallel != nil && grace > tpShutdownGrace {
		// mpirun ends a job with SIGTERM and, about a second later, SIGKILL
		// (also when a rank died): answer the requests in flight at once.
		logger.Printf("INFO tensor parallel: ending the requests in flight within %v (mpirun kills the job soon after SIGTERM)", tpShutdownGrace)
		grace = tpShutdownGrace
	}
	logger.Printf("INFO shutting down: waiting up to %v for in-flight requests", grace)
	ctx, cancel := context.WithTimeout(context.Background(), grace)
	defer cancel()
	if err := srv.Shutdown(ctx); err != nil {
		logger.Printf("INFO grace period over: aborted the requests still running")
	}
	if err := <-served; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	logger.Print("INFO stopped")
	return nil
}
