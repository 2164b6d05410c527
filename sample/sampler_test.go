package sample

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"pagoda/internal/refmath"
)

func TestGreedy(t *testing.T) {
	inf := float32(math.Inf(-1))
	tests := []struct {
		name   string
		params Params
		logits []float32
		want   int32
	}{
		{"argmax", Greedy(), []float32{0.1, 3, -2, 2.9}, 1},
		{"ties to lowest id", Greedy(), []float32{1, 5, 2, 5, 5}, 1},
		{"all equal", Greedy(), []float32{7, 7, 7}, 0},
		{"negative logits", Greedy(), []float32{-3, -1, -2}, 1},
		{"-Inf entries", Greedy(), []float32{inf, inf, -50, inf}, 2},
		{"all -Inf", Greedy(), []float32{inf, inf}, 0},
		{"top_k 1 at temperature 1", Params{Temperature: 1, TopP: 1, TopK: 1, RepetitionPenalty: 1}, []float32{0, 2, 2, 1}, 1},
		{"tiny temperature", Params{Temperature: 1e-6, TopP: 1, RepetitionPenalty: 1}, []float32{0, 1, 4}, 2},
		{"bias moves argmax", withBias(Greedy(), map[int32]float32{0: 3.5}), []float32{0, 3, -2}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := New(tt.params, nil)
			for i := range 3 { // greedy is deterministic
				if got := s.Sample(tt.logits).ID; got != tt.want {
					t.Fatalf("call %d: Sample = %d, want %d", i, got, tt.want)
				}
			}
		})
	}
}

func withBias(p Params, b map[int32]float32) Params {
	p.LogitBias = b
	return p
}

// TestGreedyPenalties: penalties apply to the argmax, and only after Accept.
func TestGreedyPenalties(t *testing.T) {
	logits := []float32{3, 2.9, 1}
	p := Greedy()
	p.RepetitionPenalty = 1.2 // 3 / 1.2 = 2.5 < 2.9
	if got := New(p, []int32{0}).Sample(logits).ID; got != 1 {
		t.Fatalf("repetition penalty on a prompt token: got %d, want 1", got)
	}
	p = Greedy()
	p.PresencePenalty = 0.5
	s := New(p, []int32{0}) // presence ignores the prompt
	if got := s.Sample(logits).ID; got != 0 {
		t.Fatalf("presence penalty, empty output: got %d, want 0", got)
	}
	s.Accept(0)
	if got := s.Sample(logits).ID; got != 1 {
		t.Fatalf("presence penalty after Accept(0): got %d, want 1", got)
	}
	s.Accept(1) // 2.9 − 0.5 = 2.4 < 3 − 0.5 = 2.5
	if got := s.Sample(logits).ID; got != 0 {
		t.Fatalf("presence penalty after Accept(1): got %d, want 0", got)
	}
}

// TestTemperatureDistribution draws many tokens with a fixed seed and
// compares the frequencies with softmax(logits / T).
func TestTemperatureDistribution(t *testing.T) {
	logits := []float32{2, 1, 0.5, 0, -1, 1.5}
	const n = 20000
	for _, temp := range []float32{0.5, 1, 1.7} {
		t.Run(fmt.Sprintf("T=%g", temp), func(t *testing.T) {
			p := DefaultParams()
			p.Temperature = temp
			got := draws(t, New(withSeed(p, 42), nil), logits, n)
			want := softmaxT(logits, float64(temp))
			for id, w := range want {
				f := float64(got[int32(id)]) / n
				// 0.015 is > 4.5 standard deviations of a frequency near 0.5.
				if math.Abs(f-w) > 0.015 {
					t.Errorf("T=%g token %d: frequency %.4f, want %.4f", temp, id, f, w)
				}
			}
		})
	}
}

// TestLowTemperatureClamped: a positive temperature below 0.01 samples as
// 0.01 (vLLM), not as greedy and not as itself.
func TestLowTemperatureClamped(t *testing.T) {
	logits := []float32{0, -0.02} // at T = 0.01: probabilities 0.881, 0.119
	p := withSeed(DefaultParams(), 8)
	p.Temperature = 0.001
	got := draws(t, New(p, nil), logits, 10000)
	want := softmaxT(logits, 0.01)
	if f := float64(got[1]) / 10000; math.Abs(f-want[1]) > 0.015 {
		t.Fatalf("frequency of token 1 = %.4f, want %.4f", f, want[1])
	}
}

