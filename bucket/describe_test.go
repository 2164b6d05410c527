package bucket

import (
	"strings"
	"testing"
)

func TestDescribe(t *testing.T) {
	const wantExp = `strategy: exponential (merged prefill off, long context off, prefix caching on, contiguous PA off)
limits: max-num-seqs 4, max-num-prefill-seqs 4, max-num-batched-tokens 64, max-model-len 128, block-size 16, num-blocks 32, max-capture-tokens 64

prompt config (min, step, max, limit) → range:
  bs      (1, 2, 4, 3)     [2 4]
  query   (16, 16, 64, 6)  [16 32 48 64]
  blocks  (0, 1, 7, 4)     [0 1 2 4 7]
prompt buckets: 15 (bs, query, blocks), cheapest first:
  (2, 16, 0) (2, 16, 1) (2, 16, 2) (2, 16, 4) (2, 16, 7) (2, 32, 0) (4, 16, 0) (2, 32, 1)
  (4, 16, 1) (2, 32, 2) (4, 16, 2) (2, 32, 4) (4, 16, 4) (2, 32, 6) (4, 16, 7)

decode config (min, step, max, limit) → range:
  bs      (1, 2, 4, 3)   [2 4]
  query   (1, 1, 1, 1)   [1]
  blocks  (1, 4, 32, 6)  [4 8 16 32]
decode buckets: 7 (bs, 1, total blocks), cheapest first:
  (2, 1, 4) (2, 1, 8) (2, 1, 16) (4, 1, 4) (4, 1, 8) (4, 1, 16) (4, 1, 32)
`
	tests := []struct {
		name     string
		o        Options
		want     string   // whole output, when set
		contains []string // otherwise, lines it must contain
	}{
		{name: "exponential", o: Options{PrefixCaching: true, MaxCaptureTokens: 64}, want: wantExp},
		{name: "linear merged", o: Options{Strategy: Linear, MergedPrefill: true}, contains: []string{
			"strategy: linear (merged prefill on, long context off, prefix caching off, contiguous PA off)\n",
			"prompt config (min, step, max) → range:\n",
			"  query   (16, 64, 64)  [16 32 64]\n",
			"prompt buckets: 24 (1, total query, total blocks), cheapest first:\n",
			"  (1, 64, 0) (1, 64, 4) (1, 64, 8) (1, 64, 12) (1, 64, 16) (1, 64, 20) (1, 64, 24) (1, 64, 28)\n",
			"decode buckets: 52 (bs, 1, total blocks), cheapest first:\n",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var sb strings.Builder
			if err := newTable(t, smallLimits, tt.o).Describe(&sb); err != nil {
				t.Fatal(err)
			}
			got := sb.String()
			if tt.want != "" && got != tt.want {
				t.Errorf("Describe:\n%s\nwant:\n%s", got, tt.want)
			}
			for _, c := range tt.contains {
				if !strings.Contains(got, c) {
					t.Errorf("Describe output lacks %q:\n%s", c, got)
				}
			}
		})
	}
}
