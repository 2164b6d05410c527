package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"time"

	"pagoda/engine"
	"pagoda/tokenizer"
)

type throughputFlags struct {
	model        string
	numPrompts   int
	inputLen     int
	outputLen    int
	dataset      string
	seed         uint64
	maxNumSeqs   int
	maxBatched   int
	longPrefill  int
	partial      int
	longPartial  int
	blockSize    int
	threads      int
	kvMemory     int64
	maxModelLen  int
	outputJSON   string
	noPrefixCach bool
	exact        bool
	cpuProfile   string
}

// runBenchThroughput implements `pagoda bench throughput`, like `vllm bench
// throughput`: every prompt is submitted at once to the offline API and the
// engine batches them as it can.
func runBenchThroughput(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("bench throughput", stdout)
	var f throughputFlags
	f.registerWorkload(fs, 128, 64, 64)
	fs.StringVar(&f.dataset, "dataset", "random", "random, or a JSONL file of {\"prompt\": ...} lines")
	registerPrefillFlags(fs, &f.longPrefill, &f.partial, &f.longPartial)
	fs.StringVar(&f.outputJSON, "output-json", "", outputJSONFlagHelp)
	fs.BoolVar(&f.noPrefixCach, "no-enable-prefix-caching", false, "turn prefix caching off")
	fs.BoolVar(&f.exact, "exact-arithmetic", false, exactFlagHelp)
	fs.StringVar(&f.cpuProfile, "cpuprofile", "", "write a CPU profile of the run (not of the load) to this file")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if err := f.checkWorkload(); err != nil {
		return err
	}
	var err error
	if f.model, err = resolveModel(f.model, stderr); err != nil {
		return err
	}
	cfg := f.engineConfig()
	cfg.EnablePrefixCaching = !f.noPrefixCach
	cfg.ExactArithmetic = f.exact
	cfg.LongPrefillTokenThreshold, cfg.MaxNumPartialPrefills, cfg.MaxLongPartialPrefills = f.longPrefill, f.partial, f.longPartial
	e, err := engine.New(cfg)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer e.Close()
	defer cancel()
	prompts, err := benchPrompts(e.Tokenizer(), f)
	if err != nil {
		return err
	}
	p := engine.GreedyParams(f.outputLen)
	p.IgnoreEOS = true
	if f.cpuProfile != "" {
		stop, err := startProfile(f.cpuProfile)
		if err != nil {
			return err
		}
		defer stop()
	}
	start := time.Now()
	outs, err := e.Generate(ctx, prompts, p)
	if err != nil {
		return err
	}
	return reportThroughput(f, prompts, outs, time.Since(start), stdout)
}

// registerWorkload registers the flags of the offline workload and its
// engine that bench throughput and bench plans share, with the defaults
// that differ between them.
func (f *throughputFlags) registerWorkload(fs *flag.FlagSet, inputLen, outputLen, maxNumSeqs int) {
	fs.StringVar(&f.model, "model", defaultModelRef, modelFlagHelp)
	fs.IntVar(&f.numPrompts, "num-prompts", 64, "number of prompts")
	fs.IntVar(&f.inputLen, "input-len", inputLen, "prompt tokens (random dataset)")
	fs.IntVar(&f.outputLen, "output-len", outputLen, "generated tokens per prompt (EOS ignored)")
	fs.Uint64Var(&f.seed, "seed", 0, "seed of the random dataset")
	fs.IntVar(&f.maxNumSeqs, "max-num-seqs", maxNumSeqs, "sequences run at once (the concurrency)")
	fs.IntVar(&f.maxBatched, "max-num-batched-tokens", 2048, "tokens per step")
	fs.IntVar(&f.blockSize, "block-size", 16, "tokens per KV block")
	fs.IntVar(&f.threads, "threads", 0, threadsFlagHelp)
	fs.Int64Var(&f.kvMemory, "kv-cache-memory", 0, "KV cache bytes (0 = default)")
	fs.IntVar(&f.maxModelLen, "max-model-len", 2048, "context length to allocate")
}

// checkWorkload refuses a workload with nothing to run.
func (f *throughputFlags) checkWorkload() error {
	if f.numPrompts < 1 || f.inputLen < 1 || f.outputLen < 1 {
		return usageError{errors.New("--num-prompts, --input-len and --output-len must be ≥ 1")}
	}
	return nil
}

// engineConfig is the engine configuration the workload flags give.
func (f *throughputFlags) engineConfig() engine.Config {
	cfg := engine.DefaultConfig(f.model)
	cfg.MaxNumSeqs, cfg.MaxNumBatchedTokens, cfg.BlockSize = f.maxNumSeqs, f.maxBatched, f.blockSize
	cfg.Threads, cfg.KVCacheMemory, cfg.MaxModelLen = f.threads, f.kvMemory, f.maxModelLen
	return cfg
}

// benchPrompts returns random token prompts (vLLM's random dataset) or the
// prompts of a JSONL file, tokenized.
func benchPrompts(tok *tokenizer.Tokenizer, f throughputFlags) ([][]int32, error) {
	var prompts [][]int32
	if f.dataset == "random" {
		r := rand.New(rand.NewPCG(f.seed, 1))
		for range f.numPrompts {
			p := make([]int32, f.inputLen)
			for i := range p {
				p[i] = int32(r.IntN(tok.VocabSize()-1024)) + 512 // ordinary tokens, clear of specials
			}
			prompts = append(prompts, p)
		}
		return prompts, nil
	}
	file, err := os.Open(f.dataset)
	if err != nil {
		return nil, fmt.Errorf("--dataset: %w", err)
	}
	defer file.Close()
	sc := bufio.NewScanner(file)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for line := 1; sc.Scan() && len(prompts) < f.numPrompts; line++ {
		var rec struct {
			Prompt string `json:"prompt"`
		}
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil || rec.Prompt == "" {
			return nil, fmt.Errorf("--dataset %s line %d: want {\"prompt\": \"...\"}", f.dataset, line)
		}
		prompts = append(prompts, tok.Encode(rec.Prompt, true, false))
	}
	return prompts, sc.Err()
}

func reportThroughput(f throughputFlags, prompts [][]int32, outs []engine.RequestOutput, d time.Duration, w io.Writer) error {
	in, gen := 0, 0
	for i, o := range outs {
		in += len(prompts[i])
		for _, c := range o.Outputs {
			gen += len(c.TokenIDs)
		}
	}
	s := d.Seconds()
	res := map[string]any{
		"num_requests": len(outs), "elapsed_time": s, "total_input_tokens": in, "total_output_tokens": gen,
		"requests_per_second": float64(len(outs)) / s, "output_tokens_per_second": float64(gen) / s,
		"tokens_per_second": float64(in+gen) / s, "max_num_seqs": f.maxNumSeqs,
	}
	fmt.Fprintf(w, "Throughput: %.2f requests/s, %.2f total tokens/s, %.2f output tokens/s (%d requests, %d in + %d out tokens, %.1fs, max-num-seqs %d)\n",
		res["requests_per_second"], res["tokens_per_second"], res["output_tokens_per_second"], len(outs), in, gen, s, f.maxNumSeqs)
	if f.outputJSON == "" {
		return nil
	}
	b, err := json.MarshalIndent(res, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(f.outputJSON, b, 0o644)
}
