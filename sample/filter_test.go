package sample

import (
	"fmt"
	"math"
	"slices"
	"testing"
)

// permProbs are the probabilities of permLogits by rank; rank j sits at
// token id permIDs[j], so that rank order and id order differ.
var (
	permProbs = []float64{0.30, 0.25, 0.20, 0.10, 0.08, 0.05, 0.02}
	permIDs   = []int32{3, 0, 6, 1, 5, 2, 4}
)

func permLogits() []float32 {
	p := make([]float64, len(permProbs))
	for j, id := range permIDs {
		p[id] = permProbs[j]
	}
	return logitsOf(p...)
}

// ranks returns the sorted ids of the given probability ranks of permLogits.
func ranks(rs ...int) []int32 {
	ids := make([]int32, len(rs))
	for i, r := range rs {
		ids[i] = permIDs[r]
	}
	slices.Sort(ids)
	return ids
}

// filterCase is a sampling setting and the tokens it keeps.
type filterCase struct {
	name   string
	edit   func(*Params)
	logits []float32 // nil = permLogits
	want   []int32   // kept ids, sorted
}

// input is the case's logits.
func (tt filterCase) input() []float32 {
	if tt.logits == nil {
		return permLogits()
	}
	return tt.logits
}

var filterCases = []filterCase{
	{"no filter", func(p *Params) {}, nil, ranks(0, 1, 2, 3, 4, 5, 6)},
	{"top_k 3", func(p *Params) { p.TopK = 3 }, nil, ranks(0, 1, 2)},
	{"top_k beyond vocab", func(p *Params) { p.TopK = 10 }, nil, ranks(0, 1, 2, 3, 4, 5, 6)},
	{"top_p 0.6 keeps the token crossing it", func(p *Params) { p.TopP = 0.6 }, nil, ranks(0, 1, 2)},
	{"top_p 0.5", func(p *Params) { p.TopP = 0.5 }, nil, ranks(0, 1)},
	{"top_p 0.29", func(p *Params) { p.TopP = 0.29 }, nil, ranks(0)},
	{"top_p 0.97", func(p *Params) { p.TopP = 0.97 }, nil, ranks(0, 1, 2, 3, 4, 5)},
	{"top_p 0.99", func(p *Params) { p.TopP = 0.99 }, nil, ranks(0, 1, 2, 3, 4, 5, 6)},
	{"top_p after temperature", func(p *Params) { p.TopP = 0.7; p.Temperature = 2 }, nil, ranks(0, 1, 2, 3)},
	{"min_p 0.3", func(p *Params) { p.MinP = 0.3 }, nil, ranks(0, 1, 2, 3)},
	{"min_p after temperature", func(p *Params) { p.MinP = 0.3; p.Temperature = 0.5 }, nil, ranks(0, 1, 2)},
	// top-p sees the probabilities renormalized over what top-k kept:
	// 0.30/0.75 = 0.4 ≥ 0.35 stops after the first token.
	{"top_p renormalized after top_k", func(p *Params) { p.TopK = 3; p.TopP = 0.35 }, nil, ranks(0)},
	{"top_p renormalized after min_p", func(p *Params) { p.MinP = 0.5; p.TopP = 0.35 }, nil, ranks(0)},
	{"min_p, top_k, top_p", func(p *Params) { p.MinP = 0.3; p.TopK = 3; p.TopP = 0.7 }, nil, ranks(0, 1)},
	{"top_k ties to lower ids", func(p *Params) { p.TopK = 2 }, []float32{1, 1, 1, 1, 0}, []int32{0, 1}},
	// Each 2 has probability 0.242: the mass before the third is 0.48 < 0.5, before the fourth 0.73.
	{"top_p ties to lower ids", func(p *Params) { p.TopP = 0.5 }, []float32{0, 2, 2, 2, 2}, []int32{1, 2, 3}},
	// Exactly half the mass before the third token: vLLM drops it (it drops
	// a token when the mass after it, inclusive, is ≤ 1 − top_p).
	{"top_p exact boundary after top_k", func(p *Params) { p.TopK = 4; p.TopP = 0.5 }, []float32{0, 0, 0, 0, -5}, []int32{0, 1}},
	{"top_p exact boundary", func(p *Params) { p.TopP = 0.5 }, []float32{0, 0, 0, 0}, []int32{0, 1}},
	{"-Inf dropped", func(p *Params) {}, []float32{0, float32(math.Inf(-1)), 0.5}, []int32{0, 2}},
	{"-Inf dropped by top_k", func(p *Params) { p.TopK = 3 }, []float32{float32(math.Inf(-1)), 0, float32(math.Inf(-1)), 1}, []int32{1, 3}},
}

