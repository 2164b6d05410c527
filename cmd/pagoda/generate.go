package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"time"

	"pagoda/engine"
	"pagoda/internal/modelcache"
	"pagoda/model"
	"pagoda/sched"
	"pagoda/tokenizer"
)

// defaultModelPath is where `make model` puts the default model.
func defaultModelPath() string { return modelcache.Default() }

// modelFlagHelp describes a --model flag.
const modelFlagHelp = "GGUF file, or a model reference: smollm2, gemma3, org/repo[:QUANT], org/repo/file.gguf, hf.co/org/repo[:QUANT], a huggingface.co URL (see pagoda pull --help)"

// Help texts of the flags several commands share.
const (
	threadsFlagHelp    = "kernel threads (0 = all cores)"
	exactFlagHelp      = "compute with llama.cpp's arithmetic, bit for bit (as its default configuration: its matmuls and unfused attention), instead of the fast integer block sums and tiled attention"
	outputJSONFlagHelp = "also write the results to this JSON file"
	tensorParallelHelp = "tensor-parallel ranks: run under mpirun -np N with the MPI build (make build-mpi)"
)

type generateFlags struct {
	model       string
	prompt      string
	system      string
	chat        bool
	maxTokens   int
	temperature float64
	topP        float64
	topK        int
	minP        float64
	repPenalty  float64
	seed        int64
	threads     int
	noRepack    bool
	exact       bool
	maxModelLen int
	kvType      string
	tpSize      int
	ep          bool
	dbo         sched.DBO
}

// runGenerate implements `pagoda generate [MODEL] --prompt P`: one prompt,
// text streamed to stdout, then a line of token counts and rates on stderr.
func runGenerate(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("generate", stdout)
	helpOf(fs).usage = "pagoda generate [MODEL] --prompt P [flags]"
	var g generateFlags
	fs.StringVar(&g.model, "model", "", modelFlagHelp+" (or the positional MODEL; default "+defaultModelRef+")")
	fs.StringVar(&g.prompt, "prompt", "", "the prompt (required)")
	fs.StringVar(&g.system, "system", "", "system message, with --chat")
	fs.BoolVar(&g.chat, "chat", false, "render the prompt as a user message through the model's chat template")
	fs.IntVar(&g.maxTokens, "max-tokens", 128, "tokens to generate at most")
	fs.Float64Var(&g.temperature, "temperature", 0, "sampling temperature (0 = greedy)")
	fs.Float64Var(&g.topP, "top-p", 1, "nucleus sampling probability mass (1 = off)")
	fs.IntVar(&g.topK, "top-k", 0, "sample among the k most likely tokens (0 = off)")
	fs.Float64Var(&g.minP, "min-p", 0, "drop tokens less likely than min-p × the most likely (0 = off)")
	fs.Float64Var(&g.repPenalty, "repetition-penalty", 1, "repetition penalty (1 = off)")
	fs.Int64Var(&g.seed, "seed", -1, "random seed (-1 = random)")
	fs.IntVar(&g.threads, "threads", 0, threadsFlagHelp)
	fs.BoolVar(&g.exact, "exact-arithmetic", false, exactFlagHelp)
	fs.BoolVar(&g.noRepack, "no-repack", false, "with --exact-arithmetic's llama.cpp arithmetic, keep Q4_0 weights plain too (llama.cpp's --no-repack); implies --exact-arithmetic")
	fs.IntVar(&g.maxModelLen, "max-model-len", 0, "context length to allocate (0 = the model's)")
	fs.StringVar(&g.kvType, "kv-cache-dtype", "f16", "KV cache element type: f32, f16, bf16 or q8_0 (llama.cpp's blocks: 8 bits and one f16 scale per 32 values)")
	fs.IntVar(&g.tpSize, "tensor-parallel-size", 1, tensorParallelHelp)
	fs.BoolVar(&g.ep, "enable-expert-parallel", false, expertParallelHelp)
	registerDBO(fs, &g.dbo)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if err := positionalModel(fs, &g.model); err != nil {
		return err
	}
	if g.prompt == "" {
		return usageError{errors.New("--prompt is required")}
	}
	if g.tpSize < 1 {
		return usageError{fmt.Errorf("--tensor-parallel-size must be ≥ 1, got %d", g.tpSize)}
	}
	return generate(g, stdout, stderr)
}

