package main

import (
	"context"
	"fmt"
	"io"
	"runtime"
	"slices"
	"strings"
	"time"

	"pagoda/bucket"
	"pagoda/engine"
)

type benchPlansFlags struct {
	throughputFlags
	modes      string
	cpuProfile string
}

// planRun is what one configuration of `pagoda bench plans` measured.
type planRun struct {
	mode string

	plans, runs         int
	warmup              time.Duration
	planBytes, heapGrow int64 // warm-up's estimate of reserved buffers; live heap it added

	wall                 time.Duration
	steps                int
	forward, overhead    time.Duration // Σ forward pass; Σ (step − forward)
	overheadP50, ohP99   time.Duration
	gcCycles             uint32
	realTokens, padding  int64 // Σ step tokens; Σ bucket tokens − step tokens (steps run with a plan)
	plannedTokens        int64 // Σ step tokens of steps run with a plan
	misses               int64 // steps no bucket covered (eager)
	realTiles, planTiles int64
}

// runBenchPlans implements `pagoda bench plans`: the captured step plans
// against eager execution on the same offline workload (random prompts of
// --input-len tokens, --output-len generated, --max-num-seqs at once), once
// per mode of --modes (bucketing strategies, and "eager" for
// --enforce-eager). For each it reports warm-up time and plan memory, the
// per-step CPU time outside the forward pass (scheduling, batch building,
// plan lookup, sampling), GC cycles during the run, and the padding the
// buckets add (padding tokens ÷ real tokens, which plans never compute,
// and the attention tiles laid out past the real work, which return at
// once) with the forward time relative to eager as the time it costs.
func runBenchPlans(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("bench plans", stdout)
	var f benchPlansFlags
	f.registerWorkload(fs, 256, 128, 32)
	fs.StringVar(&f.modes, "modes", "exponential,linear,eager", "comma-separated: bucketing strategies (exponential, linear) and eager")
	fs.StringVar(&f.cpuProfile, "cpuprofile", "", "write a CPU profile of the runs to this file")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if err := f.checkWorkload(); err != nil {
		return err
	}
	f.dataset = "random"
	var modes []string
	for _, m := range strings.Split(f.modes, ",") {
		m = strings.TrimSpace(m)
		if _, err := bucket.ParseStrategy(m); err != nil && m != "eager" {
			return usageError{fmt.Errorf("--modes: %q is not exponential, linear or eager", m)}
		}
		modes = append(modes, m)
	}
	var err error
	if f.model, err = resolveModel(f.model, stderr); err != nil {
		return err
	}
	if f.cpuProfile != "" {
		stop, err := startProfile(f.cpuProfile)
		if err != nil {
			return err
		}
		defer stop()
	}
	var runs []planRun
	for _, m := range modes {
		fmt.Fprintf(stderr, "bench plans: %s…\n", m)
		r, err := benchPlansRun(f, m)
		if err != nil {
			return fmt.Errorf("%s: %w", m, err)
		}
		runs = append(runs, r)
	}
	reportPlans(stdout, f, runs)
	return nil
}

