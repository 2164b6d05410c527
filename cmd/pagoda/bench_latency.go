package main

import (
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime/pprof"
	"strings"
	"time"

	"pagoda/dist"
	"pagoda/gguf"
	"pagoda/kernels"
	"pagoda/model"
	"pagoda/sched"
)

// latencyFlags are the flags of `pagoda bench latency`.
type latencyFlags struct {
	model      string
	threads    string
	reps       int
	pp, tg     int
	batches    string
	depths     depthList // context depths of the pp and tg tests (llama-bench's -d)
	timeAttn   bool      // time the attention kernels apart (model.AttentionTimer)
	batchCtx   int
	batchSteps int
	blockSize  int
	kv         string
	outputJSON string
	cpuProfile string
	seed       uint64
	noRepack   bool
	tpSize     int
	ep         bool
	dbo        sched.DBO
	comm       dist.Comm // tensor parallelism (nil: one process)
	exact      bool
}

// latencyResult is one row of the report.
type latencyResult struct {
	Test     string  `json:"test"`
	Threads  int     `json:"threads"`
	Tokens   float64 `json:"tokens_per_second"` // mean over repetitions
	SD       float64 `json:"sd"`
	Fraction float64 `json:"fraction"` // of the ceiling below
	Ceiling  string  `json:"ceiling"`
	// ReadGBs is the read bandwidth a bandwidth-bound test (tg, batched
	// decode) is measured against: the mean of probes run just before and
	// just after it, since a VM's bandwidth can move by 2× between minutes
	// (the ceilings table's probe ran at the start); 0 for pp tests.
	ReadGBs float64 `json:"read_gbs,omitempty"`
	// The per-step time split with tensor parallelism (model.CommTimes),
	// means over the test's steps in milliseconds, and the steps run as
	// two micro-batches (dual-batch overlap).
	Steps      int     `json:"steps"`
	SplitSteps int     `json:"split_steps"`
	ComputeMs  float64 `json:"compute_ms_per_step"`
	CommMs     float64 `json:"communication_ms_per_step"`
	WaitMs     float64 `json:"wait_ms_per_step"`
	// Depth is the context already in the cache before the test's tokens
	// (--depth); 0 for the batched tests, whose context is --batch-ctx.
	Depth int `json:"depth"`
	// With --time-attention: the mean time per step in the attention
	// kernels (model.AttentionTimer) and in the rest of the forward pass.
	AttentionMs float64 `json:"attention_ms_per_step,omitempty"`
	OtherMs     float64 `json:"other_ms_per_step,omitempty"`
	// The model's load time on these threads (model.Load: the file
	// mapped, its weights packed) and the process's resident memory
	// right after it, in MiB, all of it (VmRSS, with the mapped file's
	// pages) and the anonymous part (RssAnon); 0 where
	// /proc/self/status has neither.
	LoadSeconds float64 `json:"load_seconds"`
	RSSMiB      float64 `json:"rss_mib_after_load"`
	AnonMiB     float64 `json:"anon_mib_after_load"`
}

