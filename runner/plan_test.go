package runner

import (
	"pagoda/internal/testalloc"
	"slices"
	"testing"

	"pagoda/bucket"
)

func newPlannedFixture(t *testing.T) *fixture {
	t.Helper()
	f := newFixture(t)
	o := bucket.DefaultOptions()
	o.MergedPrefill = true
	table, err := bucket.New(bucket.Limits{MaxNumSeqs: 8, MaxNumBatchedTokens: 256, MaxModelLen: 512,
		BlockSize: 16, NumBlocks: 64}, o)
	if err != nil {
		t.Fatal(err)
	}
	f.r = New(f.m, f.r.cache, Options{Buckets: table, MaxNumSeqs: 8})
	return f
}

// With plans, steps reuse buffers sized at warm-up (no allocation), run
// from the plan of the bucket that covers them, and compute exactly what
// the eager runner computes.
func TestPlansMatchEagerWithoutAllocating(t *testing.T) {
	planned, eager := newPlannedFixture(t), newFixture(t)
	st, err := planned.r.Warmup(nil)
	if err != nil {
		t.Fatal(err)
	}
	if st.Plans == 0 || st.Runs == 0 || st.Bytes == 0 {
		t.Fatalf("warm-up captured nothing: %+v", st)
	}
	for _, f := range []*fixture{planned, eager} {
		for i := range 3 {
			f.add(string(rune('a'+i)), slices.Repeat([]int32{1, int32(300 + i), 400, 261}, 2+i)...)
		}
	}
	for step := range 4 {
		var results [2][]float32
		var plan *Plan
		for k, f := range []*fixture{planned, eager} {
			out, err := f.s.Schedule()
			if err != nil {
				t.Fatal(err)
			}
			if k == 0 && step > 0 {
				if n := testalloc.Steady(3, func() { f.r.Execute(&out.Step) }); n != 0 {
					t.Errorf("step %d: %v allocations with plans", step, n)
				}
			}
			res, err := f.r.Execute(&out.Step)
			if err != nil {
				t.Fatal(err)
			}
			results[k] = slices.Clone(res.Logits)
			if k == 0 {
				plan = res.Stats.Plan
			}
			for _, sq := range out.Seqs {
				if sq.Sample {
					sq.Seq.Append(int32(383 + step))
				}
			}
		}
		if !slices.Equal(results[0], results[1]) {
			t.Fatalf("step %d: logits differ with plans", step)
		}
		p := plan
		want := Prefill
		if step > 0 {
			want = Decode
		}
		if p == nil || p.Family != want {
			t.Fatalf("step %d ran with plan %+v, want a %s plan", step, p, want)
		}
	}
	if planned.r.Misses() != 0 {
		t.Fatalf("%d steps missed every bucket", planned.r.Misses())
	}
}

func TestPlanFindCountsPadding(t *testing.T) {
	f := newPlannedFixture(t)
	f.add("a", 1, 2, 3, 4, 5)
	out, err := f.s.Schedule()
	if err != nil {
		t.Fatal(err)
	}
	p := f.r.plans.find(&out.Step, 16)
	if p == nil || p.Family != Prefill || p.Tokens < 5 || p.Padding != int64(p.Tokens-5) {
		t.Fatalf("plan %+v for a 5-token prompt", p)
	}
}

// The worst case for a merged-prefill bucket (N−1 sequences with one
// token and one with the rest) runs with attention laid out for the plan's
// tile count, the tiles past the real work doing nothing: outputs equal the
// eager runner's bit for bit, and the step allocates nothing.
func TestPlanWorstCaseSplit(t *testing.T) {
	planned, eager := newPlannedFixture(t), newFixture(t)
	if _, err := planned.r.Warmup(nil); err != nil {
		t.Fatal(err)
	}
	for _, f := range []*fixture{planned, eager} {
		for i := range 5 {
			f.add(string(rune('a'+i)), int32(300+i)) // one token each
		}
		f.add("long", slices.Repeat([]int32{1, 300, 400, 261, 77}, 9)...) // 45 tokens
	}
	var results [2][]float32
	for k, f := range []*fixture{planned, eager} {
		out, err := f.s.Schedule()
		if err != nil {
			t.Fatal(err)
		}
		if len(out.Seqs) != 6 {
			t.Fatalf("scheduled %d sequences, want 6 in one step", len(out.Seqs))
		}
		res, err := f.r.Execute(&out.Step)
		if err != nil {
			t.Fatal(err)
		}
		results[k] = slices.Clone(res.Logits)
		if k == 0 {
			if n := testalloc.Steady(3, func() { f.r.Execute(&out.Step) }); n != 0 {
				t.Errorf("%v allocations with plans", n)
			}
			p := res.Stats.Plan
			real, planned := res.Stats.Tiles, res.Stats.PlanTiles
			if p == nil || real != 5+3 || planned != p.QueryTiles || planned < real {
				t.Fatalf("plan %+v: %d real tiles, laid out for %d", p, real, planned)
			}
		}
	}
	if !slices.Equal(results[0], results[1]) {
		t.Fatal("logits differ with plans")
	}
}
