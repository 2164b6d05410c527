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

// A micro-batch (sequences [lo, hi) of a step, as dual-batch overlap will
// run them) computes its sequences' logits exactly as the whole step does.
func TestMicroBatchMatchesWholeStep(t *testing.T) {
	f := newFixture(t)
	for i := range 4 {
		f.add(string(rune('a'+i)), slices.Repeat([]int32{1, int32(300 + i), 400}, 1+i)...)
	}
	out, err := f.s.Schedule()
	if err != nil {
		t.Fatal(err)
	}
	res, err := f.r.Execute(&out.Step)
	if err != nil {
		t.Fatal(err)
	}
	whole, rows := slices.Clone(res.Logits), slices.Clone(res.Rows)
	vocab := f.m.Config().VocabSize
	for _, split := range [][2]int{{0, 2}, {2, 4}, {1, 3}} {
		lo, hi := split[0], split[1]
		f.r.build(&out.Step, lo, hi)
		logits := make([]float32, len(f.r.batch.LogitIndices)*vocab)
		if err := f.m.Forward(&f.r.batch, f.r.cache.Device, logits); err != nil {
			t.Fatal(err)
		}
		first, last := rows[lo].First, rows[hi-1].First+rows[hi-1].Count
		if !slices.Equal(logits, whole[first*vocab:last*vocab]) {
			t.Fatalf("sequences [%d, %d): logits differ from the whole step's", lo, hi)
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