// runBenchLatency implements `pagoda bench latency`, like llama-bench: the
// model is driven directly (no engine) for prefill (pp) and single-sequence
// decode (tg) on every thread count, and for batched decode of several
// sequences with a context each; with --depth, the pp and tg tests run
// after that many tokens of context are already in the cache (prefilled
// first, in steps of depthChunk tokens, untimed), as llama-bench -d does;
// every figure is also given as a fraction of
// the machine ceiling measured in the same run: prefill FLOPs against the
// int8 dot-product peak, decode weight bytes read per step against the read
// bandwidth of a working set the size of the weights.
func runBenchLatency(args []string, stdout, stderr io.Writer) error {
	f, err := parseLatencyFlags(args, stdout)
	if err != nil {
		return err
	}
	if f.comm, err = tensorParallel(f.tpSize); err != nil {
		return err
	}
	if f.comm != nil {
		defer f.comm.Close()
		if f.comm.Rank() > 0 { // runs the same tests in lock-step; rank 0 reports
			stdout, f.outputJSON, f.cpuProfile = io.Discard, "", ""
		}
	}
	ts, err := parseThreads(f.threads)
	if err != nil {
		return err
	}
	bs, err := parseIntList("--batch", f.batches)
	if err != nil {
		return err
	}
	kvType, err := model.ParseKVType(f.kv)
	if err != nil {
		return usageError{fmt.Errorf("--kv: %w", err)}
	}
	if f.model, err = resolveModel(f.model, stderr); err != nil {
		return err
	}
	cost, err := readCost(f.model)
	if err != nil {
		return err
	}
	if need := f.depths.max() + max(f.pp, f.tg); cost.ctxLen > 0 && need > cost.ctxLen {
		return usageError{fmt.Errorf("--depth %d with --pp %d and --tg %d needs %d positions, beyond the model's context length %d",
			f.depths.max(), f.pp, f.tg, need, cost.ctxLen)}
	}
	c := measureCeilings(ts, max(64, int(cost.weightBytes>>20)))
	c.print(stdout)
	fmt.Fprintf(stdout, "\nmodel %s: %.1f MiB, %.1f M params; %.1f MiB of weights and %.2f GFLOP of matrix products per token\n\n",
		filepath.Base(f.model), float64(cost.fileBytes)/(1<<20), float64(cost.params)/1e6,
		float64(cost.weightBytes)/(1<<20), 2*float64(cost.macs)/1e9)
	if cost.experts > 0 {
		fmt.Fprintf(stdout, "(a mixture of experts: %d of %d experts per token, %.1f MiB of their %.1f MiB of expert weights; "+
			"a step of b sequences reads the experts any of them runs, as uniform routing would choose)\n\n",
			cost.expertsUsed, cost.experts, float64(cost.expertBytes)*float64(cost.expertsUsed)/float64(cost.experts)/(1<<20),
			float64(cost.expertBytes)/(1<<20))
	}
	if f.cpuProfile != "" {
		stop, err := startProfile(f.cpuProfile)
		if err != nil {
			return err
		}
		defer stop()
	}
	fmt.Fprintln(stdout, "| threads | test | t/s | of ceiling |")
	fmt.Fprintln(stdout, "| ---: | :--- | ---: | :--- |")
	var all []latencyResult
	for _, t := range ts {
		rs, err := latencyRuns(f, t, bs, kvType, cost, c)
		if len(rs) > 0 {
			defer fmt.Fprintf(stdout, "\n%d threads: model loaded in %.1f s; resident memory after the load %.0f MiB, %.0f MiB of it anonymous\n",
				t, rs[0].LoadSeconds, rs[0].RSSMiB, rs[0].AnonMiB)
		}
		for _, r := range rs {
			at := ""
			if r.ReadGBs > 0 {
				at = fmt.Sprintf(", %.1f GB/s around the test", r.ReadGBs)
			}
			fmt.Fprintf(stdout, "| %d | %s | %.2f ± %.2f | %.1f%% of %s%s |\n", r.Threads, r.Test, r.Tokens, r.SD, 100*r.Fraction, r.Ceiling, at)
		}
		all = append(all, rs...)
		if err != nil {
			return err
		}
	}
	if f.tpSize > 1 {
		printBreakdown(stdout, f.tpSize, all)
	}
	if f.timeAttn {
		printAttention(stdout, all)
	}
	return writeJSON(f.outputJSON, map[string]any{"ceilings": c, "results": all})
}