// positionalModel sets *model from the positional MODEL, if any (one at
// most; it must agree with --model when both are given), else to the
// default model when --model is empty.
func positionalModel(fs *flag.FlagSet, model *string) error {
	switch {
	case fs.NArg() > 1:
		return usageError{fmt.Errorf("unexpected arguments %q (one MODEL at most)", fs.Args())}
	case fs.NArg() == 1 && *model != "" && *model != fs.Arg(0):
		return usageError{fmt.Errorf("two models given: %s and --model %s", fs.Arg(0), *model)}
	case fs.NArg() == 1:
		*model = fs.Arg(0)
	case *model == "":
		*model = defaultModelRef
	}
	return nil
}

func generate(g generateFlags, stdout, stderr io.Writer) error {
	var err error
	if g.model, err = resolveModel(g.model, stderr); err != nil {
		return err
	}
	kvType, err := model.ParseKVType(g.kvType)
	if err != nil {
		return usageError{fmt.Errorf("--kv-cache-dtype: %w", err)}
	}
	cfg := engine.DefaultConfig(g.model)
	cfg.Threads, cfg.MaxModelLen, cfg.KVCacheType = g.threads, g.maxModelLen, kvType
	cfg.ExactArithmetic, cfg.NoRepack, cfg.DBO, cfg.ExpertParallel = g.exact, g.noRepack, g.dbo, g.ep
	cfg.MaxNumSeqs, cfg.SwapSpace = 1, 0
	lead, release, err := joinTensorParallel(g.tpSize, &cfg)
	if !lead {
		return err
	}
	defer release()
	if cfg.TensorParallel != nil {
		cfg.EnforceEager = true
	}
	e, err := engine.New(cfg)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer e.Close() // after stop: Close waits for the loop to see ctx end
	defer stop()
	e.Start(ctx)
	prompt, err := renderPrompt(e.Tokenizer(), g)
	if err != nil {
		return err
	}
	p := engine.DefaultSamplingParams()
	p.MaxTokens = g.maxTokens
	p.Temperature, p.TopP, p.TopK = float32(g.temperature), float32(g.topP), g.topK
	p.MinP, p.RepetitionPenalty = float32(g.minP), float32(g.repPenalty)
	if g.seed >= 0 {
		p.Seed = &g.seed
	}
	ids := e.Tokenizer().Encode(prompt, true, g.chat)
	s, err := e.AddRequest(engine.Request{PromptTokens: ids, Params: p})
	if err != nil {
		return err
	}
	return streamText(ctx, s, len(ids), stdout, stderr)
}

func renderPrompt(tok *tokenizer.Tokenizer, g generateFlags) (string, error) {
	if !g.chat {
		return g.prompt, nil
	}
	var msgs []tokenizer.Message
	if g.system != "" {
		msgs = append(msgs, tokenizer.Message{Role: "system", Content: g.system})
	}
	msgs = append(msgs, tokenizer.Message{Role: "user", Content: g.prompt})
	return tok.ApplyChatTemplate(msgs, true)
}

func streamText(ctx context.Context, s *engine.Stream, promptLen int, stdout, stderr io.Writer) error {
	var last engine.RequestOutput
	n := 0
	for o, err := range s.Deltas(ctx) {
		if err != nil {
			return err
		}
		if o.Err != nil {
			return o.Err
		}
		for _, c := range o.Outputs {
			fmt.Fprint(stdout, c.Text)
			n += len(c.TokenIDs)
		}
		last = o
	}
	fmt.Fprintln(stdout)
	m := last.Metrics
	prefill := m.FirstToken.Sub(m.FirstScheduled)
	decode := m.LastToken.Sub(m.FirstToken)
	fmt.Fprintf(stderr, "prompt: %d tokens in %v (%.1f tok/s); generated: %d tokens, decode %.1f tok/s\n",
		promptLen, prefill.Round(time.Millisecond), rate(promptLen, prefill), n, rate(n-1, decode))
	return nil
}

func rate(n int, d time.Duration) float64 {
	if d <= 0 || n <= 0 {
		return 0
	}
	return float64(n) / d.Seconds()
}
