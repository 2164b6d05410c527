package main

import (
	"fmt"
	"io"
	"math/rand/v2"
	"time"

	"pagoda/model"
	"pagoda/runner"
	"pagoda/sched"
)

// seqRunner drives the model through the engine's runner (runner.Runner,
// eager: no captured plans) with synthetic steps (sched.Step) on a paged KV
// cache: sequence s owns its own run of consecutive blocks, enough for its
// context, in each KV cache group (a window group keeps every block),
// and tokens are random ids. The steps are what the scheduler would hand the runner for
// the same work, so the benchmark times the serving path's batch building,
// dual-batch-overlap split and forward pass, not a copy of them.
type seqRunner struct {
	exec   *runner.Runner
	bs     int
	seqs0  int       // sequences the cache holds
	groups int       // KV cache groups
	tables [][]int32 // (groups × seqs, its blocks) physical blocks of each sequence in each group
	vocab  int
	rng    *rand.Rand
	step   sched.Step
	seqs   []int // scratch: the sequences of a batched step
	pos    []int // scratch: their first positions
	ns     []int // scratch: their token counts

	// Dual-batch overlap (tensor parallelism): steps over dbo's thresholds
	// run as two micro-batches, split by the scheduler's rule.
	dbo    sched.DBO
	split  sched.Splitter
	totals stepTotals // since the last reset
}

// stepTotals sum the steps' forward time and its split (model.CommTimes,
// runner.Stats.Attention) and count them.
type stepTotals struct {
	steps, split int
	forward      time.Duration
	attention    time.Duration
	comm         model.CommTimes
}

// newSeqRunner allocates a cache for len(ctxs) sequences, sequence s of up
// to ctxs[s] tokens, and sizes the model's buffers for steps of up to
// reserve tokens.
func newSeqRunner(m model.Model, ctxs []int, reserve, bs int, kvType model.KVType, seed uint64) (*seqRunner, error) {
	seqs, total := len(ctxs), 0
	for _, c := range ctxs {
		total += (c + bs - 1) / bs
	}
	groups := m.Config().KVLayout().NumGroups()
	cache, err := runner.NewCacheEngine(m, groups*total, 0, bs, kvType)
	if err != nil {
		return nil, err
	}
	r := &seqRunner{exec: runner.New(m, cache, runner.Options{MaxNumSeqs: seqs}), bs: bs, seqs0: seqs, groups: groups,
		vocab: m.Config().VocabSize, rng: rand.New(rand.NewPCG(seed, 2))}
	next := int32(0)
	for range groups {
		for _, c := range ctxs {
			t := make([]int32, (c+bs-1)/bs)
			for i := range t {
				t[i] = next
				next++
			}
			r.tables = append(r.tables, t)
		}
	}
	if res, ok := m.(model.Reserver); ok {
		res.Reserve(max(reserve, seqs), seqs)
	}
	return r, nil
}

// run is one forward step (see build), split into two micro-batches when
// dual-batch overlap says so; it adds the step's time split to r.totals.
func (r *seqRunner) run(seqs, pos, ns []int) error {
	r.build(seqs, pos, ns)
	if r.dbo.Enable {
		r.step.Split = r.split.Split(&r.step, r.dbo, r.bs)
	}
	res, err := r.exec.Execute(&r.step)
	if err != nil {
		return err
	}
	st := res.Stats
	r.totals.steps++
	if st.MicroBatches == 2 {
		r.totals.split++
	}
	r.totals.forward += st.Forward
	r.totals.attention += st.Attention
	r.totals.comm.Comm += st.Comm
	r.totals.comm.Wait += st.Wait
	r.totals.comm.AllReduces += st.AllReduces
	return nil
}