func parseLatencyFlags(args []string, out io.Writer) (latencyFlags, error) {
	fs := newFlagSet("bench latency", out)
	var f latencyFlags
	fs.StringVar(&f.model, "model", defaultModelRef, modelFlagHelp)
	fs.StringVar(&f.threads, "threads", "", "comma-separated thread counts (default 1 and GOMAXPROCS)")
	fs.BoolVar(&f.exact, "exact-arithmetic", false, exactFlagHelp)
	fs.BoolVar(&f.noRepack, "no-repack", false, "with --exact-arithmetic's llama.cpp arithmetic, keep Q4_0 weights plain too (llama.cpp's --no-repack); implies --exact-arithmetic")
	fs.IntVar(&f.reps, "reps", 3, "repetitions of each test")
	fs.IntVar(&f.pp, "pp", 512, "prompt tokens of the prefill test")
	fs.IntVar(&f.tg, "tg", 128, "generated tokens of the decode test")
	fs.StringVar(&f.batches, "batch", "1,4,16,32", "sequences of the batched decode tests")
	f.depths = depthList{0}
	fs.Var(&f.depths, "depth", "comma-separated context depths: the pp and tg tests run after this many tokens are "+
		"already in the KV cache (prefilled first, untimed; llama-bench's -d), e.g. 0,4096")
	fs.Var(&f.depths, "d", "the same as --depth")
	fs.BoolVar(&f.timeAttn, "time-attention", false, "time the attention kernels apart from the rest of each step "+
		"(each layer's attention then runs as its own pool job, unfused from the output projection) and print the split")
	fs.IntVar(&f.batchCtx, "batch-ctx", 128, "context tokens of each sequence in the batched tests")
	fs.IntVar(&f.batchSteps, "batch-steps", 16, "decode steps timed in each batched test")
	fs.IntVar(&f.blockSize, "block-size", 16, "tokens per KV block")
	fs.StringVar(&f.kv, "kv", "f16", "KV cache type: f32, f16, bf16 or q8_0")
	fs.StringVar(&f.outputJSON, "output-json", "", outputJSONFlagHelp)
	fs.Uint64Var(&f.seed, "seed", 1, "seed of the random tokens")
	fs.StringVar(&f.cpuProfile, "cpuprofile", "", "write a CPU profile of the tests to this file")
	fs.IntVar(&f.tpSize, "tensor-parallel-size", 1, tensorParallelHelp)
	fs.BoolVar(&f.ep, "enable-expert-parallel", false, expertParallelHelp)
	registerDBO(fs, &f.dbo)
	if err := parseFlags(fs, args); err != nil {
		return f, err
	}
	if f.tpSize < 1 {
		return f, usageError{fmt.Errorf("--tensor-parallel-size must be ≥ 1, got %d", f.tpSize)}
	}
	if f.dbo.Enable {
		if err := f.dbo.Validate(); err != nil {
			return f, usageError{err}
		}
	}
	if f.reps < 1 || f.pp < 1 || f.tg < 1 || f.batchCtx < 1 || f.batchSteps < 1 || f.blockSize < 1 {
		return f, usageError{errors.New("--reps, --pp, --tg, --batch-ctx, --batch-steps and --block-size must be ≥ 1")}
	}
	return f, nil
}

// modelCost is what one token costs the model, from its GGUF file.
type modelCost struct {
	fileBytes int64
	params    int64
	// weightBytes is what a decode step of one token reads: the dense
	// matrices, the norms and, of a mixture of experts' 3-D expert
	// tensors, the share of the experts a token runs (used/experts).
	weightBytes int64
	macs        int64 // multiply-adds of those matrices per token
	headMACs    int64 // of which the output head's (a prefill runs it on its last token only)
	attnMACs    int64 // attention multiply-adds per token per context position
	ctxLen      int   // trained context length (0: the file names none)
	// A mixture of experts: every expert tensor's bytes, the expert count
	// and the experts per token (0 for a dense model).
	expertBytes          int64
	experts, expertsUsed int
}

// readCost sums the weights of a model file a decode step reads: the 2-D
// matrices (all of them but the token embeddings, which are read one row
// per token, unless they are tied to the output head), the 1-D norms and
// biases, and of the 3-D expert tensors of a mixture of experts only the
// experts a token runs (expert_used_count of expert_count).
func readCost(path string) (modelCost, error) {
	f, err := gguf.Open(path)
	if err != nil {
		return modelCost{}, err
	}
	defer f.Close()
	var c modelCost
	arch, _ := f.String("general.architecture")
	experts, _ := f.Uint(arch + ".expert_count")
	used, _ := f.Uint(arch + ".expert_used_count")
	c.experts, c.expertsUsed = int(experts), int(used)
	_, hasOutput := f.TensorInfo("output.weight")
	for _, t := range f.Tensors {
		c.params += int64(t.NumElements())
		c.fileBytes += t.Size
		switch {
		case t.Name == "token_embd.weight" && hasOutput:
		case len(t.Dims) == 1:
			c.weightBytes += t.Size
		case len(t.Dims) == 2:
			c.weightBytes += t.Size
			c.macs += int64(t.NumElements())
			if t.Name == "output.weight" || t.Name == "token_embd.weight" && !hasOutput {
				c.headMACs = int64(t.NumElements())
			}
		case len(t.Dims) == 3 && experts > 0 && used > 0 && t.Dims[2] == int(experts):
			c.expertBytes += t.Size
			c.weightBytes += t.Size * int64(used) / int64(experts)
			c.macs += int64(t.NumElements()) * int64(used) / int64(experts)
		}
	}
	layers, _ := f.Uint(arch + ".block_count")
	dim, _ := f.Uint(arch + ".embedding_length")
	c.attnMACs = 2 * int64(layers) * int64(dim) // q·k and p·v over all query heads
	ctx, _ := f.Uint(arch + ".context_length")
	c.ctxLen = int(ctx)
	if c.weightBytes == 0 {
		return c, fmt.Errorf("%s: no weight matrices", path)
	}
	return c, nil
}

