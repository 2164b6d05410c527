package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"time"

	"pagoda/engine"
	"pagoda/grammar"
	"pagoda/tokenizer"
)

// benchSchema is the default schema of `pagoda bench structured`: a list of
// records long enough that no output completes it within --max-tokens, so
// constrained and free requests generate the same number of tokens.
const benchSchema = `{"type": "object", "properties": {"people": {"type": "array", "minItems": 50, "items": {
  "type": "object", "properties": {"name": {"type": "string"}, "age": {"type": "integer"},
  "role": {"enum": ["admin", "user", "guest"]}, "tags": {"type": "array", "items": {"type": "string"}}},
  "required": ["name", "age", "role"]}}}, "required": ["people"]}`

// runBenchStructured implements `pagoda bench structured`: output tokens/s
// of JSON-schema-constrained decoding against free decoding, same prompts and
// token counts, at each concurrency, and the time of the grammar masks.
func runBenchStructured(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("bench structured", stdout)
	model := fs.String("model", defaultModelRef, modelFlagHelp)
	levels := fs.String("concurrency", "1,32", "comma-separated numbers of sequences run at once")
	maxTokens := fs.Int("max-tokens", 64, "tokens generated per request")
	schemaFile := fs.String("schema", "", "JSON Schema file (default: a list of records longer than --max-tokens)")
	threads := fs.Int("threads", 0, threadsFlagHelp)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	cs, err := parseIntList("--concurrency", *levels)
	if err != nil {
		return usageError{err}
	}
	if *maxTokens < 1 {
		return usageError{errors.New("--max-tokens must be ≥ 1")}
	}
	schema := []byte(benchSchema)
	if *schemaFile != "" {
		if schema, err = os.ReadFile(*schemaFile); err != nil {
			return usageError{err}
		}
	}
	g, err := grammar.FromJSONSchema(schema, false)
	if err != nil {
		return fmt.Errorf("--schema: %w", err)
	}
	if *model, err = resolveModel(*model, stderr); err != nil {
		return err
	}
	for _, c := range cs {
		if err := benchStructuredLevel(*model, c, *threads, *maxTokens, g, stdout); err != nil {
			return err
		}
	}
	return nil
}

// benchStructuredLevel runs 2c requests at concurrency c: a warm-up
// constrained run, then free and constrained runs of the same prompts.
func benchStructuredLevel(model string, c, threads, maxTokens int, g *grammar.Grammar, w io.Writer) error {
	cfg := engine.DefaultConfig(model)
	cfg.MaxNumSeqs, cfg.Threads, cfg.MaxModelLen = c, threads, 512
	e, err := engine.New(cfg)
	if err != nil {
		return err
	}
	defer e.Close()
	var masks []time.Duration
	var maskTotal time.Duration
	var maskCount int
	e.OnStep(func(s engine.StepInfo) {
		if s.Masks > 0 {
			masks = append(masks, s.MaskMax)
			maskTotal += s.MaskTime
			maskCount += s.Masks
		}
	})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	prompts, err := structuredPrompts(e.Tokenizer(), 2*c)
	if err != nil {
		return err
	}
	free := engine.GreedyParams(maxTokens)
	free.IgnoreEOS = true
	constrained := engine.GreedyParams(maxTokens)
	constrained.Grammar = g
	if _, err := e.Generate(ctx, prompts[:c], constrained); err != nil { // warm-up
		return err
	}
	masks, maskTotal, maskCount = masks[:0], 0, 0
	freeRate, _, err := outputRate(ctx, e, prompts, free)
	if err != nil {
		return err
	}
	rate, n, err := outputRate(ctx, e, prompts, constrained)
	if err != nil {
		return err
	}
	slices.Sort(masks)
	p99 := time.Duration(0)
	if len(masks) > 0 {
		p99 = masks[min(len(masks)-1, len(masks)*99/100)]
	}
	mean := time.Duration(0)
	if maskCount > 0 {
		mean = maskTotal / time.Duration(maskCount)
	}
	fmt.Fprintf(w, "concurrency %d: free %.1f output tok/s, constrained %.1f output tok/s (%.1f%% of free, %d tokens); mask mean %v, p99 of the slowest mask per step %v (%d masks)\n",
		c, freeRate, rate, 100*rate/freeRate, n, mean.Round(time.Microsecond), p99.Round(time.Microsecond), maskCount)
	return nil
}

// outputRate generates prompts with p and returns output tokens/s.
func outputRate(ctx context.Context, e *engine.Engine, prompts [][]int32, p engine.SamplingParams) (float64, int, error) {
	start := time.Now()
	outs, err := e.Generate(ctx, prompts, p)
	if err != nil {
		return 0, 0, err
	}
	n := 0
	for _, o := range outs {
		for _, c := range o.Outputs {
			n += len(c.TokenIDs)
		}
	}
	return float64(n) / time.Since(start).Seconds(), n, nil
}

// structuredPrompts are n chat prompts asking for JSON, each different.
func structuredPrompts(tok *tokenizer.Tokenizer, n int) ([][]int32, error) {
	topics := []string{"a software team", "a school class", "a football club", "a choir", "a hospital ward", "a kitchen crew"}
	out := make([][]int32, n)
	for i := range out {
		msg := fmt.Sprintf("List the members of %s (%d of them) as JSON.", topics[i%len(topics)], 5+i)
		text, err := tok.ApplyChatTemplate([]tokenizer.Message{{Role: "user", Content: msg}}, true)
		if err != nil {
			return nil, err
		}
		out[i] = tok.Encode(text, false, true)
	}
	return out, nil
}
