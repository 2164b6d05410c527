package sample

import (
	"slices"
	"testing"

	"pagoda/internal/refmath"
)

// TestPenalties checks the processed logits against values computed by
// hand. Logits [2, -1, 0.5, 3, -2, 1]; prompt {0, 4}; output 1, 1, 3.
func TestPenalties(t *testing.T) {
	logits := []float32{2, -1, 0.5, 3, -2, 1}
	prompt := []int32{0, 4}
	output := []int32{1, 1, 3}
	tests := []struct {
		name string
		edit func(*Params)
		want []float32
	}{
		{"off", func(p *Params) {}, []float32{2, -1, 0.5, 3, -2, 1}},
		// Prompt and output tokens: positive ÷ 2, others × 2.
		{"repetition", func(p *Params) { p.RepetitionPenalty = 2 }, []float32{1, -2, 0.5, 1.5, -4, 1}},
		{"repetition below 1 rewards", func(p *Params) { p.RepetitionPenalty = 0.5 }, []float32{4, -0.5, 0.5, 6, -1, 1}},
		// Output only: count × 0.5.
		{"frequency", func(p *Params) { p.FrequencyPenalty = 0.5 }, []float32{2, -2, 0.5, 2.5, -2, 1}},
		// Output only, once per token.
		{"presence", func(p *Params) { p.PresencePenalty = 0.25 }, []float32{2, -1.25, 0.5, 2.75, -2, 1}},
		{"negative presence", func(p *Params) { p.PresencePenalty = -1 }, []float32{2, 0, 0.5, 4, -2, 1}},
		// id 1: −1·2 − 0.5·2 − 0.25 = −3.25; id 3: 3/2 − 0.5 − 0.25 = 0.75.
		{"all three", func(p *Params) {
			p.RepetitionPenalty, p.FrequencyPenalty, p.PresencePenalty = 2, 0.5, 0.25
		}, []float32{1, -3.25, 0.5, 0.75, -4, 1}},
		// Bias first: id 3 becomes 2, then ÷ 2 − 0.5 − 0.25 = 0.25; id 2
		// becomes 2 (not penalized); id 0 becomes −1, then × 2 = −2.
		{"bias before penalties", func(p *Params) {
			p.RepetitionPenalty, p.FrequencyPenalty, p.PresencePenalty = 2, 0.5, 0.25
			p.LogitBias = map[int32]float32{3: -1, 2: 1.5, 0: -3}
		}, []float32{-2, -3.25, 2, 0.25, -4, 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := DefaultParams()
			tt.edit(&p)
			s := New(p, prompt)
			for _, id := range output {
				s.Accept(id)
			}
			var sc Scratch
			got := s.process(&sc, logits)
			for i := range got {
				if !closeTo(float64(got[i]), float64(tt.want[i]), 1e-6) {
					t.Fatalf("processed logits %v, want %v", got, tt.want)
				}
			}
		})
	}
}

func TestHistory(t *testing.T) {
	h := newHistory([]int32{5, 5, 2}, true)
	for _, id := range []int32{2, 9, 9, 9} {
		h.add(id)
	}
	want := []histEntry{{5, 0, true}, {2, 1, true}, {9, 3, false}}
	if !slices.Equal(h.entries, want) {
		t.Fatalf("entries %v, want %v", h.entries, want)
	}
	for id, i := range h.index {
		if h.entries[i].id != id {
			t.Fatalf("index[%d] = %d points at id %d", id, i, h.entries[i].id)
		}
	}
	if h.count(9) != 3 || h.count(5) != 0 || h.count(1) != 0 {
		t.Fatalf("counts 9:%d 5:%d 1:%d, want 3 0 0", h.count(9), h.count(5), h.count(1))
	}
	if noPrompt := newHistory([]int32{1, 2}, false); len(noPrompt.entries) != 0 {
		t.Fatalf("history without repetition penalty kept prompt tokens: %v", noPrompt.entries)
	}
}

// TestPenaltyOffKeepsNoHistory: without penalties Accept costs nothing.
func TestPenaltyOffKeepsNoHistory(t *testing.T) {
	p := DefaultParams()
	p.LogitBias = map[int32]float32{1: 2}
	s := New(p, []int32{1, 2, 3})
	s.Accept(4)
	if s.hist != nil {
		t.Fatal("sampler without penalties tracks a history")
	}
	p = DefaultParams()
	p.PresencePenalty = 0.5
	s = New(p, []int32{1, 2, 3})
	if len(s.hist.entries) != 0 {
		t.Fatalf("presence penalty alone keeps prompt tokens: %v", s.hist.entries)
	}
}

func TestLogitBias(t *testing.T) {
	logits := []float32{1, 1.2, 0.9}
	t.Run("+100 wins greedy", func(t *testing.T) {
		r := New(withBias(Greedy(), map[int32]float32{2: 100}), nil).Sample(logits)
		if r.ID != 2 {
			t.Fatalf("Sample = %d, want 2", r.ID)
		}
		if want := refmath.LogSoftmax(logits)[2]; !closeTo(float64(r.Logprob), want, 1e-6) {
			t.Fatalf("Logprob %v, want the raw %v (bias must not change it)", r.Logprob, want)
		}
	})
	t.Run("-100 never sampled", func(t *testing.T) {
		p := withBias(withSeed(DefaultParams(), 9), map[int32]float32{1: -100})
		if got := supportOf(draws(t, New(p, nil), logits, 3000)); !slices.Equal(got, []int32{0, 2}) {
			t.Fatalf("sampled support %v, want [0 2]", got)
		}
	})
	t.Run("shifts the distribution", func(t *testing.T) {
		// Bias ln 3 on token 0 of two equal logits: probabilities 3/4, 1/4.
		p := withBias(withSeed(DefaultParams(), 10), map[int32]float32{0: 1.0986123})
		got := draws(t, New(p, nil), []float32{0, 0}, 20000)
		if f := float64(got[0]) / 20000; f < 0.735 || f > 0.765 {
			t.Fatalf("frequency of the biased token %.4f, want 0.75", f)
		}
	})
}
