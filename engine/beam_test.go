package engine

import (
	"math"
	"slices"
	"testing"

	"pagoda/internal/testmodel"
	"pagoda/model"
	"pagoda/sample"
)

// denseLogprobs runs tokens through the model in one fresh prefill and
// returns the log-softmax of the last position's logits.
func denseLogprobs(t *testing.T, m model.Model, tokens []int32) []float32 {
	t.Helper()
	const bs = 16
	nb := (len(tokens) + bs - 1) / bs
	kv, err := m.NewKVCache(nb, bs, model.KVF32)
	if err != nil {
		t.Fatal(err)
	}
	b := &model.Batch{Tokens: tokens, QueryStart: []int32{0, int32(len(tokens))},
		ContextLens: []int32{int32(len(tokens))}, LogitIndices: []int32{int32(len(tokens) - 1)}}
	table := make([]int32, nb)
	for i := range table {
		table[i] = int32(i)
	}
	b.BlockTables = [][]int32{table}
	for i := range tokens {
		b.Positions = append(b.Positions, int32(i))
		b.SlotMapping = append(b.SlotMapping, int32(i))
	}
	logits := make([]float32, m.Config().VocabSize)
	if err := m.Forward(b, kv, logits); err != nil {
		t.Fatal(err)
	}
	sample.LogSoftmax(logits, logits)
	return logits
}

type naiveBeam struct {
	tokens []int32 // output tokens
	cum    float64
	finish string
}

// naiveBeamSearch is the reference: every hypothesis recomputed densely
// from scratch each step, no cache sharing, same selection rules.
func naiveBeamSearch(t *testing.T, m model.Model, prompt []int32, width, maxTokens int, eos int32, lenPenalty float64) []naiveBeam {
	beams := []naiveBeam{{}}
	var hyps []naiveBeam
	score := func(h naiveBeam) float64 {
		n := len(prompt) + len(h.tokens)
		if h.finish == FinishStop {
			n--
		}
		return h.cum / math.Pow(float64(n), lenPenalty)
	}
	for len(beams) > 0 {
		type cand struct {
			parent int
			id     int32
			cum    float64
		}
		var cands []cand
		for bi, b := range beams {
			lp := denseLogprobs(t, m, slices.Concat(prompt, b.tokens))
			for _, tl := range sample.TopLogprobs(nil, lp, 2*width) {
				cands = append(cands, cand{bi, tl.ID, b.cum + float64(tl.Logprob)})
			}
		}
		slices.SortStableFunc(cands, func(x, y cand) int {
			switch {
			case x.cum > y.cum:
				return -1
			case x.cum < y.cum:
				return 1
			}
			return 0
		})
		var next []naiveBeam
		for rank, c := range cands {
			toks := slices.Concat(beams[c.parent].tokens, []int32{c.id})
			if c.id == eos {
				if rank < width {
					hyps = append(hyps, naiveBeam{toks, c.cum, FinishStop})
				}
				continue
			}
			next = append(next, naiveBeam{toks, c.cum, ""})
			if len(next) == width {
				break
			}
		}
		beams = beams[:0]
		for _, b := range next {
			if len(b.tokens) >= maxTokens {
				b.finish = FinishLength
				hyps = append(hyps, b)
			} else {
				beams = append(beams, b)
			}
		}
		if len(hyps) >= width && len(beams) > 0 {
			scores := make([]float64, len(hyps))
			for i, h := range hyps {
				scores[i] = score(h)
			}
			slices.Sort(scores)
			best := math.Inf(-1)
			for _, b := range beams {
				best = max(best, score(b))
			}
			if best <= scores[len(scores)-width] {
				break
			}
		}
	}
	slices.SortStableFunc(hyps, func(a, b naiveBeam) int {
		sa, sb := score(a), score(b)
		switch {
		case sa > sb:
			return -1
		case sa < sb:
			return 1
		}
		return 0
	})
	return hyps
}

func TestBeamSearchMatchesNaive(t *testing.T) {
	e := newTestEngine(t, testmodel.Stories(t), func(c *Config) { c.BlockSize = 4 })
	prompt := []int32{1, 403, 407, 261, 378}
	for _, tc := range []struct{ width, n, maxTokens int }{{2, 2, 6}, {4, 3, 5}, {3, 1, 1}} {
		p := GreedyParams(tc.maxTokens)
		p.UseBeamSearch, p.BestOf, p.N = true, tc.width, tc.n
		got := runAll(t, e, []Request{{PromptTokens: prompt, Params: p}})[0]
		want := naiveBeamSearch(t, e.model, prompt, tc.width, tc.maxTokens, e.tok.EOS(), 1)
		if len(got.Outputs) != tc.n {
			t.Fatalf("width %d: %d outputs, want %d", tc.width, len(got.Outputs), tc.n)
		}
		for i, o := range got.Outputs {
			if !slices.Equal(o.TokenIDs, want[i].tokens) || math.Abs(o.CumulativeLogprob-want[i].cum) > 1e-4 {
				t.Errorf("width %d beam %d: %v (%.5f), naive %v (%.5f)", tc.width, i, o.TokenIDs, o.CumulativeLogprob, want[i].tokens, want[i].cum)
			}
			// The reported cumulative logprob is the sum of the tokens' logprobs.
			sum := 0.0
			for j, id := range o.TokenIDs {
				sum += float64(denseLogprobs(t, e.model, slices.Concat(prompt, o.TokenIDs[:j]))[id])
			}
			if math.Abs(sum-o.CumulativeLogprob) > 1e-4 {
				t.Errorf("beam %d: cumulative logprob %.5f, recomputed %.5f", i, o.CumulativeLogprob, sum)
			}
			if i > 0 && o.CumulativeLogprob > got.Outputs[i-1].CumulativeLogprob+1e-9 && tc.maxTokens > 0 {
				t.Errorf("beams out of score order: %v", got.Outputs)
			}
		}
		if tc.maxTokens == 1 {
			// Brute force over the whole vocabulary for one step.
			lp := denseLogprobs(t, e.model, prompt)
			best := sample.TopLogprobs(nil, lp, tc.n)
			if got.Outputs[0].TokenIDs[0] != best[0].ID {
				t.Errorf("one-step beam %v, brute force best %v", got.Outputs[0].TokenIDs, best[0])
			}
		}
	}
}