func benchPlansRun(f benchPlansFlags, mode string) (planRun, error) {
	r := planRun{mode: mode}
	cfg := f.engineConfig()
	cfg.EnablePrefixCaching = false // random prompts share nothing; keep steps comparable
	if mode == "eager" {
		cfg.EnforceEager = true
	} else {
		s, _ := bucket.ParseStrategy(mode)
		cfg.Bucketing.Strategy = s
	}
	e, err := engine.New(cfg)
	if err != nil {
		return r, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer e.Close()
	defer cancel()
	var ms runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&ms)
	heap0 := ms.HeapAlloc
	ws, err := e.Warmup(nil)
	if err != nil {
		return r, err
	}
	runtime.GC()
	runtime.ReadMemStats(&ms)
	r.plans, r.runs, r.warmup, r.planBytes = ws.Plans, ws.Runs, ws.Duration, ws.Bytes
	r.heapGrow = int64(ms.HeapAlloc) - int64(heap0)
	prompts, err := benchPrompts(e.Tokenizer(), f.throughputFlags)
	if err != nil {
		return r, err
	}
	overheads := make([]time.Duration, 0, 1<<16) // no allocation in the hook
	e.OnStep(func(s engine.StepInfo) {
		r.steps++
		r.forward += s.Forward
		r.overhead += s.Duration - s.Forward
		if len(overheads) < cap(overheads) {
			overheads = append(overheads, s.Duration-s.Forward)
		}
		r.realTokens += int64(s.Tokens)
		if s.PlanTokens > 0 {
			r.plannedTokens += int64(s.Tokens)
			r.padding += int64(s.PlanTokens - s.Tokens)
		}
		r.realTiles += int64(s.Tiles)
		r.planTiles += int64(s.PlanTiles)
	})
	p := engine.GreedyParams(f.outputLen)
	p.IgnoreEOS = true
	runtime.GC()
	runtime.ReadMemStats(&ms)
	gc0 := ms.NumGC
	start := time.Now()
	if _, err := e.Generate(ctx, prompts, p); err != nil {
		return r, err
	}
	r.wall = time.Since(start)
	runtime.ReadMemStats(&ms)
	r.gcCycles = ms.NumGC - gc0
	r.misses = e.Runner().Misses()
	slices.Sort(overheads)
	if n := len(overheads); n > 0 {
		r.overheadP50, r.ohP99 = overheads[n/2], overheads[min(n-1, n*99/100)]
	}
	return r, nil
}

func reportPlans(w io.Writer, f benchPlansFlags, runs []planRun) {
	fmt.Fprintf(w, "bench plans: %d prompts of %d tokens, %d generated each, max-num-seqs %d, max-num-batched-tokens %d, %d threads\n",
		f.numPrompts, f.inputLen, f.outputLen, f.maxNumSeqs, f.maxBatched, f.threads)
	var eager *planRun
	for i := range runs {
		if runs[i].mode == "eager" {
			eager = &runs[i]
		}
	}
	fmt.Fprintf(w, "%-12s %6s %5s %9s %10s %10s | %6s %8s %9s %9s %9s %9s %5s | %8s %8s %8s %9s\n",
		"mode", "plans", "runs", "warm-up", "plan MiB", "heap MiB", "steps", "wall s", "fwd ms/st", "ovh µs/st", "ovh p50", "ovh p99", "GCs",
		"pad/real", "tiles+%", "misses", "fwd/eager")
	for _, r := range runs {
		st := max(1, r.steps)
		pad, tiles := 0.0, 0.0
		if r.plannedTokens > 0 {
			pad = float64(r.padding) / float64(r.plannedTokens)
		}
		if r.realTiles > 0 {
			tiles = 100 * float64(r.planTiles-r.realTiles) / float64(r.realTiles)
		}
		rel := "-"
		if eager != nil && eager.forward > 0 {
			rel = fmt.Sprintf("%.3f", float64(r.forward)/float64(eager.forward))
		}
		fmt.Fprintf(w, "%-12s %6d %5d %8.2fs %10.1f %10.1f | %6d %8.1f %9.2f %9.1f %9.1f %9.1f %5d | %8.3f %7.1f%% %8d %9s\n",
			r.mode, r.plans, r.runs, r.warmup.Seconds(), float64(r.planBytes)/(1<<20), float64(r.heapGrow)/(1<<20),
			r.steps, r.wall.Seconds(), float64(r.forward.Microseconds())/1000/float64(st),
			float64(r.overhead.Nanoseconds())/1000/float64(st), float64(r.overheadP50.Nanoseconds())/1000,
			float64(r.ohP99.Nanoseconds())/1000, r.gcCycles, pad, tiles, r.misses, rel)
	}
	fmt.Fprintln(w, "plan MiB: activation/batch/logit buffers warm-up reserves (runner estimate); heap MiB: live heap warm-up added.")
	fmt.Fprintln(w, "ovh: per-step time outside the forward pass (schedule, batch build, plan lookup, sampling, outputs).")
	fmt.Fprintln(w, "pad/real: bucket padding tokens ÷ real tokens of the steps run with a plan (never computed);")
	fmt.Fprintln(w, "tiles+%: attention tiles laid out past the real work (tasks that return at once); fwd/eager: Σ forward time vs eager.")
}
