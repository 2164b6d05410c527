package sample

import (
	"fmt"
	"math"
	"slices"
	"testing"

	"pagoda/internal/refmath"
)

func TestLogSoftmax(t *testing.T) {
	inf := float32(math.Inf(-1))
	tests := []struct {
		name   string
		logits []float32
	}{
		{"small", []float32{1, 2, 3}},
		{"large values", []float32{1000, 999, 998.5}},
		{"wide spread", randLogits(1, 5000, 8)},
		{"one -Inf", []float32{0, inf, 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ref := refmath.LogSoftmax(tt.logits)
			out := make([]float32, len(tt.logits))
			LogSoftmax(tt.logits, out)
			inPlace := slices.Clone(tt.logits)
			LogSoftmax(inPlace, inPlace)
			for i := range ref {
				if math.IsInf(ref[i], -1) {
					if !math.IsInf(float64(out[i]), -1) {
						t.Fatalf("out[%d] = %v, want -Inf", i, out[i])
					}
					continue
				}
				if !closeTo(float64(out[i]), ref[i], 1e-6) {
					t.Fatalf("out[%d] = %v, want %v", i, out[i], ref[i])
				}
				if inPlace[i] != out[i] {
					t.Fatalf("in place [%d] = %v, out of place %v", i, inPlace[i], out[i])
				}
			}
		})
	}
}

// refTop is the reference top-n: a stable sort by value descending.
func refTop(vals []float32, n int) []cand {
	all := make([]cand, len(vals))
	for i, v := range vals {
		all[i] = cand{int32(i), v}
	}
	slices.SortStableFunc(all, func(a, b cand) int { return -compareFloat(float64(a.v), float64(b.v)) })
	return all[:min(n, len(all))]
}

func TestSelectTop(t *testing.T) {
	ties := []float32{2, 5, 2, 5, 1, 5, 2, 0, 5}
	random := randLogits(2, 3000, 3)
	for _, tt := range []struct {
		name string
		vals []float32
		n    int
	}{
		{"ties n=1", ties, 1}, {"ties n=2", ties, 2}, {"ties n=5", ties, 5}, {"ties all", ties, 9},
		{"ties more than all", ties, 20}, {"random n=1", random, 1}, {"random n=20", random, 20},
		{"random n=500", random, 500}, {"random all", random, 3000},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := selectTop(nil, tt.vals, tt.n, float32(math.Inf(-1)))
			if want := refTop(tt.vals, tt.n); !slices.Equal(got, want) {
				t.Fatalf("selectTop = %v, want %v", got, want)
			}
		})
	}
	t.Run("floor and NaN", func(t *testing.T) {
		vals := []float32{3, float32(math.NaN()), -1, 2, float32(math.Inf(-1)), 0.5}
		got := selectTop(make([]cand, 0, 1), vals, 10, 0.5)
		if want := []cand{{0, 3}, {3, 2}, {5, 0.5}}; !slices.Equal(got, want) {
			t.Fatalf("selectTop = %v, want %v", got, want)
		}
	})
}

func TestTopLogprobs(t *testing.T) {
	logits := randLogits(4, 800, 3)
	ref := refmath.LogSoftmax(logits)
	for _, n := range []int{0, 1, 7, 64, 100} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			prefix := []TokenLogprob{{ID: -1}}
			got := TopLogprobs(prefix, logits, n)
			if len(got) != 1+n || got[0].ID != -1 {
				t.Fatalf("got %d entries (first %+v), want the prefix and %d more", len(got), got[0], n)
			}
			for j, c := range refTop(logits, n) {
				tl := got[1+j]
				if tl.ID != c.id || !closeTo(float64(tl.Logprob), ref[c.id], 1e-6) {
					t.Fatalf("entry %d = %+v, want {%d %v}", j, tl, c.id, ref[c.id])
				}
			}
		})
	}
}

func TestLogprobsFunc(t *testing.T) {
	logits := []float32{0.5, 2, -1, 2, 1}
	ref := refmath.LogSoftmax(logits)
	r := Logprobs(logits, 4, 2, nil)
	if r.ID != 4 || r.Rank != 3 || !closeTo(float64(r.Logprob), ref[4], 1e-6) {
		t.Fatalf("Logprobs = %+v, want id 4 rank 3 logprob %v", r, ref[4])
	}
	if len(r.Top) != 2 || r.Top[0].ID != 1 || r.Top[1].ID != 3 || !closeTo(float64(r.Top[0].Logprob), ref[1], 1e-6) {
		t.Fatalf("Top = %+v, want ids 1, 3", r.Top)
	}
}

func TestTopLogprobsAllocs(t *testing.T) {
	logits := randLogits(5, 2000, 2)
	dst := make([]TokenLogprob, 0, 64)
	if a := testing.AllocsPerRun(20, func() { dst = TopLogprobs(dst[:0], logits, 64) }); a != 0 {
		t.Fatalf("TopLogprobs allocates %v times per call", a)
	}
}
