package sample

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"pagoda/internal/refmath"
)

// withSeed returns p with Seed set.
func withSeed(p Params, seed int64) Params {
	p.Seed = &seed
	return p
}

// randLogits returns n logits drawn from N(0, scale²) with a fixed seed,
// like the spread of a language model's logits.
func randLogits(seed uint64, n int, scale float64) []float32 {
	rng := rand.New(rand.NewPCG(seed, 1))
	l := make([]float32, n)
	for i := range l {
		l[i] = float32(rng.NormFloat64() * scale)
	}
	return l
}

// softmaxT is the float64 reference softmax of l / t.
func softmaxT(l []float32, t float64) []float64 {
	ls := make([]float32, len(l))
	for i, v := range l {
		ls[i] = float32(float64(v) / t)
	}
	lp := refmath.LogSoftmax(ls)
	for i := range lp {
		lp[i] = math.Exp(lp[i])
	}
	return lp
}

// logitsOf returns logits whose softmax is probs (log probs).
func logitsOf(probs ...float64) []float32 {
	l := make([]float32, len(probs))
	for i, p := range probs {
		l[i] = float32(math.Log(p))
	}
	return l
}

// draws samples n tokens (without Accept) and returns how often each id came.
func draws(t *testing.T, s *Sampler, logits []float32, n int) map[int32]int {
	t.Helper()
	got := map[int32]int{}
	for range n {
		r := s.Sample(logits)
		if r.ID < 0 || int(r.ID) >= len(logits) {
			t.Fatalf("Sample returned id %d outside [0, %d)", r.ID, len(logits))
		}
		got[r.ID]++
	}
	return got
}

// support returns the sorted ids of a frequency map.
func supportOf(m map[int32]int) []int32 {
	ids := make([]int32, 0, len(m))
	for id := range m {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

func closeTo(got, want, tol float64) bool {
	return math.Abs(got-want) <= tol*math.Max(1, math.Abs(want))
}