// stepBytes is what a decode step of b sequences reads of the weights:
// every dense weight once and, of a mixture of experts, the experts that
// at least one of the b tokens runs, expected under uniform routing
// (1 − (1 − used/experts)^b of them; per token, used/experts).
func (c modelCost) stepBytes(b int) float64 {
	if c.experts == 0 || c.expertsUsed == 0 {
		return float64(c.weightBytes)
	}
	share := float64(c.expertsUsed) / float64(c.experts)
	dense := float64(c.weightBytes) - float64(c.expertBytes)*share
	return dense + float64(c.expertBytes)*(1-math.Pow(1-share, float64(b)))
}

// latencyRuns loads the model on threads threads and runs every test.
func latencyRuns(f latencyFlags, threads int, batches []int, kvType model.KVType, cost modelCost, c *ceilings) ([]latencyResult, error) {
	opts := model.LoadOptions{Threads: threads, ExactArithmetic: f.exact, NoRepack: f.noRepack}
	if f.comm != nil {
		opts.TensorParallel, opts.ExpertParallel = f.comm, f.ep
	}
	t0 := time.Now()
	m, _, err := model.Load(f.model, opts)
	if err != nil {
		return nil, err
	}
	defer m.Close()
	loadSec := time.Since(t0).Seconds()
	rssMiB, anonMiB := residentMiB()
	if at, ok := m.(model.AttentionTimer); ok && f.timeAttn {
		at.TimeAttention(true)
	}
	ctxs, reserve := seqContexts(f, batches)
	r, err := newSeqRunner(m, ctxs, reserve, f.blockSize, kvType, f.seed)
	if err != nil {
		return nil, err
	}
	r.dbo = f.dbo
	ci := c.at(threads)
	peak := c.DotGOps[ci] * 1e9
	probeBytes := c.ReadMiB << 20
	// probeAround times a bandwidth-bound test between two read probes
	// and returns its rates and the probes' mean bandwidth in bytes/s.
	probeAround := func(work func() (int, error)) ([]float64, float64, error) {
		before := kernels.ReadBandwidth(threads, probeBytes, max(2, int(1e9)/probeBytes))
		tps, err := r.timeReps(f.reps, work)
		after := kernels.ReadBandwidth(threads, probeBytes, max(2, int(1e9)/probeBytes))
		return tps, (before + after) / 2, err
	}
	mc := m.Config()
	kvToken := float64(model.BlockBytes(mc.Layers, 1, mc.KVHeads, mc.HeadDim, kvType)) // K and V of one position, all layers
	var rs []latencyResult
	add := func(test string, depth int, tps []float64, bw float64, frac func(float64) float64, ceiling string) {
		mean, sd := meanSD(tps)
		res := latencyResult{Test: test, Threads: threads, Tokens: mean, SD: sd, Fraction: frac(mean), Ceiling: ceiling, Depth: depth,
			ReadGBs: bw / 1e9, LoadSeconds: loadSec, RSSMiB: rssMiB, AnonMiB: anonMiB}
		r.totals.fill(&res)
		rs = append(rs, res)
	}
	if err := r.prefill(0, 0, f.pp); err != nil { // warm-up, untimed, as llama-bench's
		return nil, err
	}
	for _, d := range f.depths {
		if err := r.fillContext(0, d); err != nil {
			return rs, err
		}
		// Per prompt token; the output head runs on the last token alone.
		ppFlops := 2 * (float64(cost.macs-cost.headMACs) + float64(cost.headMACs)/float64(f.pp) +
			float64(cost.attnMACs)*(float64(d)+float64(f.pp+1)/2))
		tps, err := r.timeReps(f.reps, func() (int, error) { return f.pp, r.prefill(0, d, f.pp) })
		if err != nil {
			return rs, err
		}
		add(depthName(fmt.Sprintf("pp%d", f.pp), d), d, tps, 0, func(t float64) float64 { return t * ppFlops / peak }, "int8 dot peak")
		tgBytes, ceiling := float64(cost.weightBytes), "read bandwidth"
		if d > 0 { // each step also reads the KV cache of its context
			tgBytes += kvToken * (float64(d) + float64(f.tg)/2)
			ceiling = "read bandwidth (weights + KV cache)"
		}
		tps, bw, err := probeAround(func() (int, error) { return f.tg, r.decodeOne(d, f.tg) })
		if err != nil {
			return rs, err
		}
		add(depthName(fmt.Sprintf("tg%d", f.tg), d), d, tps, bw, func(t float64) float64 { return t * tgBytes / bw }, ceiling)
	}
	for _, b := range batches {
		if err := r.prefillAll(b, f.batchCtx); err != nil {
			return rs, err
		}
		tps, bw, err := probeAround(func() (int, error) { return b * f.batchSteps, r.decodeBatch(b, f.batchCtx, f.batchSteps) })
		if err != nil {
			return rs, err
		}
		stepBytes := cost.stepBytes(b)
		steps := func(t float64) float64 { return t / float64(b) * stepBytes / bw }
		add(fmt.Sprintf("decode %d seqs, ctx %d", b, f.batchCtx), 0, tps, bw, steps, "read bandwidth (weights once per step)")
	}
	return rs, nil
}

