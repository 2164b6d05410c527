package bucket

import (
	"cmp"
	"fmt"
	"slices"
)

// Shape is a step's shape or a bucket: (BatchSize, QueryLen, Blocks), with
// the per-phase meaning given in the package comment.
type Shape struct {
	BatchSize int // sequences
	QueryLen  int // query tokens per sequence (merged prefill: of the whole step)
	Blocks    int // prompt: context blocks per sequence (merged: total); decode: total blocks
}

// Tokens returns the padded query tokens of s: BatchSize·QueryLen.
func (s Shape) Tokens() int { return s.BatchSize * s.QueryLen }

// Covers reports whether a step of shape t fits bucket s: every dimension of
// s is ≥ that of t.
func (s Shape) Covers(t Shape) bool {
	return s.BatchSize >= t.BatchSize && s.QueryLen >= t.QueryLen && s.Blocks >= t.Blocks
}

// String formats s as "(bs, query, blocks)".
func (s Shape) String() string {
	return fmt.Sprintf("(%d, %d, %d)", s.BatchSize, s.QueryLen, s.Blocks)
}

// compareCost orders buckets cheapest first: by padded tokens, then blocks,
// then batch size, then query length.
func compareCost(a, b Shape) int {
	return cmp.Or(cmp.Compare(a.Tokens(), b.Tokens()), cmp.Compare(a.Blocks, b.Blocks),
		cmp.Compare(a.BatchSize, b.BatchSize), cmp.Compare(a.QueryLen, b.QueryLen))
}

// Set is the buckets of one phase and the configs and ranges they come from.
// It is immutable after New.
type Set struct {
	Phase Phase
	Dims  Dims  // (min, step, max, limit) per dimension
	BS    []int // batch-size range, ascending
	Seq   []int // query-length range, ascending
	Block []int // block range, ascending (before per-bucket clamping)
	// Buckets are distinct and sorted cheapest first (tokens, blocks, bs,
	// query); Find returns the first that covers a shape.
	Buckets []Shape

	merged  bool // prompt set of a merged-prefill table
	maxSeqs int  // most sequences a bucket holds (merged: sharing its tokens)
}

// Find returns the cheapest bucket that covers shape, or false when none
// does (the step is larger than any warmed-up bucket and must run without a
// captured plan). It does not allocate.
func (s *Set) Find(shape Shape) (Shape, bool) {
	for _, b := range s.Buckets {
		if b.Covers(shape) {
			return b, true
		}
	}
	return Shape{}, false
}

// PaddingCost returns the padding tokens a step of the given shape costs:
// the tokens of its bucket minus realTokens (the step's real query tokens,
// Σ of its sequences' query lengths), and false when no bucket covers it.
func (s *Set) PaddingCost(shape Shape, realTokens int) (int, bool) {
	b, ok := s.Find(shape)
	if !ok {
		return 0, false
	}
	return b.Tokens() - realTokens, true
}

// StepShape returns the shape of a step in s's layout, given each sequence's
// query tokens and blocks (prompt: context blocks before this step's query;
// decode: all of the sequence's blocks):
//
//	prompt:         (len, max queryLens, max blocks)
//	merged prompt:  (1, Σ queryLens, Σ blocks)
//	decode:         (len, max queryLens, Σ blocks)
func (s *Set) StepShape(queryLens, blocks []int) Shape {
	var sumQ, maxQ, sumB, maxB int
	for _, q := range queryLens {
		sumQ, maxQ = sumQ+q, max(maxQ, q)
	}
	for _, b := range blocks {
		sumB, maxB = sumB+b, max(maxB, b)
	}
	switch {
	case s.Phase == Decode:
		return Shape{len(queryLens), maxQ, sumB}
	case s.merged:
		return Shape{1, sumQ, sumB}
	}
	return Shape{len(queryLens), maxQ, maxB}
}

// QueryTiles returns how many query tiles of tileSize tokens a plan for
// bucket b must provide to cover any step that fits it. Each sequence of a
// padded bucket has at most QueryLen tokens, so the worst case is
// BatchSize·⌈QueryLen/tileSize⌉; in a merged-prefill bucket up to
// MaxNumPrefillSeqs sequences share QueryLen tokens and the worst case is
// MaxTiles of that (the worst split, which FastDeploy's captured prefill
// graphs missed).
func (s *Set) QueryTiles(b Shape, tileSize int) int {
	if s.merged {
		return MaxTiles(s.maxSeqs, b.QueryLen, tileSize)
	}
	return b.BatchSize * MaxTiles(1, b.QueryLen, tileSize)
}

// Table is the bucket sets of both phases for one configuration.
type Table struct {
	Limits  Limits  // resolved (derived defaults filled in)
	Options Options // as given
	Prompt  Set
	Decode  Set
	// Warnings are the messages vllm-gaudi logs as warnings: overrides the
	// exponential strategy overwrites, overrides that merged prefill or the
	// KV pool size overrule, options that do not apply.
	Warnings []string
}