// build fills r.step: sequence seqs[i] gets ns[i] new random tokens from
// position pos[i] and samples from its last one.
func (r *seqRunner) build(seqs, pos, ns []int) {
	st := &r.step
	st.Reset()
	st.QueryStart, st.BlockTableStart, st.LogitStart = append(st.QueryStart, 0), append(st.BlockTableStart, 0), append(st.LogitStart, 0)
	for i, s := range seqs {
		for p := pos[i]; p < pos[i]+ns[i]; p++ {
			st.Tokens = append(st.Tokens, int32(r.rng.IntN(r.vocab)))
			st.Positions = append(st.Positions, int32(p))
		}
		st.SeqIDs = append(st.SeqIDs, int64(s))
		st.Flags = append(st.Flags, sched.FlagSample)
		st.QueryStart = append(st.QueryStart, int32(len(st.Tokens)))
		st.ContextLens = append(st.ContextLens, int32(pos[i]+ns[i]))
		st.LogitIndices = append(st.LogitIndices, int32(len(st.Tokens)-1))
		st.LogitStart = append(st.LogitStart, int32(len(st.LogitIndices)))
	}
	st.Groups = int32(r.groups)
	for g := range r.groups {
		for i, s := range seqs {
			t := r.tables[g*r.seqs0+s]
			for p := pos[i]; p < pos[i]+ns[i]; p++ {
				st.SlotMapping = append(st.SlotMapping, t[p/r.bs]*int32(r.bs)+int32(p%r.bs))
			}
			st.Blocks = append(st.Blocks, t[:(pos[i]+ns[i]+r.bs-1)/r.bs]...)
			st.BlockTableStart = append(st.BlockTableStart, int32(len(st.Blocks)))
		}
	}
}

// prefill runs n tokens of sequence s from position pos in one step.
func (r *seqRunner) prefill(s, pos, n int) error {
	return r.run([]int{s}, []int{pos}, []int{n})
}

// fillContext writes depth tokens of context into sequence s's cache
// (positions 0..depth-1), in steps of up to depthChunk tokens.
func (r *seqRunner) fillContext(s, depth int) error {
	for p := 0; p < depth; p += depthChunk {
		if err := r.prefill(s, p, min(depthChunk, depth-p)); err != nil {
			return err
		}
	}
	return nil
}

// decodeOne decodes steps tokens of sequence 0 from position pos (after
// pos tokens of context).
func (r *seqRunner) decodeOne(pos, steps int) error {
	for p := pos; p < pos+steps; p++ {
		if err := r.run([]int{0}, []int{p}, []int{1}); err != nil {
			return err
		}
	}
	return nil
}

// prefillAll gives sequences 0..b-1 ctx tokens of context each.
func (r *seqRunner) prefillAll(b, ctx int) error {
	for s := range b {
		if err := r.prefill(s, 0, ctx); err != nil {
			return err
		}
	}
	return nil
}

// decodeBatch runs steps decode steps of sequences 0..b-1 together, from
// position ctx on.
func (r *seqRunner) decodeBatch(b, ctx, steps int) error {
	r.seqs, r.pos, r.ns = r.seqs[:0], r.pos[:0], r.ns[:0]
	for s := range b {
		r.seqs, r.pos, r.ns = append(r.seqs, s), append(r.pos, ctx), append(r.ns, 1)
	}
	for range steps {
		if err := r.run(r.seqs, r.pos, r.ns); err != nil {
			return err
		}
		for i := range r.pos {
			r.pos[i]++
		}
	}
	return nil
}

// fill sets res's per-step means from the totals of its timed runs; the
// step's wall time less communication and waiting is its compute.
func (t stepTotals) fill(res *latencyResult) {
	res.Steps, res.SplitSteps = t.steps, t.split
	if t.steps == 0 {
		return
	}
	ms := func(d time.Duration) float64 { return d.Seconds() * 1e3 / float64(t.steps) }
	res.ComputeMs, res.CommMs, res.WaitMs = ms(t.forward-t.comm.Comm-t.comm.Wait), ms(t.comm.Comm), ms(t.comm.Wait)
	if t.attention > 0 {
		res.AttentionMs, res.OtherMs = ms(t.attention), ms(t.forward-t.attention)
	}
}

// printBreakdown prints each test's mean per-step split (tensor parallelism).
func printBreakdown(w io.Writer, ranks int, rs []latencyResult) {
	fmt.Fprintf(w, "\nper-step breakdown over %d ranks (rank 0; ms per step: compute, communication calls, waiting on all-reduces):\n\n", ranks)
	fmt.Fprintln(w, "| threads | test | steps | split (DBO) | compute | communication | waiting |")
	fmt.Fprintln(w, "| ---: | :--- | ---: | ---: | ---: | ---: | ---: |")
	for _, r := range rs {
		fmt.Fprintf(w, "| %d | %s | %d | %d | %.3f | %.3f | %.3f |\n", r.Threads, r.Test, r.Steps, r.SplitSteps, r.ComputeMs, r.CommMs, r.WaitMs)
	}
}
