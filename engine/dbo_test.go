package engine

import (
	"fmt"
	"math"
	"testing"

	"pagoda/internal/testmodel"
)

// Dual-batch overlap through the whole engine in one process: with low
// thresholds the scheduler splits most steps (prompts sharing a prefix
// among them, with prefix caching on), and the outputs equal DBO off bit
// for bit. The MPI test (TestTensorParallelDBO) does the same over ranks.
func TestDualBatchOverlapEngine(t *testing.T) {
	shared := []int32{1, 403, 407, 261, 378, 432, 383, 286, 261, 320, 281, 300, 262, 409, 312, 415, 271}
	prompts := [][]int32{shared, {1, 320, 281}, append(shared[:16:16], 422, 426), {1, 262, 415, 271, 422, 426, 359}}
	run := func(on bool) ([]RequestOutput, int, int) {
		steps, split := 0, 0
		e := newTestEngine(t, testmodel.Stories(t), func(c *Config) {
			c.EnforceEager, c.BlockSize = true, 4
			c.DBO.Enable, c.DBO.DecodeTokenThreshold, c.DBO.PrefillTokenThreshold = on, 4, 8
		})
		e.OnStep(func(s StepInfo) {
			steps++
			if s.MicroBatches == 2 {
				split++
			}
		})
		var reqs []Request
		for _, p := range prompts {
			params := GreedyParams(12)
			params.ReturnLogprobs, params.Logprobs, params.IgnoreEOS = true, 3, true
			reqs = append(reqs, Request{PromptTokens: p, Params: params})
		}
		return runAll(t, e, reqs), steps, split
	}
	off, _, none := run(false)
	on, steps, split := run(true)
	if none != 0 || split == 0 {
		t.Fatalf("DBO off split %d steps, on %d of %d", none, split, steps)
	}
	for i := range off {
		a, b := off[i].Outputs[0], on[i].Outputs[0]
		if fmt.Sprint(a.TokenIDs) != fmt.Sprint(b.TokenIDs) {
			t.Fatalf("prompt %d: DBO on %v, off %v", i, b.TokenIDs, a.TokenIDs)
		}
		for j := range a.Logprobs {
			for k, top := range a.Logprobs[j].Top {
				if o := b.Logprobs[j].Top[k]; o.ID != top.ID || math.Float32bits(o.Logprob) != math.Float32bits(top.Logprob) {
					t.Fatalf("prompt %d token %d: top %d differs with DBO", i, j, k)
				}
			}
		}
	}
	t.Logf("%d prompts × 12 tokens bit-identical with DBO on (%d of %d steps split) and off", len(prompts), split, steps)
}
