package kernels

import (
	"fmt"
	"testing"
)

// BenchmarkAttentionSteps times Pool.Attention on SmolLM2-135M's shape (9
// heads over 3 KV heads of 64, F16 cache) for a 256-token prefill, a
// prefill chunk after 512 tokens of context, and a 32-sequence decode;
// tiles×4 lays the work out for four times the real tiles (a plan's
// padding), the extra tasks returning at once; AttnMatMul and AttnTiled
// (mode 2) on every accelerated implementation the machine has.
func BenchmarkAttentionSteps(b *testing.B) {
	for _, c := range []struct {
		name        string
		ctx, newTok []int
	}{
		{"prefill256", []int{256}, []int{256}},
		{"chunk128at512", []int{640}, []int{128}},
		{"decode32x300", rep(32, 300), rep(32, 1)},
	} {
		type variant struct {
			mode  AttnMode
			tiles int // ×real tiles laid out (1: exact, as eager)
			k     *impl
		}
		vs := []variant{{AttnFlash, 1, def}, {AttnMatMul, 4, def}}
		for _, k := range implementations() {
			if k != generic || k == def {
				vs = append(vs, variant{AttnMatMul, 1, k}, variant{AttnTiled, 1, k})
			}
		}
		for _, v := range vs {
			mode := v.mode
			b.Run(fmt.Sprintf("%s/mode%d/tiles×%d/%s", c.name, mode, v.tiles, v.k.name), func(b *testing.B) {
				a, kv := sameAttnCase(newRand(9), KVF16, 64, 9, 3, 16, c.ctx, c.newTok)
				a.Mode = mode
				a.Tiles = v.tiles * AttentionTiles(a.QueryStart)
				p := newPool(0, v.k)
				defer p.Close()
				p.Attention(a, kv)
				b.ResetTimer()
				for range b.N {
					p.Attention(a, kv)
				}
			})
		}
	}
}

func rep(n, v int) []int {
	s := make([]int, n)
	for i := range s {
		s[i] = v
	}
	return s
}

// BenchmarkAttentionDecodeLayers times AttnTiled's decode of 32 sequences
// at context 160 in the TinyLlama shape (32 heads, 4 KV heads, head size
// 64) over 22 layers' caches in turn (120 MiB of F16 rows, more than any
// cache holds), as a decode step reads them: one op is the 22 layers.
func BenchmarkAttentionDecodeLayers(b *testing.B) {
	const layers = 22
	r := newRand(3)
	var as []*Attention
	var kvs []*KVLayer
	for range layers {
		a, kv := sameAttnCase(r, KVF16, 64, 32, 4, 16, rep(32, 160), rep(32, 1))
		a.Mode = AttnTiled
		a.Tiles = AttentionTiles(a.QueryStart)
		as, kvs = append(as, a), append(kvs, kv)
	}
	p := newPool(0, def)
	defer p.Close()
	b.ResetTimer()
	for range b.N {
		for l := range layers {
			p.Attention(as[l], kvs[l])
		}
	}
}