func TestSeedReproducible(t *testing.T) {
	logits := randLogits(7, 64, 1)
	p := withSeed(DefaultParams(), 1234)
	seq := func(s *Sampler, n int) []int32 {
		out := make([]int32, n)
		for i := range out {
			out[i] = s.Sample(logits).ID
		}
		return out
	}
	a, b := seq(New(p, nil), 200), seq(New(p, nil), 200)
	if !slices.Equal(a, b) {
		t.Fatalf("same seed, different sequences:\n%v\n%v", a, b)
	}
	if c := seq(New(withSeed(DefaultParams(), 1235), nil), 200); slices.Equal(a, c) {
		t.Fatal("seeds 1234 and 1235 gave the same 200 tokens")
	}
	if x, y := seq(New(DefaultParams(), nil), 200), seq(New(DefaultParams(), nil), 200); slices.Equal(x, y) {
		t.Fatal("two unseeded samplers gave the same 200 tokens")
	}
}

func TestChildSeeds(t *testing.T) {
	logits := randLogits(10, 64, 1)
	parent := withSeed(DefaultParams(), 500)
	seq := func(p Params) []int32 {
		s, out := New(p, nil), make([]int32, 50)
		for i := range out {
			out[i] = s.Sample(logits).ID
		}
		return out
	}
	c0, c1 := parent.Child(0), parent.Child(1)
	if *c0.Seed != 500 || *c1.Seed != 501 || *parent.Seed != 500 {
		t.Fatalf("child seeds %d, %d (parent now %d), want 500, 501 (parent 500)", *c0.Seed, *c1.Seed, *parent.Seed)
	}
	if a, b := seq(c0), seq(c1); slices.Equal(a, b) {
		t.Fatal("children 0 and 1 drew the same 50 tokens")
	}
	if !slices.Equal(seq(c1), seq(parent.Child(1))) {
		t.Fatal("child 1 is not reproducible")
	}
	if DefaultParams().Child(3).Seed != nil {
		t.Fatal("child of an unseeded request got a seed")
	}
}

// TestSeedIndependentOfInterleaving: a seeded sampler draws the same tokens
// whatever other samplers (seeded, unseeded, greedy, other vocabularies) do
// between its calls.
func TestSeedIndependentOfInterleaving(t *testing.T) {
	logits := randLogits(8, 50, 1.5)
	pa := withSeed(DefaultParams(), 99)
	pa.TopP = 0.9
	alone := New(pa, nil)
	want := make([]int32, 100)
	for i := range want {
		want[i] = alone.Sample(logits).ID
	}
	a := New(pa, nil)
	others := []*Sampler{
		New(withSeed(DefaultParams(), 100), nil),
		New(DefaultParams(), nil),
		New(Greedy(), nil),
		New(withSeed(pa, 99), nil), // same seed: still its own stream
	}
	other := randLogits(9, 300, 2)
	pattern := rand.New(rand.NewPCG(5, 5))
	for i := range want {
		for range pattern.IntN(4) {
			others[pattern.IntN(len(others))].Sample(other)
		}
		if got := a.Sample(logits).ID; got != want[i] {
			t.Fatalf("draw %d: got %d, want %d (as when sampled alone)", i, got, want[i])
		}
	}
}

func TestLogprobsAreRaw(t *testing.T) {
	logits := randLogits(3, 1000, 4)
	ref := refmath.LogSoftmax(logits)
	p := withSeed(DefaultParams(), 3)
	p.Temperature = 0.7
	p.TopK = 40
	p.RepetitionPenalty = 1.3
	p.FrequencyPenalty = 0.4
	p.LogitBias = map[int32]float32{5: 10, 6: -10}
	p.Logprobs = 5
	s := New(p, []int32{1, 2, 3})
	order := make([]int32, len(logits))
	for i := range order {
		order[i] = int32(i)
	}
	slices.SortStableFunc(order, func(a, b int32) int { return -compareFloat(ref[a], ref[b]) })
	for step := range 20 {
		r := s.Sample(logits)
		s.Accept(r.ID)
		if !closeTo(float64(r.Logprob), ref[r.ID], 1e-6) {
			t.Fatalf("step %d: Logprob(%d) = %v, want %v", step, r.ID, r.Logprob, ref[r.ID])
		}
		if want := slices.Index(order, r.ID) + 1; r.Rank != want {
			t.Fatalf("step %d: Rank(%d) = %d, want %d", step, r.ID, r.Rank, want)
		}
		if len(r.Top) != 5 {
			t.Fatalf("step %d: %d top logprobs, want 5", step, len(r.Top))
		}
		for j, tl := range r.Top {
			if tl.ID != order[j] || !closeTo(float64(tl.Logprob), ref[order[j]], 1e-6) {
				t.Fatalf("step %d: Top[%d] = %+v, want {%d %v}", step, j, tl, order[j], ref[order[j]])
			}
		}
	}
}

func compareFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func TestTopTiesAndRank(t *testing.T) {
	logits := []float32{3, 5, 5, 1, 5, 4}
	p := Greedy()
	p.Logprobs = 4
	r := New(p, nil).Sample(logits)
	if r.ID != 1 || r.Rank != 3 { // vLLM's rank counts every token ≥ the chosen one
		t.Fatalf("Sample = id %d rank %d, want id 1 rank 3", r.ID, r.Rank)
	}
	var ids []int32
	for _, tl := range r.Top {
		ids = append(ids, tl.ID)
	}
	if want := []int32{1, 2, 4, 5}; !slices.Equal(ids, want) {
		t.Fatalf("Top ids = %v, want %v", ids, want)
	}
	if r.Top[0].Logprob != r.Top[1].Logprob || r.Top[2].Logprob <= r.Top[3].Logprob {
		t.Fatalf("Top logprobs not ordered: %+v", r.Top)
	}
}

func TestClone(t *testing.T) {
	logits := randLogits(11, 40, 1)
	p := withSeed(DefaultParams(), 5)
	p.PresencePenalty = 1
	s := New(p, nil)
	s.Accept(3)
	c := s.Clone()
	for i := range 20 {
		if a, b := s.Sample(logits).ID, c.Sample(logits).ID; a != b {
			t.Fatalf("draw %d: clone drew %d, original %d", i, b, a)
		}
	}
	c.Accept(4)
	if s.hist.count(4) != 0 || c.hist.count(4) != 1 || c.hist.count(3) != 1 {
		t.Fatalf("histories not independent: original count(4)=%d, clone count(4)=%d count(3)=%d",
			s.hist.count(4), c.hist.count(4), c.hist.count(3))
	}
}

func TestSampleDoesNotModifyLogits(t *testing.T) {
	logits := randLogits(12, 500, 2)
	orig := slices.Clone(logits)
	p := withSeed(DefaultParams(), 1)
	p.TopP = 0.8
	p.RepetitionPenalty = 1.5
	p.LogitBias = map[int32]float32{4: 5}
	s := New(p, []int32{1, 2})
	for range 5 {
		s.Accept(s.Sample(logits).ID)
	}
	if !slices.Equal(logits, orig) {
		t.Fatal("Sample modified the caller's logits")
	}
}

// TestSharedScratch: samplers sharing one Scratch draw what they draw with
// their own.
func TestSharedScratch(t *testing.T) {
	a, b := randLogits(13, 300, 2), randLogits(14, 200, 2)
	p := withSeed(DefaultParams(), 77)
	p.TopP = 0.95
	own1, own2 := New(p, nil), New(withSeed(p, 78), nil)
	sh1, sh2 := New(p, nil), New(withSeed(p, 78), nil)
	var sc Scratch
	for i := range 50 {
		if x, y := own1.Sample(a).ID, sh1.SampleWith(&sc, a).ID; x != y {
			t.Fatalf("draw %d: shared scratch %d, own %d", i, y, x)
		}
		if x, y := own2.Sample(b).ID, sh2.SampleWith(&sc, b).ID; x != y {
			t.Fatalf("draw %d (second sampler): shared scratch %d, own %d", i, y, x)
		}
	}
}

