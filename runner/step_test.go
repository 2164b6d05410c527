package runner

import (
	"errors"
	"slices"
	"testing"

	"pagoda/kvcache"
	"pagoda/sched"
)

// A step decoded from its wire form runs on another runner (its own cache,
// the same model) exactly as the original runs here: the step is the whole
// contract, which is what a tensor-parallel rank relies on.
func TestExecuteDecodedStep(t *testing.T) {
	f, remote := newFixture(t), newFixture(t)
	for i := range 3 {
		f.add(string(rune('a'+i)), slices.Repeat([]int32{1, int32(300 + i), 400, 261}, 1+i)...)
	}
	var wire []byte
	var got sched.Step
	for step := range 4 {
		out, err := f.s.Schedule()
		if err != nil {
			t.Fatal(err)
		}
		if wire, err = out.Step.AppendBinary(wire[:0]); err != nil {
			t.Fatal(err)
		}
		if err := got.UnmarshalBinary(wire); err != nil {
			t.Fatal(err)
		}
		want, err := f.r.Execute(&out.Step)
		if err != nil {
			t.Fatal(err)
		}
		wantLogits := slices.Clone(want.Logits)
		res, err := remote.r.Execute(&got)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(res.Logits, wantLogits) || !slices.Equal(res.Rows, want.Rows) {
			t.Fatalf("step %d: the decoded step computed different logits", step)
		}
		for _, sq := range out.Seqs {
			if sq.Sample {
				sq.Seq.Append(int32(383 + step))
			}
		}
	}
}

// A step split into two micro-batches (dual-batch overlap) computes the
// same logits, bit for bit, as the whole step, on another runner; every
// split point of every step is tried.
func TestExecuteSplitStep(t *testing.T) {
	f, remote := newFixture(t), newFixture(t)
	for i := range 4 {
		f.add(string(rune('a'+i)), slices.Repeat([]int32{1, int32(300 + i), 400}, 1+i)...)
	}
	for step := range 3 {
		out, err := f.s.Schedule()
		if err != nil {
			t.Fatal(err)
		}
		want, err := f.r.Execute(&out.Step)
		if err != nil || want.Stats.MicroBatches != 1 {
			t.Fatalf("whole step: %v (%d micro-batches)", err, want.Stats.MicroBatches)
		}
		wantLogits := slices.Clone(want.Logits)
		for k := range int32(out.Step.NumSeqs()) {
			split := out.Step
			split.Split = k
			got, err := remote.r.Execute(&split)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got.Logits, wantLogits) || !slices.Equal(got.Rows, want.Rows) || got.Stats.MicroBatches != min(2, 1+int(k)) {
				t.Fatalf("step %d split after %d sequences: logits differ from the whole step's (%d micro-batches)", step, k, got.Stats.MicroBatches)
			}
		}
		for _, sq := range out.Seqs {
			if sq.Sample {
				sq.Seq.Append(int32(383 + step))
			}
		}
	}
}

// A step that does not fit the cache is an error, not a panic.
func TestExecuteRejectsBadStep(t *testing.T) {
	f := newFixture(t)
	f.add("a", 1, 2, 3)
	out, err := f.s.Schedule()
	if err != nil {
		t.Fatal(err)
	}
	bad := out.Step
	bad.Blocks = slices.Clone(out.Step.Blocks)
	bad.Blocks[0] = int32(f.r.cache.Device.NumBlocks)
	if err := bad.Validate(); err != nil {
		t.Fatal(err)
	}
	if _, err := f.r.Execute(&bad); !errors.Is(err, sched.ErrInvalidStep) {
		t.Fatalf("out-of-range block: %v", err)
	}
	bad = sched.Step{Copies: []kvcache.Copy{{Src: 0, Dst: -1}}}
	if _, err := f.r.Execute(&bad); !errors.Is(err, sched.ErrInvalidStep) {
		t.Fatalf("copy to block -1: %v", err)
	}
}
