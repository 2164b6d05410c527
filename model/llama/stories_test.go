package llama

import (
	"fmt"
	"math"
	"testing"

	"pagoda/internal/testmodel"
	"pagoda/kernels"
	"pagoda/model"
)

// refStats summarises a comparison with a llama.cpp reference.
type refStats struct {
	flips  int     // near-tie steps where our greedy choice differed
	chosen float64 // largest |logprob error| of the reference's chosen tokens
	top    float64 // largest |logprob error| over the reference's top-5
}

// runRef decodes one reference case greedily and compares every step.
// Where our argmax differs from llama.cpp's choice, the two candidates must
// be a near-tie in the reference (log-probabilities within tieTol); the
// reference token is then forced so the comparison goes on, and the step
// counts as a flip. Any other difference fails the test.
func runRef(t *testing.T, m *Model, kv *model.KVCache, alloc *blockAlloc, c refCase, steps int, tieTol float64, st *refStats) {
	t.Helper()
	d := newDecoder(m, kv, alloc, c.PromptTokens)
	for i := range steps {
		ref := c.Steps[i]
		lp := d.next(t)
		if id := argmax(lp); id != ref.ID {
			refLP, ok := refLogprob(ref, id)
			if !ok || ref.Logprob-refLP > tieTol {
				t.Fatalf("prompt %q step %d: id %d, llama.cpp %d (reference logprobs %v)", c.Prompt, i, id, ref.ID, ref.Top)
			}
			t.Logf("prompt %q step %d: near-tie %d vs llama.cpp %d (reference gap %.1e), following llama.cpp", c.Prompt, i, id, ref.ID, ref.Logprob-refLP)
			st.flips++
		}
		st.chosen = math.Max(st.chosen, math.Abs(lp[ref.ID]-ref.Logprob))
		for _, p := range ref.Top {
			st.top = math.Max(st.top, math.Abs(lp[int(p[0])]-p[1]))
		}
		d.push(ref.ID)
	}
}

// refLogprob finds id in a step's top-5.
func refLogprob(s refStep, id int32) (float64, bool) {
	for _, p := range s.Top {
		if int32(p[0]) == id {
			return p[1], true
		}
	}
	return 0, false
}

// TestStories260K compares greedy decoding of stories260K with the shared
// reference, made by a llama-server build (10587) on another machine with
// flash attention and an F16 cache, for two block sizes and three KV types.
//
// pagoda reproduces llama.cpp's flash-attention decode path of the AVX-512
// build bit for bit (TestStories260KFlashExact), and that build departs from
// the shared reference at one near-tie: prompt "The sun was hot and", step
// 57, where the reference's two best tokens are 2.9e-5 apart in
// log-probability; llama.cpp here picks 269, the reference 426. So F16 (and
// F32, which llama.cpp's flash attention casts to F16) allows that one flip;
// log-probabilities agree to a few 1e-3 (the reference build summed in
// other orders). BF16 caches are less precise than the reference and may
// break its near-ties the other way.
func TestStories260K(t *testing.T) {
	ref := readRef(t, testmodel.StoriesReference(t))
	m := openModel(t, testmodel.Stories(t), Options{Threads: 2, Attention: kernels.AttnFlash, ExactArithmetic: true})
	cases := []struct {
		bs             int
		typ            model.KVType
		maxFlips       int
		tieTol         float64
		chosenTol, tol float64
	}{
		{16, model.KVF16, 1, 1e-4, 3e-3, 1e-2},
		{4, model.KVF16, 1, 1e-4, 3e-3, 1e-2},
		{16, model.KVF32, 1, 1e-4, 3e-3, 1e-2},
		{4, model.KVF32, 1, 1e-4, 3e-3, 1e-2},
		{16, model.KVBF16, 8, 5e-2, 5e-2, 2e-1},
	}
	if raceEnabled {
		cases, ref.Cases = cases[:1], ref.Cases[:2]
	}
	for _, tc := range cases {
		t.Run(fmt.Sprintf("bs%d/%v", tc.bs, tc.typ), func(t *testing.T) {
			blocks := len(ref.Cases) * ((20 + 64 + tc.bs - 1) / tc.bs)
			kv, err := m.NewKVCache(blocks, tc.bs, tc.typ)
			if err != nil {
				t.Fatal(err)
			}
			alloc := &blockAlloc{total: int32(blocks)}
			var st refStats
			for _, c := range ref.Cases {
				runRef(t, m, kv, alloc, c, len(c.Steps), tc.tieTol, &st)
			}
			t.Logf("%d near-tie flips; max |logprob error|: chosen %.1e, top-5 %.1e", st.flips, st.chosen, st.top)
			if st.flips > tc.maxFlips || st.chosen > tc.chosenTol || st.top > tc.tol {
				t.Fatalf("want ≤ %d flips, chosen error ≤ %.0e, top-5 error ≤ %.0e", tc.maxFlips, tc.chosenTol, tc.tol)
			}
		})
	}
}

// TestStories260KFlashExact reproduces llama.cpp's flash-attention decode
// path exactly: the reference (testdata/stories260k-flash.json, made by
// testdata/make_stories_flash_reference.py with llama-cpp-python 0.3.36 on
// the AVX-512 machine, n_batch 1, F16 cache) is matched id for id without
// teacher forcing, log-probabilities within 1e-4, for two block sizes and
// both the F16 and the F32 cache (llama.cpp casts an F32 cache to F16 for
// flash attention, so both give the same tokens). stories260K's F32
// weights, 8-wide heads and 172-wide FFN exercise the float dot products'
// tails, which SmolLM2 does not.
func TestStories260KFlashExact(t *testing.T) {
	ref := readRef(t, storiesFlashRefPath)
	m := openModel(t, testmodel.Stories(t), Options{Threads: 2, Attention: kernels.AttnFlash, ExactArithmetic: true})
	cases := []struct {
		bs  int
		typ model.KVType
	}{{16, model.KVF16}, {4, model.KVF16}, {16, model.KVF32}}
	if raceEnabled {
		cases, ref.Cases = cases[:1], ref.Cases[:2]
	}
	for _, tc := range cases {
		t.Run(fmt.Sprintf("bs%d/%v", tc.bs, tc.typ), func(t *testing.T) {
			blocks := len(ref.Cases) * ((20 + 64 + tc.bs - 1) / tc.bs)
			kv, err := m.NewKVCache(blocks, tc.bs, tc.typ)
			if err != nil {
				t.Fatal(err)
			}
			chosen, top := runExact(t, m, kv, &blockAlloc{total: int32(blocks)}, ref.Cases, 64)
			t.Logf("max |logprob error|: chosen %.1e, top-5 %.1e", chosen, top)
		})
	}
}
