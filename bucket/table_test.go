package bucket

import (
	"slices"
	"testing"
)

// smallLimits keep bucket lists short enough to write out by hand.
var smallLimits = Limits{MaxNumSeqs: 4, MaxNumBatchedTokens: 64, MaxModelLen: 128, BlockSize: 16, NumBlocks: 32}

func newTable(t *testing.T, l Limits, o Options) *Table {
	t.Helper()
	tb, err := New(l, o)
	if err != nil {
		t.Fatal(err)
	}
	return tb
}

// smallTables returns the tables of smallLimits without and with
// MergedPrefill.
func smallTables(t *testing.T) (tb, merged *Table) {
	t.Helper()
	return newTable(t, smallLimits, Options{}), newTable(t, smallLimits, Options{MergedPrefill: true})
}

func shapes(s ...[3]int) []Shape {
	out := make([]Shape, len(s))
	for i, v := range s {
		out[i] = Shape{v[0], v[1], v[2]}
	}
	return out
}

// Small limits, exponential (see config_test.go for the formulas):
//
//	prompt bs    (1, 2, 4, 3)    → 4^(i/2) = 1, 2, 4        → [2 4]
//	prompt query (16, 16, 64, 6) → 16·4^(i/5) = 16, 21.1, 27.9, 36.8, 48.5, 64
//	                                                        → [16 32 48 64]
//	prompt ctx   (0, 1, 7, 4)    → 7^(i/3) = 1, 1.9, 3.7, 7 → [0 1 2 4 7]
//	decode bs    (1, 2, 4, 3)                               → [2 4]
//	decode block (1, 4, 32, 6)   → 2^i = 1, 2, 4, 8, 16, 32 → [4 8 16 32]
//
// Prompt: bs·query ≤ 64 leaves (2, 16), (2, 32), (4, 16); the top ctx 7 is
// clamped to (128 − query)/16: 7 for query 16, 6 for query 32. Decode: blocks
// clamped to bs·⌈128/16⌉ = 16 for bs 2 (32 → 16, a duplicate).
// Merged: query (16, 64, 64, 6) pads every value to 64; ctx (0, 4, 28, 4) →
// 4·7^(i/3) = 4, 7.7, 14.6, 28 → [0 4 8 16 28], all ≤ 4·(128 − 64/4)/16 = 28.
func TestBucketLists(t *testing.T) {
	decode := shapes([3]int{2, 1, 4}, [3]int{2, 1, 8}, [3]int{2, 1, 16},
		[3]int{4, 1, 4}, [3]int{4, 1, 8}, [3]int{4, 1, 16}, [3]int{4, 1, 32})
	tests := []struct {
		name           string
		o              Options
		prompt, decode []Shape
	}{
		{"exponential", Options{}, shapes(
			[3]int{2, 16, 0}, [3]int{2, 16, 1}, [3]int{2, 16, 2}, [3]int{2, 16, 4}, [3]int{2, 16, 7},
			[3]int{2, 32, 0}, [3]int{4, 16, 0}, [3]int{2, 32, 1}, [3]int{4, 16, 1}, [3]int{2, 32, 2},
			[3]int{4, 16, 2}, [3]int{2, 32, 4}, [3]int{4, 16, 4}, [3]int{2, 32, 6}, [3]int{4, 16, 7}),
			decode},
		{"merged prefill", Options{MergedPrefill: true}, shapes(
			[3]int{1, 64, 0}, [3]int{1, 64, 4}, [3]int{1, 64, 8}, [3]int{1, 64, 16}, [3]int{1, 64, 28}),
			decode},
		// Capture bound 32 tokens keeps only bs 2 × query 16.
		{"capture bound", Options{MaxCaptureTokens: 32}, shapes(
			[3]int{2, 16, 0}, [3]int{2, 16, 1}, [3]int{2, 16, 2}, [3]int{2, 16, 4}, [3]int{2, 16, 7}),
			decode},
		// Linear decode: bs (1, 32, 4) → [1 2 4]; blocks max(128·4/16, 16) =
		// 32, step 1 → 1…32; bs ≤ blocks, blocks ≤ 8·bs. Prompt: bs [1 2 4],
		// query (16, 16, 64) → [16 32 48 64], ctx (0, 1, 7) → 0…7.
		{"linear", Options{Strategy: Linear, MaxCaptureTokens: 16}, shapes(
			[3]int{1, 16, 0}, [3]int{1, 16, 1}, [3]int{1, 16, 2}, [3]int{1, 16, 3}, [3]int{1, 16, 4},
			[3]int{1, 16, 5}, [3]int{1, 16, 6}, [3]int{1, 16, 7}),
			linearDecodeBuckets()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tb := newTable(t, smallLimits, tt.o)
			if !slices.Equal(tb.Prompt.Buckets, tt.prompt) {
				t.Errorf("prompt buckets\n got %v\nwant %v", tb.Prompt.Buckets, tt.prompt)
			}
			if !slices.Equal(tb.Decode.Buckets, tt.decode) {
				t.Errorf("decode buckets\n got %v\nwant %v", tb.Decode.Buckets, tt.decode)
			}
		})
	}
}

