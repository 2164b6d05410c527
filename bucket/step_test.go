package bucket

import (
	"slices"
	"strings"
	"testing"
)

func TestStepShape(t *testing.T) {
	tb, merged := smallTables(t)
	tests := []struct {
		name      string
		set       *Set
		queryLens []int
		blocks    []int
		want      Shape
	}{
		{"prompt pads to the longest", &tb.Prompt, []int{5, 12, 3}, []int{0, 2, 1}, Shape{3, 12, 2}},
		{"merged concatenates", &merged.Prompt, []int{5, 12, 3}, []int{0, 2, 1}, Shape{1, 20, 3}},
		{"decode totals blocks", &tb.Decode, []int{1, 1, 1, 1}, []int{3, 1, 7, 2}, Shape{4, 1, 13}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.set.StepShape(tt.queryLens, tt.blocks); got != tt.want {
				t.Errorf("StepShape = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestPaddingCost(t *testing.T) {
	tb, merged := smallTables(t)
	tests := []struct {
		name       string
		set        *Set
		shape      Shape
		realTokens int
		want       int
		ok         bool
	}{
		// (3, 12, 2) → (4, 16, 2): 64 − (5+12+3) = 44.
		{"prompt", &tb.Prompt, Shape{3, 12, 2}, 20, 44, true},
		// (1, 20, 3) → (1, 64, 4): 64 − 20.
		{"merged", &merged.Prompt, Shape{1, 20, 3}, 20, 44, true},
		// (3, 1, 13) → (4, 1, 16): 4 − 3.
		{"decode", &tb.Decode, Shape{3, 1, 13}, 3, 1, true},
		{"exact fit", &tb.Prompt, Shape{2, 16, 0}, 32, 0, true},
		{"no bucket", &tb.Prompt, Shape{3, 17, 0}, 51, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := tt.set.PaddingCost(tt.shape, tt.realTokens)
			if got != tt.want || ok != tt.ok {
				t.Errorf("PaddingCost(%v, %d) = %d, %v; want %d, %v", tt.shape, tt.realTokens, got, ok, tt.want, tt.ok)
			}
		})
	}
}

func TestQueryTiles(t *testing.T) {
	tb, merged := smallTables(t)
	tests := []struct {
		name   string
		set    *Set
		bucket Shape
		tile   int
		want   int
	}{
		// Each of 2 sequences has ≤ 32 tokens: 2·⌈32/16⌉.
		{"padded prompt", &tb.Prompt, Shape{2, 32, 6}, 16, 4},
		{"padded prompt small tiles", &tb.Prompt, Shape{4, 16, 0}, 5, 16},
		// Up to 4 sequences share 64 tokens: 1+1+1+⌈61/16⌉ = 7, not ⌈64/16⌉ = 4.
		{"merged worst split", &merged.Prompt, Shape{1, 64, 8}, 16, 7},
		{"decode", &tb.Decode, Shape{4, 1, 32}, 16, 4},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.set.QueryTiles(tt.bucket, tt.tile); got != tt.want {
				t.Errorf("QueryTiles(%v, %d) = %d, want %d", tt.bucket, tt.tile, got, tt.want)
			}
		})
	}
}

func TestWarnings(t *testing.T) {
	var env Overrides
	env.Set(Key{Prompt, BS, Min}, 4, "PAGODA_PROMPT_BS_BUCKET_MIN")
	env.Set(Key{Prompt, Block, Step}, 8, "--prompt-block-bucket-step")
	env.Set(Key{Decode, Block, Max}, 9000, "PAGODA_DECODE_BLOCK_BUCKET_MAX")
	tests := []struct {
		name string
		o    Options
		want []string
	}{
		{"exponential overwrites every override", Options{Overrides: env}, []string{
			"using exponential strategy: your configuration PAGODA_PROMPT_BS_BUCKET_MIN=4 will be overwritten",
			"using exponential strategy: your configuration --prompt-block-bucket-step=8 will be overwritten",
			"using exponential strategy: your configuration PAGODA_DECODE_BLOCK_BUCKET_MAX=9000 will be overwritten",
		}},
		{"exponential without overrides", Options{}, nil},
		{"linear applies them", Options{Strategy: Linear, Overrides: env}, []string{
			"decode block bucket max 9000 is higher than --num-blocks=32; using 32",
		}},
		{"linear merged ignores bs", Options{Strategy: Linear, MergedPrefill: true, Overrides: env}, []string{
			"merged prefill fixes the prompt batch size to 1: your configuration PAGODA_PROMPT_BS_BUCKET_MIN=4 is ignored",
			"decode block bucket max 9000 is higher than --num-blocks=32; using 32",
		}},
		{"linear long context", Options{Strategy: Linear, LongContext: true}, []string{
			"--long-context applies to the exponential strategy only; ignored",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tb := newTable(t, smallLimits, tt.o)
			if !slices.Equal(tb.Warnings, tt.want) {
				t.Errorf("warnings\n got %q\nwant %q", tb.Warnings, tt.want)
			}
		})
	}
}

func TestNewErrors(t *testing.T) {
	var minAboveMax Overrides
	minAboveMax.Set(Key{Prompt, Seq, Min}, 100, "PAGODA_PROMPT_SEQ_BUCKET_MIN")
	var noBS Overrides
	noBS.Set(Key{Decode, BS, Min}, 8, "PAGODA_DECODE_BS_BUCKET_MIN")
	noBS.Set(Key{Decode, BS, Step}, 8, "PAGODA_DECODE_BS_BUCKET_STEP")
	var zeroBS Overrides
	zeroBS.Set(Key{Decode, BS, Min}, 0, "PAGODA_DECODE_BS_BUCKET_MIN")
	zeroBS.Set(Key{Decode, BS, Step}, 8, "PAGODA_DECODE_BS_BUCKET_STEP")
	tests := []struct {
		name string
		l    Limits
		o    Options
		want string
	}{
		{"bad limits", Limits{}, Options{}, "--max-num-seqs is 0"},
		{"negative capture", smallLimits, Options{MaxCaptureTokens: -1}, "--max-capture-tokens is -1, must be ≥ 0"},
		{"bad strategy", smallLimits, Options{Strategy: 7}, "unknown bucketing strategy Strategy(7)"},
		// Smallest prompt bucket is bs 2 × query 16 = 32 tokens.
		{"capture below smallest bucket", smallLimits, Options{MaxCaptureTokens: 31}, "generated 0 prompt buckets"},
		{"override min above max", smallLimits, Options{Strategy: Linear, Overrides: minAboveMax},
			"prompt seq bucket config: range (100, 16, 64): min 100 exceeds max 64"},
		// Decode bs (8, 8, 4): above --max-num-seqs 4.
		{"decode bs min above max", smallLimits, Options{Strategy: Linear, Overrides: noBS},
			"decode bs bucket config: range (8, 8, 4): min 8 exceeds max 4"},
		// Decode bs (0, 8, 4) → [0]: no step has 0 sequences.
		{"no decode buckets", smallLimits, Options{Strategy: Linear, Overrides: zeroBS},
			"generated 0 decode buckets from bs [0]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := New(tt.l, tt.o)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("New error = %v, want one containing %q", err, tt.want)
			}
		})
	}
}