// New validates l and o and generates the buckets of both phases.
//
// Prompt buckets are the product bs × query × blocks, filtered as vllm-gaudi
// does, plus one adjustment and pagoda's capture bound:
//   - padded: query + blocks·BlockSize ≤ MaxModelLen and bs·query ≤
//     MaxNumBatchedTokens; the largest blocks value is first clamped to
//     ⌊(MaxModelLen − query)/BlockSize⌋ for each query, so the longest
//     contexts keep a bucket for every query length (vllm-gaudi does this
//     for MaxModelLen ≥ 8192).
//   - merged: blocks ≤ P·⌊(MaxModelLen − ⌊query/P⌋)/BlockSize⌋, P =
//     MaxNumPrefillSeqs.
//   - both: bs·query ≤ MaxCaptureTokens when that is set.
//
// Decode buckets are bs × 1 × blocks with bs ≤ blocks and blocks clamped to
// bs·⌈MaxModelLen/BlockSize⌉ (neither with ContiguousPA). Zero batch sizes
// and query lengths (possible with linear overrides) are dropped.
// A phase with no buckets is an error.
func New(l Limits, o Options) (*Table, error) {
	l, err := l.Resolve()
	if err != nil {
		return nil, err
	}
	if o.MaxCaptureTokens < 0 {
		return nil, fmt.Errorf("--max-capture-tokens is %d, must be ≥ 0", o.MaxCaptureTokens)
	}
	if o.Strategy != Exponential && o.Strategy != Linear {
		return nil, fmt.Errorf("unknown bucketing strategy %v (allowed: exponential, linear)", o.Strategy)
	}
	t := &Table{Limits: l, Options: o}
	prompt, decode := t.dims()
	if err := t.Prompt.fill(Prompt, prompt, l, &t.Options); err != nil {
		return nil, err
	}
	if err := t.Decode.fill(Decode, decode, l, &t.Options); err != nil {
		return nil, err
	}
	return t, nil
}

// dims returns the configs of both phases and records their warnings.
func (t *Table) dims() (prompt, decode Dims) {
	l, o := t.Limits, &t.Options
	if o.Strategy == Exponential {
		t.Warnings = append(t.Warnings, ignoredOverrides(Prompt, &o.Overrides)...)
		t.Warnings = append(t.Warnings, ignoredOverrides(Decode, &o.Overrides)...)
		return exponentialPrompt(l, o.MergedPrefill), exponentialDecode(l, o.ContiguousPA)
	}
	if o.LongContext {
		t.Warnings = append(t.Warnings, "--long-context applies to the exponential strategy only; ignored")
	}
	prompt, w := linearPrompt(l, o.MergedPrefill, &o.Overrides)
	t.Warnings = append(t.Warnings, w...)
	decode, w = linearDecode(l, o.ContiguousPA, &o.Overrides)
	t.Warnings = append(t.Warnings, w...)
	return prompt, decode
}

// fill computes the ranges and buckets of phase p from its configs.
func (s *Set) fill(p Phase, d Dims, l Limits, o *Options) error {
	s.Phase, s.Dims = p, d
	s.merged = p == Prompt && o.MergedPrefill
	s.maxSeqs = l.MaxNumSeqs
	if p == Prompt {
		s.maxSeqs = l.MaxNumPrefillSeqs
	}
	ranges := [3]*[]int{BS: &s.BS, Seq: &s.Seq, Block: &s.Block}
	for dim, r := range ranges {
		var err error
		if o.Strategy == Linear {
			*r, err = d.get(Dim(dim)).Linear()
		} else {
			long := o.LongContext && Dim(dim) == Block
			*r, err = d.get(Dim(dim)).Exponential(long, o.ContiguousPA)
		}
		if err != nil {
			return fmt.Errorf("%s %s bucket config: %w", p, Dim(dim), err)
		}
	}
	if p == Decode && o.ContiguousPA && s.Block[len(s.Block)-1] < l.NumBlocks {
		s.Block = append(s.Block, l.NumBlocks)
	}
	seen := make(map[Shape]bool)
	for _, bs := range s.BS {
		for _, q := range s.Seq {
			for i, c := range s.Block {
				b, ok := s.admit(Shape{bs, q, c}, i == len(s.Block)-1, l, o)
				if ok && !seen[b] {
					seen[b] = true
					s.Buckets = append(s.Buckets, b)
				}
			}
		}
	}
	if len(s.Buckets) == 0 {
		return fmt.Errorf("generated 0 %s buckets from bs %v × query %v × blocks %v; "+
			"raise the limits or lower the bucket minimums", p, s.BS, s.Seq, s.Block)
	}
	slices.SortFunc(s.Buckets, compareCost)
	return nil
}

// admit applies the filters and corrections of New to one candidate; top is
// whether b.Blocks is the largest block value.
func (s *Set) admit(b Shape, top bool, l Limits, o *Options) (Shape, bool) {
	if b.BatchSize < 1 || b.QueryLen < 1 {
		return b, false // a step has a sequence and a token
	}
	bsz := l.BlockSize
	if s.Phase == Decode {
		if o.ContiguousPA {
			return b, true
		}
		b.Blocks = min(b.Blocks, b.BatchSize*ceilDiv(l.MaxModelLen, bsz))
		return b, b.BatchSize <= b.Blocks
	}
	if o.MaxCaptureTokens > 0 && b.Tokens() > o.MaxCaptureTokens {
		return b, false
	}
	if s.merged {
		p := l.MaxNumPrefillSeqs
		return b, b.Blocks <= p*floorDiv(l.MaxModelLen-b.QueryLen/p, bsz)
	}
	if top {
		b.Blocks = min(b.Blocks, floorDiv(l.MaxModelLen-b.QueryLen, bsz))
	}
	return b, b.Blocks >= 0 && b.QueryLen+b.Blocks*bsz <= l.MaxModelLen &&
		b.Tokens() <= l.MaxNumBatchedTokens
}
