package main

import (
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
)

// depthChunk is the largest step that fills a test's context depth, as
// llama-bench's default micro-batch (-ub 512).
const depthChunk = 512

// maxDepth bounds --depth (a million positions).
const maxDepth = 1 << 20

// depthList is the value of --depth (-d): comma-separated context depths,
// each ≥ 0, as llama-bench's -d takes them ("0,4096,16384"). Setting it
// again replaces the list.
type depthList []int

func (d *depthList) String() string {
	if d == nil || len(*d) == 0 {
		return "0"
	}
	parts := make([]string, len(*d))
	for i, x := range *d {
		parts[i] = strconv.Itoa(x)
	}
	return strings.Join(parts, ",")
}

func (d *depthList) Set(s string) error {
	var ds []int
	for _, f := range strings.Split(s, ",") {
		x, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || x < 0 || x > maxDepth {
			return fmt.Errorf("%q is not a context depth in 0..%d", f, maxDepth)
		}
		ds = append(ds, x)
	}
	*d = ds
	return nil
}

// max is the deepest context of the list (0 when empty).
func (d depthList) max() int {
	if len(d) == 0 {
		return 0
	}
	return slices.Max(d)
}

// seqContexts returns the context of each sequence of the tests and the
// most tokens of one step: sequence 0 runs the pp and tg tests at every
// depth (the context filled in steps of depthChunk), sequences 0..b-1 the
// batched tests of b sequences.
func seqContexts(f latencyFlags, batches []int) (ctxs []int, reserve int) {
	ctxs = []int{f.depths.max() + max(f.pp, f.tg)}
	reserve = max(f.pp, f.tg)
	if f.depths.max() > 0 {
		reserve = max(reserve, min(depthChunk, f.depths.max()))
	}
	for _, b := range batches {
		for len(ctxs) < b {
			ctxs = append(ctxs, 0)
		}
		for s := range b {
			ctxs[s] = max(ctxs[s], f.batchCtx+f.batchSteps)
		}
		reserve = max(reserve, f.batchCtx)
	}
	return ctxs, reserve
}

// printAttention prints each test's mean time per step in the attention
// kernels and in the rest of the forward pass (--time-attention).
func printAttention(w io.Writer, rs []latencyResult) {
	fmt.Fprintln(w, "\nper-step time in the attention kernels and in the rest of the forward pass (ms per step, means over the timed steps):")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| threads | test | steps | attention | rest | attention share |")
	fmt.Fprintln(w, "| ---: | :--- | ---: | ---: | ---: | ---: |")
	for _, r := range rs {
		share := 0.0
		if t := r.AttentionMs + r.OtherMs; t > 0 {
			share = r.AttentionMs / t
		}
		fmt.Fprintf(w, "| %d | %s | %d | %.3f | %.3f | %.1f%% |\n", r.Threads, r.Test, r.Steps, r.AttentionMs, r.OtherMs, 100*share)
	}
}
