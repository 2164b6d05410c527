package kernels

import (
	"fmt"
	"testing"
)

// BenchmarkAttentionKVTypes times AttnTiled on SmolLM2-135M's shape (9
// heads over 3 KV heads of 64, 30 layers' caches read in turn, as a step
// reads them) with an F16 and a Q8_0 cache: one long decode (memory-bound
// on the cache: 30 layers × 4,096 positions are 90 MiB of F16), eight
// decodes at 1,024 and a 128-token prefill chunk after 1,024 positions.
// GB/s counts the F16 cache's bytes for both types, so it compares
// speeds, not traffic; cpu-ns/op is the process's CPU time per op, less
// disturbed than the wall time on a shared machine (one worker: -cpu 1).
func BenchmarkAttentionKVTypes(b *testing.B) {
	const layers = 30
	for _, c := range []struct {
		name        string
		ctx, newTok []int
	}{
		{"decode1x4096", []int{4096}, []int{1}},
		{"decode8x1024", rep(8, 1024), rep(8, 1)},
		{"chunk128at1024", []int{1152}, []int{128}},
	} {
		for _, typ := range []KVType{KVF16, KVQ8_0} {
			b.Run(fmt.Sprintf("%s/%v", c.name, typ), func(b *testing.B) {
				r := newRand(5)
				var as []*Attention
				var kvs []*KVLayer
				for range layers {
					a, kv := sameAttnCase(r, typ, 64, 9, 3, 16, c.ctx, c.newTok)
					a.Mode = AttnTiled
					as, kvs = append(as, a), append(kvs, kv)
				}
				ctx := 0
				for _, n := range c.ctx {
					ctx += n
				}
				benchAttentionLayers(b, as, kvs, layers*ctx*3*64*2*2)
			})
		}
	}
}
