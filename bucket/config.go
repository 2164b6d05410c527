package bucket

import (
	"flag"
	"fmt"
)

// Limits are the engine limits buckets are derived from. Field comments name
// the flags that set them.
type Limits struct {
	MaxNumSeqs          int // --max-num-seqs: most sequences in a step (decode batch bound)
	MaxNumPrefillSeqs   int // --max-num-prefill-seqs: most sequences in a prompt step; 0 means MaxNumSeqs
	MaxNumBatchedTokens int // --max-num-batched-tokens: token budget of a step
	MaxModelLen         int // --max-model-len: longest sequence (prompt + output)
	BlockSize           int // --block-size: tokens per KV block
	NumBlocks           int // --num-blocks: KV blocks; 0 means MaxNumSeqs·⌈MaxModelLen/BlockSize⌉
}

// Resolve validates l and fills the derived defaults (MaxNumPrefillSeqs,
// NumBlocks). Errors name the flag and the allowed range.
func (l Limits) Resolve() (Limits, error) {
	positive := []struct {
		name string
		v    int
	}{
		{"--max-num-seqs", l.MaxNumSeqs},
		{"--max-num-batched-tokens", l.MaxNumBatchedTokens},
		{"--max-model-len", l.MaxModelLen},
		{"--block-size", l.BlockSize},
	}
	for _, p := range positive {
		if p.v < 1 {
			return l, fmt.Errorf("%s is %d, must be ≥ 1", p.name, p.v)
		}
	}
	switch {
	case l.MaxNumPrefillSeqs < 0 || l.MaxNumPrefillSeqs > l.MaxNumSeqs:
		return l, fmt.Errorf("--max-num-prefill-seqs is %d, must be in [0, --max-num-seqs=%d]", l.MaxNumPrefillSeqs, l.MaxNumSeqs)
	case l.NumBlocks < 0:
		return l, fmt.Errorf("--num-blocks is %d, must be ≥ 0 (0 derives it)", l.NumBlocks)
	case l.MaxModelLen < l.BlockSize:
		return l, fmt.Errorf("--max-model-len is %d, must be ≥ --block-size=%d", l.MaxModelLen, l.BlockSize)
	case l.MaxNumBatchedTokens < l.BlockSize:
		return l, fmt.Errorf("--max-num-batched-tokens is %d, must be ≥ --block-size=%d", l.MaxNumBatchedTokens, l.BlockSize)
	}
	if l.MaxNumPrefillSeqs == 0 {
		l.MaxNumPrefillSeqs = l.MaxNumSeqs
	}
	if l.NumBlocks == 0 {
		l.NumBlocks = l.MaxNumSeqs * ceilDiv(l.MaxModelLen, l.BlockSize)
	}
	return l, nil
}

// Options are the user's bucketing choices, independent of the engine limits.
type Options struct {
	Strategy Strategy
	// MergedPrefill buckets prompt steps as one concatenated sequence (see
	// the package comment) with vllm-gaudi's overridden configs.
	MergedPrefill bool
	// LongContext uses the long-context variant of the exponential range
	// for the two block dimensions (prompt context, decode blocks).
	LongContext bool
	// PrefixCaching is on in pagoda. As in vllm-gaudi, which reads the flag
	// but derives the same configs either way, it does not change buckets:
	// prompt steps have context blocks from chunked prefill and recompute
	// even without prefix caching.
	PrefixCaching bool
	// ContiguousPA (off in pagoda) does what vllm-gaudi does for contiguous
	// paged attention: every exponential range ends exactly at its max
	// instead of rounding it up to a step; the decode block config's max is
	// NumBlocks and its range is extended to NumBlocks; decode buckets are
	// neither filtered by bs ≤ blocks nor clamped to MaxModelLen.
	ContiguousPA bool
	// MaxCaptureTokens bounds the padded tokens (bs·query) of a prompt
	// bucket; longer prompt steps find no bucket and run uncaptured, as
	// FastDeploy's 512-token prefill capture limit. 0 means no bound beyond
	// MaxNumBatchedTokens.
	MaxCaptureTokens int
	// Overrides replace linear config fields; the exponential strategy
	// ignores them and warns.
	Overrides Overrides
}

// DefaultOptions returns pagoda's defaults: exponential strategy, prefix
// caching on, no contiguous PA, 512-token prompt buckets.
func DefaultOptions() Options {
	return Options{Strategy: Exponential, PrefixCaching: true, MaxCaptureTokens: 512}
}

// RegisterFlags defines the bucketing flags on fs, with o's current values as
// defaults: --bucketing-strategy, --max-capture-tokens, --merged-prefill,
// --long-context, --prefix-caching, --contiguous-pa and the 18 override flags.
func (o *Options) RegisterFlags(fs *flag.FlagSet) {
	fs.Var(&o.Strategy, "bucketing-strategy", "bucket spacing, `exponential|linear` (default "+o.Strategy.String()+")")
	fs.IntVar(&o.MaxCaptureTokens, "max-capture-tokens", o.MaxCaptureTokens,
		"most padded tokens (bs·query) of a prompt bucket; 0: --max-num-batched-tokens")
	fs.BoolVar(&o.MergedPrefill, "merged-prefill", o.MergedPrefill, "bucket prompt steps as one concatenated sequence")
	fs.BoolVar(&o.LongContext, "long-context", o.LongContext, "long-context exponential ranges for block dimensions")
	fs.BoolVar(&o.PrefixCaching, "prefix-caching", o.PrefixCaching, "prefix caching (does not change buckets, as in vllm-gaudi)")
	fs.BoolVar(&o.ContiguousPA, "contiguous-pa", o.ContiguousPA, "size decode blocks by the whole KV pool (contiguous paged attention)")
	o.Overrides.RegisterFlags(fs)
}