// depthName names a test at a depth as llama-bench does ("pp512 @ d4096";
// at depth 0 the plain name).
func depthName(test string, depth int) string {
	if depth == 0 {
		return test
	}
	return fmt.Sprintf("%s @ d%d", test, depth)
}

// startProfile starts a CPU profile into path and returns its stop.
func startProfile(path string) (func(), error) {
	out, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(out); err != nil {
		out.Close()
		return nil, err
	}
	return func() { pprof.StopCPUProfile(); out.Close() }, nil
}

// meanSD returns the mean and sample standard deviation.
func meanSD(xs []float64) (mean, sd float64) {
	for _, x := range xs {
		mean += x
	}
	mean /= float64(len(xs))
	if len(xs) < 2 {
		return mean, 0
	}
	for _, x := range xs {
		sd += (x - mean) * (x - mean)
	}
	return mean, math.Sqrt(sd / float64(len(xs)-1))
}

// parseIntList parses a comma-separated list of positive integers.
func parseIntList(flag, s string) ([]int, error) {
	ts, err := parseThreads(s)
	if err != nil || s == "" {
		return nil, usageError{fmt.Errorf("%s: want comma-separated positive integers, got %q", flag, s)}
	}
	return ts, nil
}

// timeReps runs work reps times and returns each run's tokens per second;
// r.totals then sums the steps of those runs.
func (r *seqRunner) timeReps(reps int, work func() (int, error)) ([]float64, error) {
	var tps []float64
	r.totals = stepTotals{}
	for range reps {
		t0 := time.Now()
		n, err := work()
		if err != nil {
			return tps, err
		}
		tps = append(tps, float64(n)/time.Since(t0).Seconds())
	}
	return tps, nil
}

// residentMiB returns the process's resident memory (VmRSS of
// /proc/self/status) in MiB and, of it, the anonymous memory (RssAnon:
// the packed weights, the buffers, the KV cache); 0 where it cannot be
// read. The rest is the mapped file's pages (RssFile), which the kernel
// may drop.
func residentMiB() (rss, anon float64) {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0, 0
	}
	field := func(line, key string) (float64, bool) {
		v, ok := strings.CutPrefix(line, key)
		if !ok {
			return 0, false
		}
		var kb float64
		if _, err := fmt.Sscan(strings.TrimSuffix(strings.TrimSpace(v), " kB"), &kb); err != nil {
			return 0, false
		}
		return kb / 1024, true
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := field(line, "VmRSS:"); ok {
			rss = v
		} else if v, ok := field(line, "RssAnon:"); ok {
			anon = v
		}
	}
	return rss, anon
}
