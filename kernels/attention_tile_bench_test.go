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
// over a model's layers' F16 caches in turn (more than any cache holds),
// as a decode step reads them: one op is every layer. SmolLM2-135M (9
// heads over 3 KV heads of 64, 30 layers) at context 320, as serving 256
// prompt and 128 generated tokens reaches; TinyLlama (32 over 4, 22
// layers) at 160. GB/s is the cache rows read per second. The hot cases
// read one layer's cache (3 MiB) every time instead: the difference from
// the cold case at the same context is the time the cache misses cost.
func BenchmarkAttentionDecodeLayers(b *testing.B) {
	for _, c := range []struct {
		name                   string
		heads, kvHeads, layers int
		ctx                    int
		hot                    bool
	}{
		{"smollm2/ctx320", 9, 3, 30, 320, false},
		{"tinyllama/ctx160", 32, 4, 22, 160, false},
		{"smollm2/ctx128", 9, 3, 30, 128, false},
		{"smollm2/ctx128/hot", 9, 3, 30, 128, true},
	} {
		b.Run(c.name, func(b *testing.B) {
			r := newRand(3)
			var as []*Attention
			var kvs []*KVLayer
			for l := range c.layers {
				if c.hot && l > 0 {
					as, kvs = append(as, as[0]), append(kvs, kvs[0])
					continue
				}
				a, kv := sameAttnCase(r, KVF16, 64, c.heads, c.kvHeads, 16, rep(32, c.ctx), rep(32, 1))
				a.Mode = AttnTiled
				a.Tiles = AttentionTiles(a.QueryStart)
				as, kvs = append(as, a), append(kvs, kv)
			}
			p := newPool(0, def)
			defer p.Close()
			b.ResetTimer()
			for range b.N {
				for l := range c.layers {
					p.Attention(as[l], kvs[l])
				}
			}
			bytes := float64(c.layers * 32 * c.ctx * c.kvHeads * 64 * 2 * 2)
			b.ReportMetric(float64(b.N)*bytes/b.Elapsed().Seconds()/1e9, "GB/s")
		})
	}
}

// BenchmarkAttentionLongDecode times AttnTiled's decode of one sequence at
// a long context on Llama-3.2-1B's shape (32 heads over 8 KV heads of 64),
// four layers' caches read in turn (256 MiB of F16 at 32k, past any
// cache): inplace reads the F16 rows in place, converting as each of the
// group's four query heads reads them (tiledF16Rows = 4), blocks converts
// every block once into L1 for the four (tiledF16Rows = 0); q8_0 is a Q8_0
// cache (converted blocks). GB/s counts the F16 cache's bytes for every
// variant; cpu-ns/op is the process's CPU time per op (one op: every layer).
func BenchmarkAttentionLongDecode(b *testing.B) {
	const layers, heads, kvHeads, hd = 4, 32, 8, 64
	for _, ctx := range []int{4096, 32768} {
		for _, v := range []struct {
			name string
			typ  KVType
			rows int
		}{{"inplace", KVF16, 4}, {"blocks", KVF16, 0}, {"q8_0", KVQ8_0, 4}} {
			b.Run(fmt.Sprintf("ctx%d/%s", ctx, v.name), func(b *testing.B) {
				defer func(n int) { tiledF16Rows = n }(tiledF16Rows)
				tiledF16Rows = v.rows
				r := newRand(7)
				as, kvs := make([]*Attention, layers), make([]*KVLayer, layers)
				for l := range layers {
					as[l], kvs[l] = sameAttnCase(r, v.typ, hd, heads, kvHeads, 16, []int{ctx}, []int{1})
					as[l].Mode = AttnTiled
					as[l].Tiles = AttentionTiles(as[l].QueryStart)
				}
				benchAttentionLayers(b, as, kvs, layers*ctx*kvHeads*hd*2*2)
			})
		}
	}
}

// benchAttentionLayers times Pool.Attention over the layers' cases in turn
// (one op: every layer) and reports the process's CPU time per op
// (cpu-ns/op, less disturbed than the wall time on a shared machine) and
// f16Bytes (an F16 cache's bytes of one op) per second as GB/s.
func benchAttentionLayers(b *testing.B, as []*Attention, kvs []*KVLayer, f16Bytes int) {
	p := newPool(0, def)
	defer p.Close()
	b.ResetTimer()
	cpu := processCPU()
	for range b.N {
		for l := range as {
			p.Attention(as[l], kvs[l])
		}
	}
	b.ReportMetric(float64(processCPU()-cpu)/float64(b.N), "cpu-ns/op")
	b.ReportMetric(float64(b.N)*float64(f16Bytes)/b.Elapsed().Seconds()/1e9, "GB/s")
}
