package runner

import (
	"pagoda/bucket"
	"pagoda/kernels"
	"pagoda/sched"
)

// Family is the kind of step a plan serves: prefill or decode, the two
// families FastDeploy captures graphs for.
type Family int

const (
	Prefill Family = iota // any step with a prompt chunk (mixed steps too)
	Decode                // every sequence computes one token
)

func (f Family) String() string {
	if f == Decode {
		return "decode"
	}
	return "prefill"
}

// Plan is a step plan captured at warm-up for one bucket: the step shape
// it covers, the capacities every buffer was sized for, and the worst-case
// count of attention query tiles a step of that shape can need (N sequences
// sharing M tokens: N−1 with one token and one with the rest). Steps that
// fit the bucket reuse the runner's buffers without growing them; work
// beyond the real tokens (the padding up to the bucket) is never computed.
type Plan struct {
	Family     Family
	Bucket     bucket.Shape
	Tokens     int // query tokens the plan holds
	Seqs       int // sequences
	Logits     int // logit rows (every token, for prompt logprobs)
	QueryTiles int // worst-case attention query tiles of AttnTile tokens

	Steps   int64 // steps run with the plan
	Padding int64 // bucket tokens − real tokens, summed over those steps
}

// AttnTile is the query-tile size plans count attention work in: the
// kernels' tile (kernels.AttnTile), which a plan's QueryTiles lays the
// attention tasks out for (QueryTiles·Heads tasks per layer, the ones past
// the step's real tiles returning at once).
const AttnTile = kernels.AttnTile

// plans maps buckets to plans for both families.
type plans struct {
	table  *bucket.Table
	byKey  map[planKey]*Plan
	misses int64 // steps no bucket covered (run eagerly)
	// scratch for step shapes
	queryLens, blocks []int
}

type planKey struct {
	family Family
	shape  bucket.Shape
}

func newPlans(t *bucket.Table, maxSeqs int) *plans {
	p := &plans{table: t, byKey: map[planKey]*Plan{}}
	for _, f := range []Family{Prefill, Decode} {
		set := p.set(f)
		for _, b := range set.Buckets {
			pl := &Plan{Family: f, Bucket: b, Tokens: b.Tokens(), Seqs: min(maxSeqs, max(b.BatchSize, 1)),
				QueryTiles: set.QueryTiles(b, AttnTile)}
			if t.Options.MergedPrefill && f == Prefill {
				pl.Seqs = min(maxSeqs, b.QueryLen)
			}
			pl.Logits = pl.Seqs
			p.byKey[planKey{f, b}] = pl
		}
	}
	return p
}

func (p *plans) set(f Family) *bucket.Set {
	if f == Decode {
		return &p.table.Decode
	}
	return &p.table.Prompt
}

// find returns the plan of the cheapest bucket covering the step, or nil.
// It does not allocate.
func (p *plans) find(s *sched.Step, blockSize int) *Plan {
	f := Decode
	p.queryLens, p.blocks = p.queryLens[:0], p.blocks[:0]
	for i := range s.NumSeqs() {
		if s.QueryLen(i) != 1 || s.Flags[i]&sched.FlagAllLogits != 0 {
			f = Prefill
		}
		p.queryLens = append(p.queryLens, s.QueryLen(i))
	}
	for i := range s.NumSeqs() {
		ctx := int(s.ContextLens[i]) // decode: all of the sequence's blocks
		if f == Prefill {
			ctx -= s.QueryLen(i) // prompt: context before this step's query
		}
		p.blocks = append(p.blocks, (ctx+blockSize-1)/blockSize)
	}
	set := p.set(f)
	b, ok := set.Find(set.StepShape(p.queryLens, p.blocks))
	if !ok {
		p.misses++
		return nil
	}
	pl := p.byKey[planKey{f, b}]
	pl.Steps++
	pl.Padding += int64(b.Tokens() - s.NumTokens())
	return pl
}

// largest returns the biggest token, sequence and logit capacities of all plans.
func (p *plans) largest() (tokens, seqs, logits int) {
	for _, pl := range p.byKey {
		tokens, seqs, logits = max(tokens, pl.Tokens), max(seqs, pl.Seqs), max(logits, pl.Logits)
	}
	return tokens, seqs, logits
}
