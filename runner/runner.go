// Package runner executes the scheduler's steps on a model (vLLM's Worker):
// it applies the step's cache operations, builds one flat batch from every
// scheduled sequence (prefill chunks and decode tokens together), runs the
// forward pass and returns the logits of the rows that sample.
//
// The step contract: Execute takes a *sched.Step, the complete description
// of a step (sequences, token ids and positions, slot mapping, block
// tables, logit rows, cache operations), and reads nothing else, in
// particular no block-manager state; it returns the logits and the step's
// statistics as a value. The scheduler builds the Step because it already
// holds everything it contains (it reserved the slots); a Step is plain
// data with a canonical wire encoding (sched.Step.AppendBinary), so with
// tensor parallelism rank 0 broadcasts it and every rank calls Execute on
// the same Step. The runner imports kvcache only for the plain Swap and
// Copy values of a step's cache operations.
package runner

import (
	"time"

	"pagoda/bucket"
	"pagoda/kernels"
	"pagoda/model"
	"pagoda/sched"
)

// Runner turns a sched.Step into logits. It is owned by the engine loop
// (or, on ranks other than 0, by the loop that receives the steps).
type Runner struct {
	model model.Model
	cache *CacheEngine
	vocab int

	plans *plans // nil: eager (no captured plans)

	microBatch            // the step, or its first micro-batch (dual-batch overlap)
	second     microBatch // the second micro-batch of a split step
	logits     []float32  // (logit rows, vocab)
	hidden     []float32  // (logit rows, dim): their final-norm hidden states (embeddings)
	dim        int
	rows       []Rows
	split      sched.Splitter
}