// Dims are the configs of one phase's three dimensions.
type Dims struct {
	BS, Seq, Block Range
}

func (d Dims) get(dim Dim) Range { return [3]Range{d.BS, d.Seq, d.Block}[dim] }

// exponentialPrompt is vllm-gaudi's get_prompt_cfgs (ExponentialBucketingStrategy)
// for resolved limits.
func exponentialPrompt(l Limits, merged bool) Dims {
	p, b, t := l.MaxNumPrefillSeqs, l.BlockSize, l.MaxNumBatchedTokens
	d := Dims{
		BS:  Range{1, 2, p, ceilLog2(p) + 1},
		Seq: Range{b, b, t, ceilLog2(t)},
	}
	maxCtx := max(1, (l.MaxModelLen-d.Seq.Min)/b)
	ctxLimit := 2
	if maxCtx > 1 {
		ctxLimit = ceilLog2(maxCtx) + 1
	}
	d.Block = Range{0, 1, maxCtx, ctxLimit}
	if merged {
		d.BS = Range{1, 1, 1, 1}
		d.Seq = Range{d.Seq.Min, d.Seq.Step * 4, t, d.Seq.Limit}
		d.Block = Range{0, 4, maxCtx * p, ctxLimit}
	}
	return d
}

// exponentialDecode is vllm-gaudi's get_decode_cfgs (ExponentialBucketingStrategy)
// for resolved limits.
func exponentialDecode(l Limits, contiguousPA bool) Dims {
	s := l.MaxNumSeqs
	maxBlocks := min(l.MaxModelLen/l.BlockSize*s, l.NumBlocks)
	if contiguousPA {
		maxBlocks = l.NumBlocks
	}
	return Dims{
		BS:    Range{1, 2, s, ceilLog2(s) + 1},
		Seq:   Range{1, 1, 1, 1},
		Block: Range{1, s, maxBlocks, ceilLog2(l.NumBlocks) + 1},
	}
}

// linearSteps is how many step-sized increments a default linear range with
// a large max has: its step is ⌈max/linearSteps⌉ rounded up to the unit.
const linearSteps = 32

// linearStep returns the default linear step for a dimension up to hi whose
// values are multiples of unit.
func linearStep(hi, unit int) int {
	return ceilDiv(max(1, ceilDiv(hi, linearSteps)), unit) * unit
}

// linearPrompt follows vllm-gaudi's LinearBucketingStrategy.get_prompt_cfgs
// with CPU-sized default steps (batch size step 32 as in vLLM; query and
// context steps from linearStep), then applies the overrides. Merged prefill
// fixes bs to 1 and ignores its overrides, with a warning.
func linearPrompt(l Limits, merged bool, o *Overrides) (Dims, []string) {
	b := l.BlockSize
	var d Dims
	var warnings []string
	d.BS = o.apply(Prompt, BS, Range{Min: 1, Step: 32, Max: l.MaxNumPrefillSeqs})
	t := l.MaxNumBatchedTokens
	d.Seq = o.apply(Prompt, Seq, Range{Min: b, Step: linearStep(t, b), Max: t})
	maxCtx := max(0, (l.MaxModelLen-d.Seq.Min)/b)
	d.Block = o.apply(Prompt, Block, Range{Min: 0, Step: linearStep(maxCtx, 1), Max: maxCtx})
	if merged {
		for _, k := range o.SetKeys(Prompt) {
			if v, _ := o.Get(k); k.Dim == BS {
				warnings = append(warnings, fmt.Sprintf(
					"merged prefill fixes the prompt batch size to 1: your configuration %s=%d is ignored",
					o.Source(k), v))
			}
		}
		d.BS = Range{Min: 1, Step: 1, Max: 1}
		d.Seq = Range{Min: d.Seq.Min, Step: d.Seq.Step * 4, Max: t}
		d.Block = o.apply(Prompt, Block, Range{Min: 0, Step: 4, Max: maxCtx * l.MaxNumPrefillSeqs})
	}
	return d, warnings
}

// linearDecode follows vllm-gaudi's LinearBucketingStrategy.get_decode_cfgs
// with CPU-sized default steps, then applies the overrides; a block max above
// NumBlocks is lowered to NumBlocks with a warning.
func linearDecode(l Limits, contiguousPA bool, o *Overrides) (Dims, []string) {
	maxBlocks := max(l.MaxModelLen*l.MaxNumSeqs/l.BlockSize, l.BlockSize)
	if contiguousPA {
		maxBlocks = l.NumBlocks
	}
	d := Dims{
		BS:    o.apply(Decode, BS, Range{Min: 1, Step: 32, Max: l.MaxNumSeqs}),
		Seq:   o.apply(Decode, Seq, Range{Min: 1, Step: 1, Max: 1}),
		Block: o.apply(Decode, Block, Range{Min: 1, Step: linearStep(maxBlocks, 1), Max: maxBlocks}),
	}
	var warnings []string
	if d.Block.Max > l.NumBlocks {
		warnings = append(warnings, fmt.Sprintf(
			"decode block bucket max %d is higher than --num-blocks=%d; using %d",
			d.Block.Max, l.NumBlocks, l.NumBlocks))
		d.Block.Max = l.NumBlocks
	}
	return d, warnings
}

// ignoredOverrides returns vllm-gaudi's check_for_user_flags warnings: one per
// override of phase p, which the exponential strategy overwrites.
func ignoredOverrides(p Phase, o *Overrides) []string {
	var warnings []string
	for _, k := range o.SetKeys(p) {
		v, _ := o.Get(k)
		warnings = append(warnings, fmt.Sprintf(
			"using exponential strategy: your configuration %s=%d will be overwritten", o.Source(k), v))
	}
	return warnings
}
