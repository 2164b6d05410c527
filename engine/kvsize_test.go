package engine

import (
	"strings"
	"testing"

	"pagoda/model"
)

// The KV cache is sized from the model and --max-num-seqs ×
// --max-model-len (plus a quarter with prefix caching), capped at a
// quarter of the available memory, unless --kv-cache-memory or
// --num-gpu-blocks-override says; the reason names what decided.
func TestSizeKVCache(t *testing.T) {
	// SmolLM2-135M's shape: 30 layers, 3 KV heads of 64; f16, 16-token
	// blocks: 368,640 bytes a block.
	mc := model.Config{Layers: 30, KVHeads: 3, HeadDim: 64}
	const per = 368640
	const gib = int64(1) << 30
	for _, tc := range []struct {
		name       string
		seqs, len  int
		prefix     bool
		mem        int64
		override   int
		avail      int64
		wantBlocks int
		wantReason string
		wantErr    string
	}{
		{name: "demand fits", seqs: 4, len: 2048, prefix: true, avail: 16 * gib, wantBlocks: 640,
			wantReason: "--max-num-seqs 4 × --max-model-len 2048 + 25% for prefix caching"},
		{name: "no prefix caching", seqs: 4, len: 2048, avail: 16 * gib, wantBlocks: 512,
			wantReason: "--max-num-seqs 4 × --max-model-len 2048"},
		{name: "capped", seqs: 64, len: 8192, prefix: true, avail: 16 * gib, wantBlocks: int(4 * gib / per),
			wantReason: "a quarter of the available memory (4.0 GiB of 16.0 GiB); --max-num-seqs 64 × --max-model-len 8192 + 25% for prefix caching would take 14.1 GiB"},
		{name: "kv-cache-memory", seqs: 64, len: 8192, mem: 2 * gib, avail: -1, wantBlocks: int(2 * gib / per),
			wantReason: "--kv-cache-memory 2.0 GiB"},
		{name: "override", seqs: 64, len: 8192, mem: 2 * gib, override: 600, avail: -1, wantBlocks: 600,
			wantReason: "--num-gpu-blocks-override 600"},
		{name: "too small", seqs: 1, len: 8192, mem: 100 << 20, avail: -1,
			wantErr: "the KV cache (--kv-cache-memory 100.0 MiB) holds 284 blocks of 16 tokens (368640 bytes each); one sequence of --max-model-len 8192 needs 512"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := DefaultConfig("m.gguf")
			c.MaxNumSeqs, c.MaxModelLen, c.EnablePrefixCaching = tc.seqs, tc.len, tc.prefix
			c.KVCacheMemory, c.NumBlocksOverride = tc.mem, tc.override
			s, err := c.sizeKVCache(mc, func() int64 {
				if tc.avail < 0 {
					t.Fatal("available memory read although the size was given")
				}
				return tc.avail
			})
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || s.BlockBytes != per || s.NumBlocks != tc.wantBlocks || s.Reason != tc.wantReason {
				t.Fatalf("%+v, %v; want %d blocks of %d bytes for %q", s, err, tc.wantBlocks, per, tc.wantReason)
			}
		})
	}
}