// microBatch is a model.Batch over sequences of a step and the arrays it
// points to that are not views into the step.
type microBatch struct {
	batch  model.Batch
	tables [][]int32 // (groups × numSeqs) views into the step's Blocks
	slots  []int32   // (groups × numTokens) the groups' slots, when there are several
	qstart []int32   // (numSeqs+1) query starts of the batch's sequences
	lidx   []int32   // (logit rows) the batch's logit rows
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

// Stats describe one executed step.
type Stats struct {
	// Forward is the wall time of the forward pass (the model's kernels),
	// so that callers can tell the runner's and engine's own per-step
	// overhead from the compute.
	Forward time.Duration
	// Compute, Comm and Wait split Forward with tensor parallelism
	// (model.CommTimes): Comm is the time inside nonblocking communication
	// calls (starting all-reduces, driving them between kernels), Wait the
	// time blocked on an all-reduce (on a peer or the link), Compute the
	// rest. One rank: Compute = Forward.
	Compute, Comm, Wait time.Duration
	// AllReduces is the number of all-reduces the forward pass started.
	AllReduces int
	// Attention is the part of Forward spent in the attention kernels when
	// the model times them (model.AttentionTimer, turned on by the caller
	// with TimeAttention(true)), else 0.
	Attention time.Duration
	// MicroBatches is 2 when the step ran split (dual-batch overlap), else 1.
	MicroBatches int
	// Plan is the plan the step ran with, nil when it ran eagerly (no
	// plans, or no bucket fit). Its counters change with later steps.
	Plan *Plan
	// PlanTokens are the query tokens of Plan's bucket (0 when eager).
	PlanTokens int
	// Tiles are the step's real attention query tiles and PlanTiles those
	// the attention was laid out for (the plan's worst case; Tiles when
	// eager): the difference is the tasks that returned at once.
	Tiles, PlanTiles int
}

// Result is what Execute returns. Logits and Rows are reused by the next
// call.
type Result struct {
	Logits []float32 // (rows, vocab)
	Hidden []float32 // (rows, dim): the final-norm hidden state of each logit row
	Rows   []Rows    // (numSeqs) where each sequence's logits are
	Stats  Stats
}

// New returns a runner for m over the cache engine's KV memory. With
// opts.Buckets, call Warmup before the first step.
func New(m model.Model, cache *CacheEngine, opts Options) *Runner {
	r := &Runner{model: m, cache: cache, vocab: m.Config().VocabSize, dim: m.Config().Dim}
	if m.Config().Embedding {
		r.vocab = 0 // no head: no logits, only hidden states
	}
	if opts.Buckets != nil {
		r.plans = newPlans(opts.Buckets, max(1, opts.MaxNumSeqs))
	}
	return r
}

// Cache returns the cache engine.
func (r *Runner) Cache() *CacheEngine { return r.cache }

// Execute runs one step: it checks the step against the cache (a bad step
// is an error, never a panic), applies its cache operations and runs the
// forward pass over its sequences. A step without sequences returns an
// empty Result.
func (r *Runner) Execute(s *sched.Step) (Result, error) {
	if err := r.check(s); err != nil {
		return Result{}, err
	}
	if err := r.cache.Apply(s.SwapOut, s.SwapIn, s.Copies); err != nil {
		return Result{}, err
	}
	if s.NumSeqs() == 0 {
		return Result{}, nil
	}
	st := Stats{MicroBatches: 1}
	mb, split := r.model.(model.MicroBatcher)
	split = split && s.Split > 0
	if r.plans != nil && !split {
		st.Plan = r.plans.find(s, r.cache.Device.BlockSize)
	}
	r.setRows(s)
	need := len(s.LogitIndices) * r.vocab
	if cap(r.logits) < need {
		r.logits = make([]float32, need)
	}
	r.logits = r.logits[:need]
	r.hidden = grow(r.hidden, len(s.LogitIndices)*r.dim)
	start := time.Now()
	var err error
	if split {
		st.MicroBatches = 2
		k := int(s.Split)
		r.microBatch.build(s, 0, k)
		r.second.build(s, k, s.NumSeqs())
		cut := len(r.microBatch.batch.LogitIndices) * r.vocab
		hcut := len(r.microBatch.batch.LogitIndices) * r.dim
		r.microBatch.batch.Hidden, r.second.batch.Hidden = r.hidden[:hcut], r.hidden[hcut:]
		st.Tiles = kernels.AttentionTiles(r.microBatch.batch.QueryStart) + kernels.AttentionTiles(r.second.batch.QueryStart)
		st.PlanTiles = st.Tiles
		err = mb.ForwardMicroBatches(&r.microBatch.batch, &r.second.batch, r.cache.Device, r.logits[:cut], r.logits[cut:])
	} else {
		r.microBatch.build(s, 0, s.NumSeqs())
		r.batch.Hidden = r.hidden
		r.layout(&st)
		err = r.model.Forward(&r.batch, r.cache.Device, r.logits)
	}
	st.Forward = time.Since(start)
	if err != nil {
		return Result{}, err
	}
	st.Compute = st.Forward
	if ct, ok := r.model.(model.CommTimer); ok {
		t := ct.CommTimes()
		st.Comm, st.Wait, st.AllReduces = t.Comm, t.Wait, t.AllReduces
		st.Compute = max(0, st.Forward-t.Comm-t.Wait)
	}
	if at, ok := r.model.(model.AttentionTimer); ok {
		st.Attention = at.AttentionTime()
	}
	return Result{Logits: r.logits, Hidden: r.hidden, Rows: r.rows, Stats: st}, nil
}

// layout sets the attention layout of a whole-step batch: its plan's
// worst-case tiles, or its own (eager).
func (r *Runner) layout(st *Stats) {
	st.Tiles = kernels.AttentionTiles(r.batch.QueryStart)
	st.PlanTiles = st.Tiles
	r.batch.AttnTiles = 0
	if st.Plan != nil {
		r.batch.AttnTiles = st.Plan.QueryTiles
		st.PlanTokens, st.PlanTiles = st.Plan.Tokens, max(st.Tiles, st.Plan.QueryTiles)
	}
}

// setRows fills r.rows: where each sequence's logits are in the step's.
func (r *Runner) setRows(s *sched.Step) {
	r.rows = r.rows[:0]
	for i := range s.NumSeqs() {
		r.rows = append(r.rows, Rows{First: int(s.LogitStart[i]), Count: s.NumLogits(i)})
	}
}

// check validates s and its block ids against the cache.
func (r *Runner) check(s *sched.Step) error {
	if err := s.Validate(); err != nil {
		return err
	}
	host := 0
	if r.cache.Host != nil {
		host = r.cache.Host.NumBlocks
	}
	if err := s.CheckBlocks(r.cache.Device.NumBlocks, host, r.cache.Device.BlockSize, r.cache.Device.Layout.Windows); err != nil {
		return err
	}
	return r.split.Check(s, r.cache.Device.BlockSize)
}

// build points the batch at sequences [lo, hi) of the step (the whole
// step, or one micro-batch of it): token ids, positions, slots (with one
// KV cache group) and context lengths are views into the step; query
// starts and logit rows are rebased to the micro-batch's first token;
// block tables are views into the step's Blocks, group by group.
func (mb *microBatch) build(s *sched.Step, lo, hi int) {
	b := &mb.batch
	first, last := s.QueryStart[lo], s.QueryStart[hi]
	b.Tokens, b.Positions = s.Tokens[first:last], s.Positions[first:last]
	if s.NumGroups() == 1 {
		b.SlotMapping = s.SlotMapping[first:last]
	} else {
		mb.slots = mb.slots[:0]
		for g := range s.NumGroups() {
			mb.slots = append(mb.slots, s.GroupSlots(g)[first:last]...)
		}
		b.SlotMapping = mb.slots
	}
	b.ContextLens = s.ContextLens[lo:hi]
	mb.qstart, mb.lidx, mb.tables = mb.qstart[:0], mb.lidx[:0], mb.tables[:0]
	for i := lo; i <= hi; i++ {
		mb.qstart = append(mb.qstart, s.QueryStart[i]-first)
	}
	for _, row := range s.LogitIndices[s.LogitStart[lo]:s.LogitStart[hi]] {
		mb.lidx = append(mb.lidx, row-first)
	}
	for g := range s.NumGroups() {
		for i := lo; i < hi; i++ {
			mb.tables = append(mb.tables, s.GroupTable(g, i))
		}
	}
	b.QueryStart, b.LogitIndices, b.BlockTables, b.AttnTiles = mb.qstart, mb.lidx, mb.tables, 0
}

// grow returns buf with length n, reallocated only when too small.
func grow(buf []float32, n int) []float32 {
	if cap(buf) < n {
		return make([]float32, n)
	}
	return buf[:n]
}
