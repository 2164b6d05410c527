package main

import (
	"fmt"
	"io"
	"math/rand/v2"
	"time"

	"pagoda/model"
	"pagoda/sched"
)

// seqRunner drives a model directly on a paged KV cache: sequence s owns
// blocks [s·per, (s+1)·per) in order, and tokens are random ids.
type seqRunner struct {
	m      model.Model
	kv     *model.KVCache
	bs     int
	tables [][]int32 // (seqs, per) physical blocks of each sequence
	vocab  int
	rng    *rand.Rand
	b      model.Batch
	logits []float32 // (seqs in the step, vocab)
	seqs   []int     // scratch: the sequences of a batched step
	pos    []int     // scratch: their first positions
	ns     []int     // scratch: their token counts

	// Dual-batch overlap (tensor parallelism): steps over dbo's thresholds
	// run as two micro-batches, split by the scheduler's rule.
	dbo    sched.DBO
	split  sched.Splitter
	step   sched.Step // the step's sequences, for the split rule
	ub     [2]model.Batch
	totals stepTotals // since the last reset
}

// stepTotals sum the steps' forward time and its split (model.CommTimes)
// and count them.
type stepTotals struct {
	steps, split int
	forward      time.Duration
	comm         model.CommTimes
}

// newSeqRunner allocates a cache for seqs sequences of up to maxCtx tokens.
func newSeqRunner(m model.Model, seqs, maxCtx, bs int, kvType model.KVType, seed uint64) (*seqRunner, error) {
	per := (maxCtx + bs - 1) / bs
	kv, err := m.NewKVCache(seqs*per, bs, kvType)
	if err != nil {
		return nil, err
	}
	r := &seqRunner{m: m, kv: kv, bs: bs, vocab: m.Config().VocabSize, rng: rand.New(rand.NewPCG(seed, 2))}
	for s := range seqs {
		t := make([]int32, per)
		for i := range t {
			t[i] = int32(s*per + i)
		}
		r.tables = append(r.tables, t)
	}
	if res, ok := m.(model.Reserver); ok {
		res.Reserve(max(maxCtx, seqs), seqs)
	}
	return r, nil
}

// run is one forward step (see build), split into two micro-batches when
// dual-batch overlap says so; it adds the step's time split to r.totals.
func (r *seqRunner) run(seqs, pos, ns []int) error {
	if n := len(seqs) * r.vocab; cap(r.logits) < n {
		r.logits = make([]float32, n)
	}
	logits := r.logits[:len(seqs)*r.vocab]
	k := r.splitAt(seqs, pos, ns)
	r.totals.steps++
	start := time.Now()
	defer func() { r.totals.forward += time.Since(start) }()
	var err error
	if mb, ok := r.m.(model.MicroBatcher); ok && k > 0 {
		r.totals.split++
		r.build(&r.ub[0], seqs[:k], pos[:k], ns[:k])
		r.build(&r.ub[1], seqs[k:], pos[k:], ns[k:])
		err = mb.ForwardMicroBatches(&r.ub[0], &r.ub[1], r.kv, logits[:k*r.vocab], logits[k*r.vocab:])
	} else {
		r.build(&r.b, seqs, pos, ns)
		err = r.m.Forward(&r.b, r.kv, logits)
	}
	if ct, ok := r.m.(model.CommTimer); ok {
		t := ct.CommTimes()
		r.totals.comm.Comm += t.Comm
		r.totals.comm.Wait += t.Wait
		r.totals.comm.AllReduces += t.AllReduces
	}
	return err
}

// splitAt is where dual-batch overlap splits the step (0: not), by the
// scheduler's rule (sched.Splitter) on the step's shape.
func (r *seqRunner) splitAt(seqs, pos, ns []int) int {
	if !r.dbo.Enable {
		return 0
	}
	st := &r.step
	st.Reset()
	st.QueryStart, st.BlockTableStart = append(st.QueryStart, 0), append(st.BlockTableStart, 0)
	for i, s := range seqs {
		t := r.tables[s]
		for p := pos[i]; p < pos[i]+ns[i]; p++ {
			st.Tokens = append(st.Tokens, 0)
			st.SlotMapping = append(st.SlotMapping, t[p/r.bs]*int32(r.bs)+int32(p%r.bs))
		}
		st.QueryStart = append(st.QueryStart, int32(len(st.Tokens)))
		st.ContextLens = append(st.ContextLens, int32(pos[i]+ns[i]))
		st.Blocks = append(st.Blocks, t...)
		st.BlockTableStart = append(st.BlockTableStart, int32(len(st.Blocks)))
	}
	return int(r.split.Split(st, r.dbo, r.bs))
}

// build fills b with a step: sequence seqs[i] gets ns[i] new random
// tokens from position pos[i]; the logits of each sequence's last token
// are computed.
func (r *seqRunner) build(b *model.Batch, seqs, pos, ns []int) {
	b.Tokens, b.Positions, b.SlotMapping = b.Tokens[:0], b.Positions[:0], b.SlotMapping[:0]
	b.QueryStart, b.ContextLens, b.BlockTables = append(b.QueryStart[:0], 0), b.ContextLens[:0], b.BlockTables[:0]
	b.LogitIndices = b.LogitIndices[:0]
	for i, s := range seqs {
		t := r.tables[s]
		for p := pos[i]; p < pos[i]+ns[i]; p++ {
			b.Tokens = append(b.Tokens, int32(r.rng.IntN(r.vocab)))
			b.Positions = append(b.Positions, int32(p))
			b.SlotMapping = append(b.SlotMapping, t[p/r.bs]*int32(r.bs)+int32(p%r.bs))
		}
		ctx := pos[i] + ns[i]
		b.QueryStart = append(b.QueryStart, int32(len(b.Tokens)))
		b.ContextLens = append(b.ContextLens, int32(ctx))
		b.BlockTables = append(b.BlockTables, t[:(ctx+r.bs-1)/r.bs])
		b.LogitIndices = append(b.LogitIndices, int32(len(b.Tokens)-1))
	}
}

// prefill runs n tokens of sequence s from position pos in one step.
func (r *seqRunner) prefill(s, pos, n int) error {
	return r.run([]int{s}, []int{pos}, []int{n})
}

// decodeOne decodes steps tokens of sequence 0 from an empty context.
func (r *seqRunner) decodeOne(steps int) error {
	for p := range steps {
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
