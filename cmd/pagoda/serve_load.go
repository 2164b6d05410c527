package main

import (
	"context"
	"fmt"
	"io"
	"log"
	"os"
	"strconv"
	"strings"
	"time"

	"pagoda/engine"
	"pagoda/model"
	"pagoda/server"
)

// warmup captures the step plans, logging the bucket warnings, progress
// (see warmupProgress) and what it cost.
func warmup(e *engine.Engine, logger *log.Logger, progress io.Writer) error {
	if t := e.Runner().Buckets(); t != nil {
		for _, w := range t.Warnings {
			logger.Printf("WARNING %s", w)
		}
	}
	st, err := e.Warmup(warmupProgress(progress, isTerminal(progress), logger, time.Now))
	if err != nil {
		return err
	}
	if st.Plans > 0 {
		logger.Printf("INFO warm-up: %d plans captured (%d runs) in %v; %.1f MiB of activations for up to %d tokens",
			st.Plans, st.Runs, st.Duration.Round(time.Millisecond), float64(st.Bytes)/(1<<20), st.MaxTokens)
	}
	return nil
}

// warmupProgress reports the warm-up of the bucket shapes: on a terminal
// one progress bar, redrawn in place and erased at the end (as
// loadEngine's spinner); otherwise a log line "warm-up: N/M shapes" at
// most every 2 s, and at the end.
func warmupProgress(w io.Writer, tty bool, logger *log.Logger, now func() time.Time) func(done, total int) {
	start := now()
	last := start
	return func(done, total int) {
		t := now()
		switch {
		case tty && done < total:
			fmt.Fprintf(w, "\r%s", progressBar(done, total, t.Sub(start)))
		case tty:
			fmt.Fprint(w, "\r\033[K")
		case t.Sub(last) >= 2*time.Second || done == total:
			logger.Printf("INFO warm-up: %d/%d shapes", done, total)
			last = t
		}
	}
}

// progressBar is "warm-up [#####-----] 5/11 shapes 1.2s", 30 cells wide.
func progressBar(done, total int, elapsed time.Duration) string {
	const width = 30
	filled := 0
	if total > 0 {
		filled = min(width, done*width/total)
	}
	return fmt.Sprintf("warm-up [%s%s] %d/%d shapes %.1fs", strings.Repeat("#", filled),
		strings.Repeat("-", width-filled), done, total, elapsed.Seconds())
}

// kvCacheLine says how big the KV cache is and why (engine.KVCacheSizing).
func kvCacheLine(e *engine.Engine) string {
	cfg := e.Config()
	s := cfg.KVCache
	ranks := ""
	if cfg.TensorParallel != nil && cfg.TensorParallel.Size() > 1 {
		ranks = fmt.Sprintf(" on each of %d tensor-parallel ranks", cfg.TensorParallel.Size())
	}
	line := fmt.Sprintf("INFO KV cache: %d blocks × %d tokens = %d tokens, %.1f MiB %s%s: %s",
		s.NumBlocks, cfg.BlockSize, s.NumBlocks*cfg.BlockSize, float64(s.Bytes())/(1<<20), cfg.KVCacheType, ranks, s.Reason)
	if s.Groups != "" {
		line += fmt.Sprintf("; %s: a sequence of --max-model-len %d holds at most %d blocks, %.1f MiB (%.1f MiB with full attention everywhere)",
			s.Groups, cfg.MaxModelLen, s.SeqBlocks, float64(int64(s.SeqBlocks)*s.BlockBytes)/(1<<20), float64(s.FullSeqBytes)/(1<<20))
	}
	if d, ok := e.DraftKVCache(); ok {
		line += fmt.Sprintf("; draft model's KV cache: %d blocks, %.1f MiB: %s", d.NumBlocks, float64(d.Bytes())/(1<<20), d.Reason)
	}
	return line
}

// loadEngine builds the engine while reporting progress on stderr: a
// spinner line on a terminal, else a line every 5 s. It returns
// context.Canceled when ctx ends first (the load goes on in the background
// until the process exits).
func loadEngine(ctx context.Context, cfg engine.Config, stderr io.Writer) (*engine.Engine, error) {
	type result struct {
		e   *engine.Engine
		err error
	}
	done := make(chan result, 1)
	start := time.Now()
	go func() {
		e, err := engine.New(cfg)
		done <- result{e, err}
	}()
	tty := isTerminal(stderr)
	period := 5 * time.Second
	if tty {
		period = 100 * time.Millisecond
	}
	tick := time.NewTicker(period)
	defer tick.Stop()
	spin := `|/-\`
	fmt.Fprintf(stderr, "loading %s (mapping weights, sizing the KV cache)\n", cfg.Model)
	for i := 0; ; i++ {
		select {
		case r := <-done:
			if tty {
				fmt.Fprint(stderr, "\r\033[K")
			}
			if r.err == nil {
				fmt.Fprintf(stderr, "loaded in %.1fs\n", time.Since(start).Seconds())
			}
			return r.e, r.err
		case <-ctx.Done():
			return nil, context.Canceled
		case <-tick.C:
			if tty {
				fmt.Fprintf(stderr, "\r%c loading model… %.1fs", spin[i%len(spin)], time.Since(start).Seconds())
			} else {
				fmt.Fprintf(stderr, "still loading model: %.0fs elapsed\n", time.Since(start).Seconds())
			}
		}
	}
}

// isTerminal reports whether w is a character device (a terminal).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// startupLine says where the server listens, what it serves, and how big
// the KV cache is.
func startupLine(e *engine.Engine, addr string, opts server.Options) string {
	cfg, mc := e.Config(), e.ModelConfig()
	dev, host := e.NumBlocks()
	ranks, tp := 1, ""
	if cfg.TensorParallel != nil && cfg.TensorParallel.Size() > 1 {
		ranks = cfg.TensorParallel.Size()
		tp = fmt.Sprintf(" on each of %d tensor-parallel ranks", ranks)
	}
	per := model.BlockBytes(mc.KVLayout().Tensors, cfg.BlockSize, mc.KVHeads/ranks, mc.HeadDim, cfg.KVCacheType)
	names := server.ServedNames(opts.ServedModelNames, opts.ModelRef, cfg.Model)
	quoted := make([]string, len(names))
	for i, n := range names {
		quoted[i] = strconv.Quote(n)
	}
	name := strings.Join(quoted, ", ")
	return fmt.Sprintf("INFO pagoda %s serving %s (%s) on http://%s — KV cache: %d blocks × %d tokens = %d tokens "+
		"(%.1f MiB %s%s), swap %d blocks; max-model-len %d, max-num-seqs %d, max-num-batched-tokens %d, "+
		"long-prefill-token-threshold %d, max-num-partial-prefills %d (%d long), prefix caching %v",
		version, name, cfg.Model, addr, dev, cfg.BlockSize, dev*cfg.BlockSize, float64(dev*per)/(1<<20),
		cfg.KVCacheType, tp, host, cfg.MaxModelLen, cfg.MaxNumSeqs, cfg.MaxNumBatchedTokens,
		cfg.LongPrefillTokenThreshold, cfg.MaxNumPartialPrefills, max(cfg.MaxLongPartialPrefills, 1), cfg.EnablePrefixCaching)
}