// keptIDs returns the sorted ids with a positive weight in sup.
func keptIDs(sup support) []int32 {
	var ids []int32
	for i, w := range sup.dense {
		if w > 0 {
			ids = append(ids, int32(i))
		}
	}
	for _, c := range sup.cands {
		if c.v > 0 {
			ids = append(ids, c.id)
		}
	}
	slices.Sort(ids)
	return ids
}

// TestFilter checks the filter directly: the kept tokens and their weights.
func TestFilter(t *testing.T) {
	for _, tt := range filterCases {
		t.Run(tt.name, func(t *testing.T) {
			logits := tt.input()
			p := DefaultParams()
			tt.edit(&p)
			s := New(p, nil)
			var sc Scratch
			sup := s.filter.apply(&sc, s.process(&sc, logits))
			got := keptIDs(sup)
			if !slices.Equal(got, tt.want) {
				t.Fatalf("kept %v, want %v", got, tt.want)
			}
			checkWeights(t, sup, logits, float64(p.Temperature))
		})
	}
}

// checkWeights checks that every kept weight is exp((l − max) / T).
func checkWeights(t *testing.T, sup support, logits []float32, temp float64) {
	t.Helper()
	m := float64(slices.Max(logits))
	check := func(id int32, w float32) {
		if want := math.Exp((float64(logits[id]) - m) / temp); !closeTo(float64(w), want, 1e-6) {
			t.Fatalf("weight of %d = %v, want %v", id, w, want)
		}
	}
	for i, w := range sup.dense {
		if w > 0 {
			check(int32(i), w)
		}
	}
	for _, c := range sup.cands {
		check(c.id, c.v)
	}
}

// TestSampledSupport draws many tokens with a fixed seed and checks that
// exactly the kept tokens come out.
func TestSampledSupport(t *testing.T) {
	for _, tt := range filterCases {
		t.Run(tt.name, func(t *testing.T) {
			p := withSeed(DefaultParams(), 2024)
			tt.edit(&p)
			got := supportOf(draws(t, New(p, nil), tt.input(), 5000))
			if !slices.Equal(got, tt.want) {
				t.Fatalf("sampled support %v, want %v", got, tt.want)
			}
		})
	}
}

// refKept is the reference filter: full sort, then min-p, top-k and top-p
// exactly as specified, in float64.
func refKept(logits []float32, temp, minP float64, topK int, topP float64) []int32 {
	m := float64(slices.Max(logits))
	order := make([]int32, 0, len(logits))
	for i, v := range logits {
		if minP == 0 || (float64(v)-m)/temp >= math.Log(minP) {
			order = append(order, int32(i))
		}
	}
	slices.SortStableFunc(order, func(a, b int32) int { return -compareFloat(float64(logits[a]), float64(logits[b])) })
	if topK > 0 && topK < len(order) {
		order = order[:topK]
	}
	if topP < 1 {
		z := 0.0
		for _, id := range order {
			z += math.Exp((float64(logits[id]) - m) / temp)
		}
		acc, r := 0.0, 0
		for r < len(order) && acc < topP*z {
			acc += math.Exp((float64(logits[order[r]]) - m) / temp)
			r++
		}
		order = order[:r]
	}
	slices.Sort(order)
	return order
}