// linearDecodeBuckets lists (bs, 1, blocks) for bs 1, 2, 4 with
// bs ≤ blocks ≤ min(32, 8·bs), cheapest first.
func linearDecodeBuckets() []Shape {
	var out []Shape
	for _, bs := range []int{1, 2, 4} {
		for blocks := bs; blocks <= min(32, 8*bs); blocks++ {
			out = append(out, Shape{bs, 1, blocks})
		}
	}
	return out
}

func TestFind(t *testing.T) {
	tb, merged := smallTables(t)
	tests := []struct {
		name  string
		set   *Set
		shape Shape
		want  Shape
		ok    bool
	}{
		{"exact bucket", &tb.Prompt, Shape{2, 32, 4}, Shape{2, 32, 4}, true},
		{"one short prompt", &tb.Prompt, Shape{1, 10, 0}, Shape{2, 16, 0}, true},
		{"three seqs", &tb.Prompt, Shape{3, 10, 3}, Shape{4, 16, 4}, true},
		{"long context", &tb.Prompt, Shape{1, 17, 6}, Shape{2, 32, 6}, true},
		{"cheapest of three", &tb.Prompt, Shape{2, 16, 3}, Shape{2, 16, 4}, true},
		{"query pads up", &tb.Prompt, Shape{1, 20, 0}, Shape{2, 32, 0}, true},
		{"past max model len", &tb.Prompt, Shape{1, 20, 7}, Shape{}, false},
		{"over token budget", &tb.Prompt, Shape{3, 17, 0}, Shape{}, false},
		{"decode", &tb.Decode, Shape{3, 1, 9}, Shape{4, 1, 16}, true},
		{"decode one seq", &tb.Decode, Shape{1, 1, 1}, Shape{2, 1, 4}, true},
		{"decode bs 2 long", &tb.Decode, Shape{2, 1, 17}, Shape{4, 1, 32}, true},
		{"decode too many seqs", &tb.Decode, Shape{5, 1, 5}, Shape{}, false},
		{"merged", &merged.Prompt, Shape{1, 50, 5}, Shape{1, 64, 8}, true},
		{"merged too long", &merged.Prompt, Shape{1, 65, 0}, Shape{}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := tt.set.Find(tt.shape)
			if got != tt.want || ok != tt.ok {
				t.Errorf("Find(%v) = %v, %v; want %v, %v", tt.shape, got, ok, tt.want, tt.ok)
			}
		})
	}
}

// TestFindIsCheapestCover checks Find against a brute-force search over
// every bucket for a grid of shapes, for several configurations.
func TestFindIsCheapestCover(t *testing.T) {
	configs := []struct {
		name string
		l    Limits
		o    Options
	}{
		{"cpu exponential", cpuLimits, DefaultOptions()},
		{"cpu merged", cpuLimits, Options{MergedPrefill: true, MaxCaptureTokens: 512}},
		{"cpu linear", cpuLimits, Options{Strategy: Linear, MaxCaptureTokens: 256}},
		{"small long context", smallLimits, Options{LongContext: true}},
	}
	for _, c := range configs {
		t.Run(c.name, func(t *testing.T) {
			tb := newTable(t, c.l, c.o)
			for _, set := range []*Set{&tb.Prompt, &tb.Decode} {
				if !slices.IsSortedFunc(set.Buckets, compareCost) {
					t.Fatalf("%s buckets not sorted cheapest first", set.Phase)
				}
				for _, s := range probeShapes(set) {
					want, wantOK := bruteFind(set.Buckets, s)
					got, ok := set.Find(s)
					if got != want || ok != wantOK {
						t.Fatalf("%s Find(%v) = %v, %v; brute force %v, %v", set.Phase, s, got, ok, want, wantOK)
					}
				}
			}
		})
	}
}

// probeShapes returns shapes around every range value: each value, one more
// and one less, in every combination.
func probeShapes(s *Set) []Shape {
	near := func(vals []int) []int {
		var out []int
		for _, v := range vals {
			out = append(out, max(v-1, 0), v, v+1)
		}
		slices.Sort(out)
		return slices.Compact(out)
	}
	var out []Shape
	for _, bs := range near(s.BS) {
		for _, q := range near(s.Seq) {
			for _, b := range near(s.Block) {
				out = append(out, Shape{bs, q, b})
			}
		}
	}
	return out
}

func bruteFind(buckets []Shape, s Shape) (Shape, bool) {
	var best Shape
	found := false
	for _, b := range buckets {
		if b.Covers(s) && (!found || compareCost(b, best) < 0) {
			best, found = b, true
		}
	}
	return best, found
}

func TestFindDoesNotAllocate(t *testing.T) {
	tb := newTable(t, cpuLimits, DefaultOptions())
	allocs := testing.AllocsPerRun(100, func() {
		tb.Prompt.Find(Shape{3, 100, 40})
		tb.Decode.Find(Shape{30, 1, 3000})
	})
	if allocs != 0 {
		t.Errorf("Find allocates %v times per call", allocs)
	}
}
