// Package runner executes the scheduler's steps on a model (vLLM's Worker):
// it applies the step's cache operations, builds one flat batch from every
// scheduled sequence (prefill chunks and decode tokens together), runs the
// forward pass and returns the logits of the rows that sample.
package runner

import (
	"fmt"
	"time"

	"pagoda/bucket"
	"pagoda/kernels"
	"pagoda/kvcache"
	"pagoda/model"
	"pagoda/sched"
)

// Runner turns sched.Output into logits. It is owned by the engine loop.
type Runner struct {
	model  model.Model
	blocks *kvcache.Manager
	cache  *CacheEngine
	vocab  int

	plans *plans // nil: eager (no captured plans)
	last  *Plan  // plan of the latest step, nil when it ran eagerly

	forward time.Duration // the latest step's forward pass
	tiles   int           // the latest step's real attention query tiles

	batch  model.Batch
	logits []float32 // (len(batch.LogitIndices), vocab)
	rows   []Rows
}

// Options configure a runner.
type Options struct {
	// Buckets enables captured step plans, one per bucket; nil runs every
	// step eagerly (--enforce-eager).
	Buckets *bucket.Table
	// MaxNumSeqs bounds the sequences of any step.
	MaxNumSeqs int
}

// Rows locates a scheduled sequence's logits in the step's logits: rows
// First ≤ r < First+Count, one per computed token when the group asked for
// all logits (prompt logprobs), else only the last (Count 1) when it samples,
// else none.
type Rows struct {
	First, Count int
}

// New returns a runner for m over the block manager's tables and cache.
// With opts.Buckets, call Warmup before the first step.
func New(m model.Model, blocks *kvcache.Manager, cache *CacheEngine, opts Options) *Runner {
	r := &Runner{model: m, blocks: blocks, cache: cache, vocab: m.Config().VocabSize}
	if opts.Buckets != nil {
		r.plans = newPlans(opts.Buckets, max(1, opts.MaxNumSeqs))
	}
	return r
}

// LastPlan returns the plan the latest step ran with, or nil when it ran
// eagerly.
func (r *Runner) LastPlan() *Plan { return r.last }

// LastForward returns the wall time of the latest step's forward pass (the
// model's kernels), so that callers can tell the runner's and engine's own
// per-step overhead from the compute.
func (r *Runner) LastForward() time.Duration { return r.forward }

// LastTiles returns the latest step's real attention query tiles and the
// tiles its plan laid the attention out for (its bucket's worst case; equal
// to the real count for an eager step). The difference is the tasks that
// returned at once.
func (r *Runner) LastTiles() (real, planned int) {
	if r.last == nil {
		return r.tiles, r.tiles
	}
	return r.tiles, max(r.tiles, r.last.QueryTiles)
}

// Cache returns the cache engine.
func (r *Runner) Cache() *CacheEngine { return r.cache }

// Execute runs one step. It returns the logits, (rows, vocab), and for each
// entry of out.Seqs where its rows are. Both are reused by the next call.
func (r *Runner) Execute(out *sched.Output) (logits []float32, rows []Rows, err error) {
	if err := r.cache.Apply(out.SwapOut, out.SwapIn, out.Copies); err != nil {
		return nil, nil, err
	}
	if len(out.Seqs) == 0 {
		return nil, nil, nil
	}
	if r.plans != nil {
		r.last = r.plans.find(out, r.blocks.BlockSize())
	}
	if err := r.build(out); err != nil {
		return nil, nil, err
	}
	r.batch.AttnTiles = 0
	if r.last != nil {
		r.batch.AttnTiles = r.last.QueryTiles
	}
	r.tiles = kernels.AttentionTiles(r.batch.QueryStart)
	need := len(r.batch.LogitIndices) * r.vocab
	if cap(r.logits) < need {
		r.logits = make([]float32, need)
	}
	r.logits = r.logits[:need]
	start := time.Now()
	err = r.model.Forward(&r.batch, r.cache.Device, r.logits)
	r.forward = time.Since(start)
	if err != nil {
		return nil, nil, err
	}
	return r.logits, r.rows, nil
}

// build fills the flat batch from the scheduled sequences.
//
//	out.Seqs:    A: prompt chunk tokens 0..4   B: decode token 9   C: tokens 4..6
//	Tokens:      [a0 a1 a2 a3 a4 | b9 | c4 c5 c6]
//	QueryStart:  [0, 5, 6, 9]
//	ContextLens: [5, 10, 7]
//	LogitIndices: rows that sample (or every row of a group that wants all logits)
func (r *Runner) build(out *sched.Output) error {
	b := &r.batch
	b.Tokens, b.Positions, b.SlotMapping = b.Tokens[:0], b.Positions[:0], b.SlotMapping[:0]
	b.QueryStart, b.ContextLens, b.BlockTables = append(b.QueryStart[:0], 0), b.ContextLens[:0], b.BlockTables[:0]
	b.LogitIndices, r.rows = b.LogitIndices[:0], r.rows[:0]
	for _, sq := range out.Seqs {
		q := sq.Seq
		end := sq.Start + sq.NumTokens
		row := int32(len(b.Tokens))
		b.Tokens = append(b.Tokens, q.Tokens[sq.Start:end]...)
		for p := sq.Start; p < end; p++ {
			b.Positions = append(b.Positions, int32(p))
		}
		var err error
		if b.SlotMapping, err = r.blocks.SlotMapping(b.SlotMapping, q.ID, sq.Start, end); err != nil {
			return fmt.Errorf("runner: request %s: %w", sq.Group.RequestID, err)
		}
		b.QueryStart = append(b.QueryStart, int32(len(b.Tokens)))
		b.ContextLens = append(b.ContextLens, int32(end))
		b.BlockTables = append(b.BlockTables, r.blocks.BlockTable(q.ID))
		rows := Rows{First: len(b.LogitIndices)}
		switch {
		case sq.Group.AllLogits:
			for i := range int32(sq.NumTokens) {
				b.LogitIndices = append(b.LogitIndices, row+i)
			}
		case sq.Sample:
			b.LogitIndices = append(b.LogitIndices, row+int32(sq.NumTokens)-1)
		}
		rows.Count = len(b.LogitIndices) - rows.First
		r.rows = append(r.rows, rows)
	}
	return nil
}