func TestFilterMatchesReference(t *testing.T) {
	logits := randLogits(21, 2000, 2)
	for _, temp := range []float32{0.6, 1, 1.5} {
		for _, minP := range []float32{0, 0.01, 0.2} {
			for _, topK := range []int{0, 5, 300} {
				for _, topP := range []float32{1, 0.5, 0.9, 0.99} {
					name := fmt.Sprintf("T=%g/min_p=%g/top_k=%d/top_p=%g", temp, minP, topK, topP)
					t.Run(name, func(t *testing.T) {
						p := Params{Temperature: temp, MinP: minP, TopK: topK, TopP: topP, RepetitionPenalty: 1}
						s := New(p, nil)
						var sc Scratch
						sup := s.filter.apply(&sc, s.process(&sc, logits))
						want := refKept(logits, float64(temp), float64(minP), topK, float64(topP))
						if got := keptIDs(sup); !slices.Equal(got, want) {
							t.Fatalf("kept %d tokens, reference %d:\n got %v\nwant %v", len(got), len(want), got, want)
						}
						checkWeights(t, sup, logits, float64(temp))
					})
				}
			}
		}
	}
}

// TestNucleusOneBucket: with equal logits every token is in one bucket, and
// the nucleus is cut inside it by id.
func TestNucleusOneBucket(t *testing.T) {
	logits := make([]float32, 1000)
	for _, tt := range []struct {
		topP float32
		want int
	}{{0.5, 500}, {0.0001, 1}, {0.9995, 1000}, {0.25, 250}} {
		t.Run(fmt.Sprint(tt.topP), func(t *testing.T) {
			s := New(Params{Temperature: 1, TopP: tt.topP, RepetitionPenalty: 1}, nil)
			var sc Scratch
			got := keptIDs(s.filter.apply(&sc, s.process(&sc, logits)))
			if len(got) != tt.want || got[len(got)-1] != int32(tt.want-1) {
				t.Fatalf("kept %d tokens ending at %d, want ids 0..%d", len(got), got[len(got)-1], tt.want-1)
			}
		})
	}
}

func TestWeightBucket(t *testing.T) {
	tests := []struct {
		w    float32
		want int
	}{
		{1, 0}, {0.99, 1}, {0.5, 1}, {0.4999, 2}, {0.25, 2}, {1.0 / 1024, 10},
		{math.SmallestNonzeroFloat32, 127}, {math.Float32frombits(1 << 23), 126},
	}
	for _, tt := range tests {
		if got := weightBucket(tt.w); got != tt.want {
			t.Errorf("weightBucket(%g) = %d, want %d", tt.w, got, tt.want)
		}
	}
}

func TestDrawInverseCDF(t *testing.T) {
	w := []float32{0, 1, 0, 2, 1} // total 4: id 1 on [0, 0.25), id 3 on [0.25, 0.75), id 4 after
	for _, tt := range []struct {
		u    float64
		want int32
	}{{0, 1}, {0.2499, 1}, {0.25, 3}, {0.7499, 3}, {0.75, 4}, {0.999999, 4}} {
		if got, ok := drawDense(w, 4, tt.u); !ok || got != tt.want {
			t.Errorf("drawDense(u=%g) = %d, %v; want %d", tt.u, got, ok, tt.want)
		}
		c := []cand{{1, 1}, {3, 2}, {4, 1}}
		if got, ok := (support{cands: c}).draw(tt.u); !ok || got != tt.want {
			t.Errorf("cands draw(u=%g) = %d, %v; want %d", tt.u, got, ok, tt.want)
		}
	}
	if _, ok := drawDense([]float32{0, 0}, 0, 0.5); ok {
		t.Error("drawDense of zero weights reported a token")
	}
}
