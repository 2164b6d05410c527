// Package server is pagoda's OpenAI-compatible HTTP API: completions and
// chat completions (JSON or Server-Sent Events), models, tokenize and
// detokenize, health, version, and Prometheus metrics under vLLM's names.
//
// A Server answers /health with 503 until SetEngine hands it a loaded
// engine, so it can listen while the model loads. Every generation request
// becomes one engine request per prompt; when its client disconnects the
// handler aborts it in the engine at once, which frees its KV blocks. A
// request uses no goroutine besides its handler's (plus one per prompt while
// a multi-prompt completion streams), so none outlives it.
package server

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io"
	"log"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"pagoda/engine"
	"pagoda/sample"
	"pagoda/tokenizer"
)

// Options configure a Server.
type Options struct {
	// ServedModelNames are the model names clients may use (vLLM's
	// --served-model-name a b c): every one answers, /v1/models lists them
	// all, and responses and metrics carry the first. Empty means the names
	// of ServedNames: ModelRef and the GGUF file's base name.
	ServedModelNames []string
	// ModelRef is the model as the command line named it ("smollm2",
	// "org/repo:Q4_K_M", a path).
	ModelRef string
	// APIKey, when set, is required as "Authorization: Bearer KEY" on every
	// endpoint except /health, /version and /metrics.
	APIKey string
	// MaxQueue bounds the sequences waiting in the engine (each prompt of a
	// request counts max(n, best_of)): a request that would take them past
	// MaxQueue gets a 503, one larger than MaxQueue a 400; 0 means no limit.
	MaxQueue int
	// MaxBodyBytes bounds request bodies (413 beyond); 0 means 16 MiB.
	MaxBodyBytes int64
	// ChatTemplate is a Jinja chat template replacing the model's own.
	ChatTemplate string
	// ChatTemplateFallback serves a plain ChatML template, with a warning,
	// when the chat template fails to compile or to render a probe
	// conversation within its limits; without it SetEngine fails.
	ChatTemplateFallback bool
	// Version is reported by GET /version.
	Version string
	// StatsInterval is the period of the stats log line; 0 turns it off.
	StatsInterval time.Duration
	// Logger receives the stats line and server errors; nil discards them.
	Logger *log.Logger
	// CORS is the cross-origin policy; nil means DefaultCORS.
	CORS *CORS
	// LogRequests logs one line per engine request (id, prompt tokens,
	// sampling parameters): vLLM's --enable-log-requests.
	LogRequests bool
	// LogAccess logs one DEBUG line per HTTP request.
	LogAccess bool
	// MaxLogprobs bounds logprobs, top_logprobs and prompt_logprobs per
	// request (400 beyond), at most sample.MaxLogprobs; nil means
	// sample.MaxLogprobs. vLLM's --max-logprobs.
	MaxLogprobs *int
	// Seed, when set, gives requests without a seed one derived from it and
	// from the request's arrival order, so that a server restarted with the
	// same --seed and sent the same requests in the same order samples the
	// same tokens. nil leaves such requests unseeded (random).
	Seed *int64
	// Generation holds the sampling defaults of --generation-config.
	Generation GenerationDefaults
	// ReadHeaderTimeout bounds the wait for a request's headers (Serve);
	// 0 means 10 s.
	ReadHeaderTimeout time.Duration
	// ToolCallParser, one of ToolCallParsers(), reads the calls out of the
	// output of chat requests with tool_choice "auto" (vLLM's
	// --tool-call-parser); "" chooses it from the model (parserRules).
	// EnableAutoToolChoice is vLLM's --enable-auto-tool-choice, accepted
	// for its command line: auto tool choice is always on, as in
	// llama-server and Ollama.
	EnableAutoToolChoice bool
	ToolCallParser       string
	// ReasoningParser, one of ReasoningParsers(), splits the output of
	// chat requests into reasoning_content and content: vLLM's
	// --reasoning-parser. "" turns it off.
	ReasoningParser string
	// BodyTimeout bounds reading a request's body; 0 means 60 s. A body
	// that does not arrive in time gets a 400 and the connection is closed.
	BodyTimeout time.Duration
	// ResponsesStoreBytes bounds the responses /v1/responses keeps for
	// previous_response_id and GET (store true), least recently used out
	// first: 0 means DefaultResponsesStoreBytes, < 0 keeps none.
	// ResponsesStoreTTL is how long one is kept; 0 means an hour.
	ResponsesStoreBytes int64
	ResponsesStoreTTL   time.Duration
	// Pooling is how embeddings pool the model's hidden states, one of
	// engine.Poolings(); "" means the model's (engine.DefaultPooling: the
	// file's pooling_type for BERT, else last, vLLM's default for decoder
	// models).
	Pooling string
	// Pull, when set, downloads a model reference into the model cache
	// (Ollama's /api/pull), writing its progress lines to progress; nil
	// makes /api/pull answer that pulling is not available.
	Pull func(ctx context.Context, ref string, progress io.Writer) error
}

