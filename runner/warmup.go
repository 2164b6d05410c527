package runner

import (
	"fmt"
	"slices"
	"time"

	"pagoda/bucket"
	"pagoda/model"
)

// WarmupStats reports what warm-up captured.
type WarmupStats struct {
	Plans      int           // plans captured (buckets of both families)
	Runs       int           // dummy forward passes (one per distinct compute shape)
	Bytes      int64         // activation and batch memory reserved for the largest plan
	Duration   time.Duration // wall time
	MaxTokens  int           // largest query tokens of any plan
	MaxLogits  int           // largest logit rows of any plan
	PlanMisses int64         // steps run eagerly since warm-up (no bucket fit)
}

// Warmup captures every plan: it sizes the model's activation buffers and
// the runner's batch and logits buffers for the largest bucket, so that no
// step covered by a bucket allocates, and runs every bucket's compute shape
// once with dummy inputs (tokens whose keys and values are not stored).
// Buckets that differ only in context blocks share one run: the padding of
// context beyond the real work is never computed. progress, if not nil, is
// called after each run.
func (r *Runner) Warmup(progress func(done, total int)) (WarmupStats, error) {
	start := time.Now()
	if r.plans == nil {
		return WarmupStats{}, nil
	}
	tokens, seqs, logits := r.plans.largest()
	mc := r.model.Config()
	if res, ok := r.model.(model.Reserver); ok {
		res.Reserve(tokens, logits)
	}
	r.reserve(tokens, seqs, logits)
	shapes := r.computeShapes()
	for i, s := range shapes {
		if err := r.dummyStep(s.tokens, s.seqs, s.tiles); err != nil {
			return WarmupStats{}, fmt.Errorf("warm-up of %d tokens in %d sequences: %w", s.tokens, s.seqs, err)
		}
		if progress != nil {
			progress(i+1, len(shapes))
		}
	}
	per := int64(4 * (3*mc.Dim + 3*mc.Heads*mc.HeadDim + 2*mc.KVHeads*mc.HeadDim + 2*mc.HiddenDim + mc.Rope.Dim))
	bytes := int64(tokens)*per + int64(logits)*int64(r.vocab)*4 + int64(tokens)*16 + int64(seqs)*32
	return WarmupStats{Plans: len(r.plans.byKey), Runs: len(shapes), Bytes: bytes, Duration: time.Since(start),
		MaxTokens: tokens, MaxLogits: logits}, nil
}

// Plans returns the captured plans, prefill first, cheapest first.
func (r *Runner) Plans() []*Plan {
	if r.plans == nil {
		return nil
	}
	var ps []*Plan
	for _, p := range r.plans.byKey {
		ps = append(ps, p)
	}
	slices.SortFunc(ps, func(a, b *Plan) int {
		if a.Family != b.Family {
			return int(a.Family) - int(b.Family)
		}
		return a.Tokens - b.Tokens
	})
	return ps
}

// Buckets returns the bucket table plans are captured for (nil: eager).
func (r *Runner) Buckets() *bucket.Table {
	if r.plans == nil {
		return nil
	}
	return r.plans.table
}

// Misses counts steps no bucket covered since start.
func (r *Runner) Misses() int64 {
	if r.plans == nil {
		return 0
	}
	return r.plans.misses
}

type computeShape struct{ tokens, seqs, tiles int }

// computeShapes lists the distinct (tokens, sequences) shapes of the plans,
// each with the most attention tiles of the plans sharing it.
func (r *Runner) computeShapes() []computeShape {
	seen := map[[2]int]int{} // (tokens, seqs) → index in out
	var out []computeShape
	for _, p := range r.Plans() {
		s := computeShape{p.Tokens, p.Seqs, p.QueryTiles}
		if p.Family == Prefill {
			s.seqs = 1
		}
		if s.tokens <= 0 {
			continue
		}
		if i, ok := seen[[2]int{s.tokens, s.seqs}]; ok {
			out[i].tiles = max(out[i].tiles, s.tiles)
			continue
		}
		seen[[2]int{s.tokens, s.seqs}] = len(out)
		out = append(out, s)
	}
	return out
}

// reserve grows the runner's batch and logits buffers to the given
// capacities (token ids, positions and slots are views into the step).
func (r *Runner) reserve(tokens, seqs, logits int) {
	r.qstart = slices.Grow(r.qstart[:0], seqs+1)
	r.tables = slices.Grow(r.tables[:0], seqs)
	r.lidx = slices.Grow(r.lidx[:0], max(logits, tokens))
	r.rows = slices.Grow(r.rows[:0], seqs)
	r.logits = slices.Grow(r.logits[:0], logits*r.vocab)
}

// dummyStep runs tokens split over seqs sequences (the first takes the
// remainder), none stored in the cache, reading block 0 onwards as context,
// with attention laid out for tiles query tiles (the plans' worst case).
func (r *Runner) dummyStep(tokens, seqs, tiles int) error {
	bs := r.cache.Device.BlockSize
	nb := (tokens + bs - 1) / bs
	if nb > r.cache.Device.NumBlocks {
		return fmt.Errorf("needs %d blocks of context, the cache has %d", nb, r.cache.Device.NumBlocks)
	}
	table := make([]int32, nb)
	for i := range table {
		table[i] = int32(i)
	}
	b := model.Batch{QueryStart: []int32{0}, AttnTiles: tiles}
	for s := range seqs {
		n := tokens / seqs
		if s == 0 {
			n += tokens % seqs
		}
		for p := range n {
			b.Tokens = append(b.Tokens, 0)
			b.Positions = append(b.Positions, int32(p))
			b.SlotMapping = append(b.SlotMapping, -1)
		}
		b.QueryStart = append(b.QueryStart, int32(len(b.Tokens)))
		b.ContextLens = append(b.ContextLens, int32(n))
		b.BlockTables = append(b.BlockTables, table[:(n+bs-1)/bs])
		b.LogitIndices = append(b.LogitIndices, int32(len(b.Tokens)-1))
	}
	// Every KV cache group reads the same blocks (the tokens write nothing).
	groups := r.cache.Device.Layout.NumGroups()
	n, ns := len(b.SlotMapping), len(b.BlockTables)
	for range groups - 1 {
		b.SlotMapping = append(b.SlotMapping, b.SlotMapping[:n]...)
		b.BlockTables = append(b.BlockTables, b.BlockTables[:ns]...)
	}
	return r.model.Forward(&b, r.cache.Device, r.logits[:len(b.LogitIndices)*r.vocab])
}
