package main

import (
	"fmt"
	"io"
	"os"

	"pagoda/bucket"
)

// runBuckets implements `pagoda buckets [flags]`: it prints the bucket
// configs, ranges and bucket lists of both phases for the given limits, and
// the warnings (overrides the exponential strategy ignores, …) on stderr.
// PAGODA_*_BUCKET_* environment variables are read first; flags win.
//
// --max-num-seqs defaults to 64 rather than vLLM's 256: a CPU runs far fewer
// sequences per step profitably.
func runBuckets(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("buckets", stdout)
	var l bucket.Limits
	fs.IntVar(&l.MaxNumSeqs, "max-num-seqs", 64, "most sequences in one step (vLLM: 256; 64 suits CPUs)")
	fs.IntVar(&l.MaxNumPrefillSeqs, "max-num-prefill-seqs", 0, "most sequences in one prompt step (0: --max-num-seqs)")
	fs.IntVar(&l.MaxNumBatchedTokens, "max-num-batched-tokens", 2048, "token budget of one step")
	fs.IntVar(&l.MaxModelLen, "max-model-len", 8192, "longest sequence, prompt plus output")
	fs.IntVar(&l.BlockSize, "block-size", 16, "tokens per KV cache block")
	fs.IntVar(&l.NumBlocks, "num-blocks", 0,
		"KV cache blocks (0: max-num-seqs × ⌈max-model-len / block-size⌉)")
	opts := bucket.DefaultOptions()
	env, err := bucket.OverridesFromEnv(os.LookupEnv)
	if err != nil {
		return usageError{err}
	}
	opts.Overrides = env
	opts.RegisterFlags(fs)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageError{fmt.Errorf("unexpected arguments %q", fs.Args())}
	}
	t, err := bucket.New(l, opts)
	if err != nil {
		return usageError{err}
	}
	for _, w := range t.Warnings {
		fmt.Fprintln(stderr, "warning:", w)
	}
	return t.Describe(stdout)
}