// DefaultMaxBodyBytes bounds request bodies when Options.MaxBodyBytes is 0.
const DefaultMaxBodyBytes = 16 << 20

// Server serves one engine over HTTP.
type Server struct {
	opts    Options
	reg     *prometheus.Registry
	backend atomic.Pointer[backend] // nil until SetEngine
	handler http.Handler

	draining atomic.Bool     // Shutdown began: refuse new work
	active   atomic.Int64    // handlers running
	hardStop context.Context // cancelled when the grace period ends
	abortAll context.CancelFunc

	mu        sync.Mutex
	http      *http.Server
	stopStats context.CancelFunc
	statsDone chan struct{}
}

// backend is what a ready server serves.
type backend struct {
	e                *engine.Engine
	tok              *tokenizer.Tokenizer
	template         *tokenizer.Template // nil: the model has none
	bosText, eosText string
	name             string   // the first served name: responses and metrics
	names            []string // every served name
	created          int64
	m                *metrics
	maxBody          int64
	bodyTimeout      time.Duration
	toolParser       string           // the parser of tool_choice auto (toolFormats)
	toolFallback     *toolFallback    // nil: the chat template shows tools itself
	reasoning        *reasoningParser // nil: no reasoning parser
	harmony          *harmonyParser   // non-nil: the model speaks harmony (gpt-oss), read in place of reasoning and tool parsers
	grammars         grammarCache
	maxQueue         int
	live             sync.Map // engine request ids in use (claimID)
	defaults         engine.SamplingParams
	gen              GenerationDefaults
	maxLogprobs      int
	seed             *int64
	seedCount        atomic.Uint64
	logRequests      bool
	log              *log.Logger
	pooling          engine.Pooling // embeddings (embeddings.go)
	pull             func(ctx context.Context, ref string, progress io.Writer) error
	respStore        *responseStore // /v1/responses with store
}

