package bucket

import (
	"math"
	"slices"
	"strings"
	"testing"
)

func TestExponentialRange(t *testing.T) {
	tests := []struct {
		name         string
		r            Range
		long, contPA bool
		want         []int
	}{
		// vllm-gaudi's worked example (its bucketing documentation): 128·16^(i/9) = 128.00, 174.18, 237.02,
		// 322.54, 438.91, 597.26, 812.75, 1105.98, 1505.01, 2048.00, padded
		// to 128 → 128, 256, 256, 384, …; the duplicate 256 is dropped.
		{name: "vllm-gaudi example", r: Range{128, 128, 2048, 10},
			want: []int{128, 256, 384, 512, 640, 896, 1152, 1536, 2048}},
		{name: "limit 1 is [max]", r: Range{16, 16, 2048, 1}, want: []int{2048}},
		{name: "limit 1 has no zero bucket", r: Range{0, 1, 7, 1}, want: []int{7}},
		// vllm-gaudi's decode/prompt bs config (1, 2, 64, 7): 64^(i/6) = 2^i = 1, 2, …, 64;
		// 1 pads to the step 2.
		{name: "bs step 2 pads 1", r: Range{1, 2, 64, 7}, want: []int{2, 4, 8, 16, 32, 64}},
		// Prompt query (16, 16, 2048, 11): 16·128^(i/10) = 16, 25.99, 42.22,
		// 68.59, 111.43, 181.02, 294.07, 477.71, 776.05, 1260.69, 2048.
		{name: "prompt query", r: Range{16, 16, 2048, 11},
			want: []int{16, 32, 48, 80, 112, 192, 304, 480, 784, 1264, 2048}},
		// Min 0: zero bucket, series from step 1: 511^(i/9) = 1, 1.9994,
		// 3.998, …, 255.6, 511.
		{name: "min 0 adds zero", r: Range{0, 1, 511, 10},
			want: []int{0, 1, 2, 4, 8, 16, 32, 64, 128, 256, 511}},
		// 32768^(i/15) = 2^i exactly; float64 pow gives 4096.0000000000x at
		// i = 12, which vllm-gaudi pads to 4160 (also 8256, 16448).
		{name: "exact powers stay exact", r: Range{1, 64, 32768, 16},
			want: []int{64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384, 32768}},
		// vllm-gaudi's float64 gives 0, 2, 4, 8, 18, 34, 64 here.
		{name: "exact powers min 0", r: Range{0, 2, 64, 6}, want: []int{0, 2, 4, 8, 16, 32, 64}},
		// Long context (0, 1, 511, 10): 5 exponential values 51.1^(i/4) =
		// 1, 2.67, 7.15, 19.11, 51.1 → 1, 3, 8, 20, 52; then 5 steps of
		// (511−51.1)/5 = 91.98: 143.08, 235.06, 327.04, 419.02, 511.
		{name: "long context", r: Range{0, 1, 511, 10}, long: true,
			want: []int{0, 1, 3, 8, 20, 52, 144, 236, 328, 420, 511}},
		// 16·(186.18/16)^(i/4) = 16, 29.6, 54.6, 100.8, 186.2 → 16, 32, 64,
		// 112, 192; then 2048/11 + i·310.3 → 496.5, 806.8, 1117.1, 1427.4,
		// 1737.7, 2048 → 512, 816, 1120, 1440, 1744, 2048.
		{name: "long context query", r: Range{16, 16, 2048, 11}, long: true,
			want: []int{16, 32, 64, 112, 192, 512, 816, 1120, 1440, 1744, 2048}},
		// Limit 2: one exponential value (min; vllm-gaudi divides by zero),
		// one linear step from 100/2 = 50 to 100.
		{name: "long context limit 2", r: Range{4, 4, 100, 2}, long: true, want: []int{4, 100}},
		// 1000^(i/3) = 1, 10, 100, 1000 → 64, 64, 128, 1024; contiguous PA
		// ends at max itself.
		{name: "max not a step multiple", r: Range{1, 64, 1000, 4}, want: []int{64, 128, 1024}},
		{name: "contiguous PA ends at max", r: Range{1, 64, 1000, 4}, contPA: true, want: []int{64, 128, 1000}},
		{name: "min equals max", r: Range{8, 4, 8, 5}, want: []int{8}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.r.Exponential(tt.long, tt.contPA)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("%v.Exponential(%v, %v) = %v, want %v", tt.r, tt.long, tt.contPA, got, tt.want)
			}
		})
	}
}