func TestSampleAllocs(t *testing.T) {
	logits := randLogits(15, 4096, 3)
	prompt := []int32{1, 2, 3, 4, 5}
	configs := map[string]func(*Params){
		"greedy":          func(p *Params) { p.Temperature = 0 },
		"greedy penalty":  func(p *Params) { p.Temperature = 0; p.RepetitionPenalty = 1.1 },
		"temperature":     func(p *Params) { p.Temperature = 0.8 },
		"top_k":           func(p *Params) { p.TopK = 50 },
		"top_p":           func(p *Params) { p.TopP = 0.9 },
		"top_k top_p":     func(p *Params) { p.TopK = 100; p.TopP = 0.5 },
		"min_p":           func(p *Params) { p.MinP = 0.05 },
		"penalties":       func(p *Params) { p.PresencePenalty = 0.5; p.FrequencyPenalty = 0.5; p.RepetitionPenalty = 1.2 },
		"bias":            func(p *Params) { p.LogitBias = map[int32]float32{1: 5, 2: -5} },
		"logprobs":        func(p *Params) { p.Logprobs = 20 },
		"everything at 0": func(p *Params) { p.TopK = 20; p.TopP = 0.9; p.MinP = 0.1; p.Logprobs = 5; p.PresencePenalty = 1 },
	}
	for name, edit := range configs {
		t.Run(name, func(t *testing.T) {
			p := withSeed(DefaultParams(), 1)
			edit(&p)
			s := New(p, prompt)
			for _, id := range []int32{7, 8, 7} {
				s.Accept(id)
			}
			s.Sample(logits) // allocates the scratch
			if a := testing.AllocsPerRun(50, func() { s.Sample(logits) }); a != 0 {
				t.Fatalf("Sample allocates %v times per call in steady state", a)
			}
		})
	}
}

func TestSuppress(t *testing.T) {
	logits := []float32{0, 5, 1, 4}
	for _, p := range []Params{Greedy(), DefaultParams()} {
		s := New(p, nil)
		s.Suppress([]int32{1, 3})
		for range 200 {
			if id := s.Sample(logits).ID; id == 1 || id == 3 {
				t.Fatalf("temperature %v: drew suppressed token %d", p.Temperature, id)
			}
		}
		s.Suppress(nil)
		if p.Temperature == 0 && s.Sample(logits).ID != 1 {
			t.Fatal("lifting the suppression should restore the argmax")
		}
	}
}

// SkipScores draws the same tokens (greedy and seeded) and returns only
// their IDs.
func TestSkipScores(t *testing.T) {
	for _, p := range []Params{withSeed(DefaultParams(), 9), {Temperature: 0, Logprobs: 3}} {
		scored, unscored := New(p, nil), New(p, nil)
		unscored.SkipScores()
		for i := range 100 {
			logits := randLogits(uint64(i), 256, 2)
			a, b := scored.Sample(logits), unscored.Sample(logits)
			if a.ID != b.ID {
				t.Fatalf("step %d: token %d scored, %d unscored", i, a.ID, b.ID)
			}
			if a.Logprob >= 0 || b.Logprob != 0 || b.Rank != 0 || len(b.Top) != 0 {
				t.Fatalf("step %d: scored %+v, unscored %+v", i, a, b)
			}
		}
	}
}

// Allow restricts draws to the mask's tokens, greedy and sampled alike,
// leaves the caller's logits alone, and is ignored when it allows nothing.
func TestAllow(t *testing.T) {
	logits := make([]float32, 130)
	for i := range logits {
		logits[i] = float32(i % 7)
	}
	orig := append([]float32(nil), logits...)
	mask := make([]uint64, 3)
	for _, id := range []int{3, 65, 69} {
		mask[id/64] |= 1 << (id % 64)
	}
	for _, p := range []Params{Greedy(), withSeed(DefaultParams(), 9)} {
		s := New(p, nil)
		s.Allow(mask)
		for range 50 {
			if id := s.Sample(logits).ID; id != 3 && id != 65 && id != 69 {
				t.Fatalf("drew %d outside the mask", id)
			}
		}
		s.Allow(make([]uint64, 3))
		s.Sample(logits)
	}
	g := New(Greedy(), nil)
	g.Allow(mask)
	if id := g.Sample(logits).ID; id != 69 { // 69 % 7 = 6 is the largest allowed logit
		t.Fatalf("greedy under the mask drew %d, want 69", id)
	}
	for i := range logits {
		if logits[i] != orig[i] {
			t.Fatal("Allow changed the caller's logits")
		}
	}
}