// New returns a server that is not ready yet: generation endpoints and
// /health answer 503 until SetEngine.
func New(opts Options) *Server {
	if opts.MaxBodyBytes <= 0 {
		opts.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if opts.ReadHeaderTimeout <= 0 {
		opts.ReadHeaderTimeout = 10 * time.Second
	}
	if opts.BodyTimeout <= 0 {
		opts.BodyTimeout = 60 * time.Second
	}
	if opts.Logger == nil {
		opts.Logger = log.New(io.Discard, "", 0)
	}
	s := &Server{opts: opts, reg: prometheus.NewRegistry()}
	s.hardStop, s.abortAll = context.WithCancel(context.Background())
	s.reg.MustRegister(newGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	s.handler = s.routes()
	return s
}

// SetEngine makes the server ready to serve e, whose loop the caller has
// started. It compiles the chat template, registers the metrics and starts
// the stats loop (stopped by Shutdown).
func (s *Server) SetEngine(e *engine.Engine) error {
	if s.backend.Load() != nil {
		return errors.New("server: SetEngine called twice")
	}
	tok := e.Tokenizer()
	src := s.opts.ChatTemplate
	if src == "" {
		src = tok.ChatTemplate()
	}
	b := &backend{e: e, tok: tok, created: time.Now().Unix(),
		maxBody: s.opts.MaxBodyBytes, bodyTimeout: s.opts.BodyTimeout, maxQueue: s.opts.MaxQueue,
		bosText: tok.TokenText(tok.BOS()), eosText: tok.TokenText(tok.EOS()),
		gen: s.opts.Generation, defaults: s.opts.Generation.Apply(engine.DefaultSamplingParams()),
		maxLogprobs: sample.MaxLogprobs, seed: s.opts.Seed, logRequests: s.opts.LogRequests, log: s.opts.Logger,
		respStore: newResponseStore(s.opts.ResponsesStoreBytes, s.opts.ResponsesStoreTTL)}
	b.pooling, b.pull = e.DefaultPooling(), s.opts.Pull
	if p := s.opts.Pooling; p != "" {
		pl, err := engine.ParsePooling(p)
		if err != nil {
			return err
		}
		b.pooling = pl
	}
	if err := s.planHarmony(b, src, e.ModelConfig().Arch); err != nil {
		return err
	}
	if p := s.opts.ReasoningParser; p != "" && b.harmony == nil {
		rp, err := newReasoningParser(p, tok)
		if err != nil {
			return err
		}
		b.reasoning = rp
	}
	if src != "" {
		var err error
		if src, err = s.loadTemplate(b, src, templateOrigin(s.opts.ChatTemplate)); err != nil {
			return err
		}
	}
	if err := s.planToolCalling(b, src, e.ModelConfig().Arch); err != nil {
		return err
	}
	b.names = ServedNames(s.opts.ServedModelNames, s.opts.ModelRef, e.Config().Model)
	b.name = b.names[0]
	if ml := s.opts.MaxLogprobs; ml != nil && *ml >= 0 && *ml < sample.MaxLogprobs {
		b.maxLogprobs = *ml
	}
	b.m = newMetrics(s.reg, e, b.name)
	iter, step := b.m.iterToks, &b.m.step
	e.OnStep(func(si engine.StepInfo) {
		iter.Observe(float64(si.Tokens))
		step.observe(si)
	})
	if !s.backend.CompareAndSwap(nil, b) {
		return errors.New("server: SetEngine called twice")
	}
	if s.opts.StatsInterval > 0 {
		ctx, cancel := context.WithCancel(context.Background())
		s.mu.Lock()
		s.stopStats, s.statsDone = cancel, make(chan struct{})
		s.mu.Unlock()
		l := &statsLoop{e: e, log: s.opts.Logger, interval: s.opts.StatsInterval}
		go func() {
			defer close(s.statsDone)
			l.run(ctx)
		}()
	}
	return nil
}

// ServedNames are the names a model answers to: names when given (vLLM's
// --served-model-name), else the reference the command line gave (vLLM
// answers to the name on its command line, so `pagoda serve smollm2`
// answers to "smollm2") and the GGUF file's base name (ModelName), each
// once. The first is the name responses and metrics carry: the reference,
// unless it is a file's path, when the base name comes first.
func ServedNames(names []string, ref, path string) []string {
	if len(names) > 0 {
		return names
	}
	base := ModelName(path)
	switch {
	case ref == "" || ref == base:
		return []string{base}
	case strings.HasSuffix(ref, ".gguf"):
		return []string{base, ref}
	}
	return []string{ref, base}
}

// ModelName is the default served model name of a GGUF path: its base
// name without ".gguf".
func ModelName(path string) string {
	return strings.TrimSuffix(filepath.Base(path), ".gguf")
}

// middleware wraps the routes: the CORS policy outermost (a preflight is
// answered before authentication), then the request id.
func (s *Server) middleware(h http.Handler) http.Handler {
	c := DefaultCORS()
	if s.opts.CORS != nil {
		c = *s.opts.CORS
	}
	return newCORS(c).wrap(s.withRequestID(h))
}

// Handler returns the HTTP handler (for tests and custom servers).
func (s *Server) Handler() http.Handler { return s.handler }

// Registry returns the Prometheus registry served at /metrics.
func (s *Server) Registry() *prometheus.Registry { return s.reg }

// Serve accepts connections on ln until Shutdown; it returns
// http.ErrServerClosed then. Headers must arrive within ReadHeaderTimeout
// and bodies within a minute; idle keep-alive connections close after 2
// minutes; no write timeout, since streams last as long as generation does.
func (s *Server) Serve(ln net.Listener) error {
	hs := &http.Server{Handler: s.handler, ReadHeaderTimeout: s.opts.ReadHeaderTimeout, IdleTimeout: 2 * time.Minute,
		MaxHeaderBytes: 1 << 20, ErrorLog: s.opts.Logger}
	s.mu.Lock()
	if s.draining.Load() {
		s.mu.Unlock()
		ln.Close()
		return http.ErrServerClosed
	}
	s.http = hs
	s.mu.Unlock()
	return hs.Serve(ln)
}

// Shutdown stops accepting connections and new requests, and waits for
// in-flight requests until ctx ends; then it aborts the rest in the engine
// and closes their connections. It also stops the stats loop. It returns
// ctx's error when requests had to be aborted.
func (s *Server) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	s.draining.Store(true)
	hs, stop, done := s.http, s.stopStats, s.statsDone
	s.mu.Unlock()
	var err error
	if hs != nil {
		err = hs.Shutdown(ctx)
	}
	if err == nil {
		err = s.waitIdle(ctx)
	}
	if err != nil {
		s.abortAll() // handlers abort their engine requests and return
		wait, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		s.waitIdle(wait)
		cancel()
		if hs != nil {
			hs.Close()
		}
	}
	if stop != nil {
		stop()
		<-done
	}
	return err
}

// waitIdle waits until no handler runs, or ctx ends.
func (s *Server) waitIdle(ctx context.Context) error {
	t := time.NewTicker(5 * time.Millisecond)
	defer t.Stop()
	for s.active.Load() > 0 {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
	return nil
}

// newID returns prefix followed by 24 random hex digits.
func newID(prefix string) string {
	var b [12]byte
	rand.Read(b[:])
	return prefix + hex.EncodeToString(b[:])
}