func TestLinearRange(t *testing.T) {
	tests := []struct {
		name string
		r    Range
		want []int
	}{
		{"vLLM docstring example", Range{Min: 2, Step: 32, Max: 64}, []int{2, 4, 8, 16, 32, 64}},
		{"ramp stops at max", Range{Min: 1, Step: 32, Max: 4}, []int{1, 2, 4}},
		{"max not a step multiple", Range{Min: 0, Step: 32, Max: 100}, []int{0, 32, 64, 96}},
		{"min above step", Range{Min: 48, Step: 32, Max: 128}, []int{64, 96, 128}},
		{"zero only", Range{Min: 0, Step: 4, Max: 2}, []int{0}},
		{"ramp then steps", Range{Min: 16, Step: 64, Max: 256}, []int{16, 32, 64, 128, 192, 256}},
		{"step 1", Range{Min: 1, Step: 1, Max: 5}, []int{1, 2, 3, 4, 5}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.r.Linear()
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("%v.Linear() = %v, want %v", tt.r, got, tt.want)
			}
		})
	}
}

func TestRangeErrors(t *testing.T) {
	tests := []struct {
		name   string
		r      Range
		linear bool
		want   string
	}{
		{"limit 0", Range{1, 1, 8, 0}, false, "limit must be ≥ 1"},
		{"step 0", Range{1, 0, 8, 3}, false, "step must be ≥ 1"},
		{"min above max", Range{9, 1, 8, 3}, false, "min 9 exceeds max 8"},
		{"max 0", Range{0, 1, 0, 3}, false, "max must be ≥ 1"},
		{"negative min", Range{-1, 1, 8, 3}, false, "min must be ≥ 0"},
		{"linear step 0", Range{Min: 1, Max: 8}, true, "step must be ≥ 1"},
		{"linear min above max", Range{Min: 9, Step: 1, Max: 8}, true, "min 9 exceeds max 8"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var err error
			if tt.linear {
				_, err = tt.r.Linear()
			} else {
				_, err = tt.r.Exponential(false, false)
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error = %v, want one containing %q", err, tt.want)
			}
		})
	}
}

func TestRangeString(t *testing.T) {
	tests := []struct {
		r    Range
		want string
	}{
		{Range{1, 2, 64, 7}, "(1, 2, 64, 7)"},
		{Range{Min: 1, Step: 32, Max: 64}, "(1, 32, 64)"},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			if got := tt.r.String(); got != tt.want {
				t.Errorf("String() = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestIntegerHelpers(t *testing.T) {
	t.Run("ceilLog2 matches math", func(t *testing.T) {
		for n := 1; n <= 1<<16; n++ {
			if got, want := ceilLog2(n), int(math.Ceil(math.Log2(float64(n)))); got != want {
				t.Fatalf("ceilLog2(%d) = %d, want %d", n, got, want)
			}
		}
	})
	t.Run("floorDiv rounds toward minus infinity", func(t *testing.T) {
		cases := [][3]int{{7, 2, 3}, {-7, 2, -4}, {-8, 2, -4}, {0, 5, 0}, {-1, 16, -1}}
		for _, c := range cases {
			if got := floorDiv(c[0], c[1]); got != c[2] {
				t.Errorf("floorDiv(%d, %d) = %d, want %d", c[0], c[1], got, c[2])
			}
		}
	})
	t.Run("roundUpTo", func(t *testing.T) {
		cases := []struct {
			x    float64
			step int
			want int
		}{
			{4096.000000000002, 64, 4096}, {4096.5, 64, 4160}, {4095.9999999999995, 64, 4096},
			{0.5, 1, 1}, {1, 2, 2}, {2, 2, 2},
		}
		for _, c := range cases {
			if got := roundUpTo(c.x, c.step); got != c.want {
				t.Errorf("roundUpTo(%v, %d) = %d, want %d", c.x, c.step, got, c.want)
			}
		}
	})
}
