package llama

import (
	"math"
	"testing"

	"pagoda/kernels"
	"pagoda/model"
)

// TestSmolLM2 compares SmolLM2-135M-Instruct Q4_1 with llama.cpp's greedy
// reference, made by llama-cpp-python with its defaults: F16 cache,
// flash attention off (our AttnMatMul).
//
// Exact greedy identity is not attainable for this model: llama.cpp is not
// batch invariant (prompt scores use tinyBLAS's summation order, decode
// steps ggml_vec_dot's), and its massive activations (~2e4 from layer 11)
// amplify a single half-precision rounding flip of one attention
// probability into log-probability changes of 0.1–0.5. llama.cpp itself,
// fed the same prompts one token at a time, picks different ids in 3 of
// the 10 cases (at reference gaps of 0.03–0.07), and with flash attention
// in 6 of 10. So the test checks what is robust:
//   - the prompt pass of the first case reproduces llama.cpp's
//     log-probabilities to 1e-4 (same rounding, bit for bit in practice);
//   - every case's first token (the prompt pass) is identical;
//   - decoding is teacher-forced on llama.cpp's tokens: our choice differs
//     only at near-ties (reference gap ≤ 0.35), at most maxFlips times.
func TestSmolLM2(t *testing.T) {
	ref := readRef(t, smolRefPath)
	m := openModel(t, smolPath(t), Options{Attention: kernels.AttnMatMul})
	cases, steps, maxFlips := ref.Cases, 48, 20
	if raceEnabled {
		cases, steps, maxFlips = cases[:2], 6, 2
	}
	kv, err := m.NewKVCache(len(cases)*((64+48+15)/16), 16, model.KVF16)
	if err != nil {
		t.Fatal(err)
	}
	alloc := &blockAlloc{total: int32(kv.NumBlocks)}
	var st refStats
	for i, c := range cases {
		if i == 0 {
			d := newDecoder(m, kv, alloc, c.PromptTokens)
			lp := d.next(t)
			for _, p := range c.Steps[0].Top {
				if got := lp[int(p[0])]; math.Abs(got-p[1]) > 1e-4 {
					t.Errorf("prompt %q: logprob of %v = %.6f, llama.cpp %.6f", c.Prompt, p[0], got, p[1])
				}
			}
		}
		flips := st.flips
		runRef(t, m, kv, alloc, c, min(steps, len(c.Steps)), 0.35, &st)
		if st.flips > flips && st.firstStepFlip {
			t.Errorf("prompt %q: first token differs from llama.cpp", c.Prompt)
		}
	}
	t.Logf("%d near-tie flips over %d cases; max |logprob error|: chosen %.1e, top-5 %.1e", st.flips, len(cases), st.chosen, st.top)
	if st.flips > maxFlips {
		t.Fatalf("%d near-tie flips, want ≤ %d", st.flips, maxFlips)
	}
}
