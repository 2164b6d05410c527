package bucket

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// bucketsPerLine is how many buckets Describe prints on one line.
const bucketsPerLine = 8

// Describe writes a human-readable account of t: strategy and options, the
// resolved limits, and for each phase its configs, ranges and buckets
// (cheapest first). Warnings are not included; print t.Warnings separately.
func (t *Table) Describe(w io.Writer) error {
	var sb strings.Builder
	o, l := t.Options, t.Limits
	fmt.Fprintf(&sb, "strategy: %s (merged prefill %s, long context %s, prefix caching %s, contiguous PA %s)\n",
		o.Strategy, onOff(o.MergedPrefill), onOff(o.LongContext), onOff(o.PrefixCaching), onOff(o.ContiguousPA))
	fmt.Fprintf(&sb, "limits: max-num-seqs %d, max-num-prefill-seqs %d, max-num-batched-tokens %d, "+
		"max-model-len %d, block-size %d, num-blocks %d, max-capture-tokens %d\n",
		l.MaxNumSeqs, l.MaxNumPrefillSeqs, l.MaxNumBatchedTokens, l.MaxModelLen, l.BlockSize,
		l.NumBlocks, o.MaxCaptureTokens)
	for _, s := range []*Set{&t.Prompt, &t.Decode} {
		s.describe(&sb, o.Strategy)
	}
	_, err := io.WriteString(w, sb.String())
	return err
}

// describe writes one phase's configs, ranges and buckets.
func (s *Set) describe(sb *strings.Builder, st Strategy) {
	form := "min, step, max, limit"
	if st == Linear {
		form = "min, step, max"
	}
	fmt.Fprintf(sb, "\n%s config (%s) → range:\n", s.Phase, form)
	tw := tabwriter.NewWriter(sb, 0, 0, 2, ' ', 0)
	names := [3]string{BS: "bs", Seq: "query", Block: "blocks"}
	ranges := [3][]int{BS: s.BS, Seq: s.Seq, Block: s.Block}
	for d := range names {
		fmt.Fprintf(tw, "  %s\t%v\t%v\n", names[d], s.Dims.get(Dim(d)), ranges[d])
	}
	tw.Flush()
	layout := "bs, query, blocks"
	if s.merged {
		layout = "1, total query, total blocks"
	} else if s.Phase == Decode {
		layout = "bs, 1, total blocks"
	}
	fmt.Fprintf(sb, "%s buckets: %d (%s), cheapest first:\n", s.Phase, len(s.Buckets), layout)
	for i := 0; i < len(s.Buckets); i += bucketsPerLine {
		line := s.Buckets[i:min(i+bucketsPerLine, len(s.Buckets))]
		parts := make([]string, len(line))
		for j, b := range line {
			parts[j] = b.String()
		}
		fmt.Fprintf(sb, "  %s\n", strings.Join(parts, " "))
	}
}

func onOff(b bool) string {
	if b {
		return "on"
	}
	return "off"
}
