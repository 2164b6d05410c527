package engine

import (
	"slices"
	"testing"

	"pagoda/sched"
)

// hybridModel writes a synthetic Gemma 3 (six layers: five with a
// 12-position sliding window, one global) with the real Gemma 3 vocabulary:
// its KV cache has two kinds of groups (model.LayoutOf).
func hybridModel(t *testing.T) string {
	return writeSynthFamily(t, "gemma3", "128,256,6,4,2,512,64", 12, "")
}

// TestHybridKVCacheGroups: with KV cache groups (full attention and sliding
// window sharing one block pool), requests batched through a small pool —
// prefix-cache hits, chunked prefill, forks (two samples), preemption by
// recompute and by swap — give exactly the tokens each gives alone, and
// every block comes back (runAll checks the invariants of both groups).
func TestHybridKVCacheGroups(t *testing.T) {
	heavy(t)
	path := hybridModel(t)
	prefix := make([]int32, 37)
	for i := range prefix {
		prefix[i] = int32(1000 + 7*i)
	}
	var reqs []Request
	for i := range 10 {
		prompt := slices.Clone(prefix)
		if i%3 == 0 {
			prompt = prompt[:5]
		}
		for j := range 3 + 4*(i%4) {
			prompt = append(prompt, int32(2000+31*i+j))
		}
		p := GreedyParams(20 + i%3*7)
		if i%4 == 1 {
			seed := int64(i)
			p = DefaultSamplingParams()
			p.Temperature, p.TopP, p.Seed, p.MaxTokens, p.N = 0.8, 0.9, &seed, 24, 2
		}
		reqs = append(reqs, Request{PromptTokens: prompt, Params: p})
	}
	small := func(c *Config) {
		c.BlockSize, c.MaxNumBatchedTokens, c.MaxNumSeqs, c.MaxModelLen = 4, 16, 8, 128
		c.EnablePrefixCaching = true
	}
	alone := newTestEngine(t, path, small)
	var want [][][]int32
	for _, r := range reqs {
		o := runAll(t, alone, []Request{r})[0]
		var ids [][]int32
		for _, c := range o.Outputs {
			ids = append(ids, c.TokenIDs)
		}
		want = append(want, ids)
	}
	for _, tc := range []struct {
		name    string
		preempt sched.PreemptionMode
	}{{"recompute", sched.PreemptRecompute}, {"swap", sched.PreemptSwap}} {
		t.Run(tc.name, func(t *testing.T) {
			e := newTestEngine(t, path, func(c *Config) {
				small(c)
				c.NumBlocksOverride, c.Preemption = 120, tc.preempt
				c.SwapSpace = 1 << 20
			})
			if got := e.blocks.NumGroups(); got != 6 {
				t.Fatalf("%d KV cache groups, want 6 (1 full, 5 window, a layer each)", got)
			}
			outs := runAll(t, e, reqs)
			for i, o := range outs {
				for j, c := range o.Outputs {
					if !slices.Equal(c.TokenIDs, want[i][j]) {
						t.Fatalf("request %d sample %d: %v, alone %v", i, j, c.TokenIDs, want[i][j])
					}
				}
			}
			st := e.Stats()
			if st.Preemptions == 0 || st.Prefix.HitTokens == 0 || (tc.preempt == sched.PreemptSwap && st.SwapOuts == 0) {
				t.Fatalf("the workload did not preempt, hit the prefix cache or swap: %+v", st)
			}
			t.Logf("preemptions %d, swap-outs %d, prefix hit tokens %d", st.Preemptions, st.SwapOuts, st.Prefix.HitTokens)
		})
	}
}

// TestHybridKVCacheMemory: a long sequence holds O(window) blocks in its
// sliding-window group: the peak number of blocks in use stays within the
// engine's own bound (KVCacheSizing.SeqBlocks) and far below what full
// attention on every layer would hold.
func TestHybridKVCacheMemory(t *testing.T) {
	e := newTestEngine(t, hybridModel(t), func(c *Config) {
		c.BlockSize, c.MaxNumBatchedTokens, c.MaxNumSeqs, c.MaxModelLen = 4, 16, 8, 512
	})
	prompt := make([]int32, 300)
	for i := range prompt {
		prompt[i] = int32(500 + i)
	}
	if _, err := e.AddRequest(Request{PromptTokens: prompt, Params: GreedyParams(100)}); err != nil {
		t.Fatal(err)
	}
	peak := 0
	for e.HasUnfinished() {
		if err := e.Step(); err != nil {
			t.Fatal(err)
		}
		dev := e.blocks.Device()
		peak = max(peak, dev.NumBlocks()-dev.NumFree())
	}
	checkNoLeaks(t, e)
	lay := e.ModelConfig().KVLayout()
	tokens := len(prompt) + 100
	full := (tokens + 3) / 4 // one group's blocks for the whole context
	// The full-attention group holds every block; each window group its
	// window (12) plus a chunk (16) plus partial blocks.
	bound := full + (lay.NumGroups()-1)*((12-1+16+4+3)/4)
	if peak > bound || peak > e.Config().KVCache.SeqBlocks {
		t.Fatalf("peak %d blocks in use; bound %d, sizing %d", peak, bound, e.Config().KVCache.SeqBlocks)
	}
	fullBytes := int64(full*len(lay.Group)) * e.Config().KVCache.BlockBytes / int64(lay.Tensors)
	if int64(peak)*e.Config().KVCache.BlockBytes*2 > fullBytes {
		t.Fatalf("peak %d blocks is not far below full attention's %d bytes", peak, fullBytes)
	}
	t.Logf("%d layers in %d groups: peak %d blocks (%d bytes) for %d tokens; full attention everywhere: %d bytes",
		len(lay.Group), lay.NumGroups(), peak, int64(peak)*e.Config().KVCache.BlockBytes, tokens, fullBytes)
}