func TestContiguousPA(t *testing.T) {
	// NumBlocks 40 > 4·⌊128/16⌋ = 32: block config (1, 4, 40, 7), range
	// 40^(i/6) = 1, 1.85, 3.42, 6.32, 11.7, 21.6, (40 = max) → [4 8 12 24 40];
	// no bs ≤ blocks filter and no clamp to bs·8.
	l := smallLimits
	l.NumBlocks = 40
	tb := newTable(t, l, Options{ContiguousPA: true})
	if want := []int{4, 8, 12, 24, 40}; !slices.Equal(tb.Decode.Block, want) {
		t.Errorf("block range = %v, want %v", tb.Decode.Block, want)
	}
	want := shapes([3]int{2, 1, 4}, [3]int{2, 1, 8}, [3]int{2, 1, 12}, [3]int{2, 1, 24}, [3]int{2, 1, 40},
		[3]int{4, 1, 4}, [3]int{4, 1, 8}, [3]int{4, 1, 12}, [3]int{4, 1, 24}, [3]int{4, 1, 40})
	if !slices.Equal(tb.Decode.Buckets, want) {
		t.Errorf("decode buckets\n got %v\nwant %v", tb.Decode.Buckets, want)
	}
	// Linear with contiguous PA: blocks (1, 2, 40) end at 40 → already
	// NumBlocks; with max overridden to 30, NumBlocks is appended.
	var o Overrides
	o.Set(Key{Decode, Block, Max}, 30, "PAGODA_DECODE_BLOCK_BUCKET_MAX")
	lin := newTable(t, l, Options{Strategy: Linear, ContiguousPA: true, Overrides: o})
	if got := lin.Decode.Block[len(lin.Decode.Block)-2:]; !slices.Equal(got, []int{30, 40}) {
		t.Errorf("linear block range ends %v, want [30 40]", got)
	}
}

// TestDefaultTableInvariants checks the CPU defaults: every prompt bucket
// within the capture bound, the token budget and the model length; every
// decode bucket with bs ≤ blocks ≤ bs·⌈L/B⌉.
func TestDefaultTableInvariants(t *testing.T) {
	tb := newTable(t, cpuLimits, DefaultOptions())
	l := tb.Limits
	for _, b := range tb.Prompt.Buckets {
		if b.Tokens() > 512 || b.QueryLen+b.Blocks*l.BlockSize > l.MaxModelLen || b.BatchSize > l.MaxNumPrefillSeqs {
			t.Errorf("prompt bucket %v out of bounds", b)
		}
	}
	for _, b := range tb.Decode.Buckets {
		if b.BatchSize > b.Blocks || b.Blocks > b.BatchSize*ceilDiv(l.MaxModelLen, l.BlockSize) || b.QueryLen != 1 {
			t.Errorf("decode bucket %v out of bounds", b)
		}
	}
	// The largest single-sequence context still has a bucket for each query.
	for _, q := range []int{16, 32, 48} {
		s := Shape{1, q, (l.MaxModelLen - q) / l.BlockSize}
		if _, ok := tb.Prompt.Find(s); !ok {
			t.Errorf("no prompt bucket for %v", s)
		}
	}
}
