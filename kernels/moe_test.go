package kernels

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"pagoda/gguf"
)

// moeCases are TestMoE's expert sets: the types experts come in, in the
// exact arithmetic's packing and in the fast one's records.
var moeCases = []struct {
	name             string
	gate, up, down   gguf.Type
	dim, hidden      int
	fast             bool
	experts, choices int
}{
	{"Q8_0", gguf.Q8_0, gguf.Q8_0, gguf.Q8_0, 128, 192, false, 6, 2},
	{"Q8_0-fast", gguf.Q8_0, gguf.Q8_0, gguf.Q8_0, 128, 192, true, 6, 3},
	{"Q4_0-fast", gguf.Q4_0, gguf.Q4_0, gguf.Q4_0, 128, 128, true, 8, 2},
	{"K-fast", gguf.Q4_K, gguf.Q4_K, gguf.Q6_K, 256, 256, true, 5, 2},
	{"K", gguf.Q4_K, gguf.Q4_K, gguf.Q6_K, 256, 256, false, 4, 1},
	{"Q5_K-Q8_0-fast", gguf.Q5_K, gguf.Q5_K, gguf.Q8_0, 256, 256, true, 4, 4},
}

// newMoE builds n random experts of a case's types.
func newMoE(t *testing.T, r *rand.Rand, k *impl, gate, up, down gguf.Type, dim, hidden, n int, fastW bool) *MoE {
	m := &MoE{Experts: make([]Expert, n)}
	for i := range m.Experts {
		e := &m.Experts[i]
		e.Gate, _ = quantWeight(t, r, gate, hidden, dim)
		e.Up, _ = quantWeight(t, r, up, hidden, dim)
		e.Down, _ = quantWeight(t, r, down, dim, hidden)
		if fastW {
			e.Gate, e.Up, e.Down = fast(k, e.Gate), fast(k, e.Up), fast(k, e.Down)
		} else {
			e.Gate, e.Up, e.Down = pack(k, e.Gate), pack(k, e.Up), pack(k, e.Down)
		}
	}
	return m
}

// moeReference runs each token alone through its experts with the
// separate kernels (MatMulN of gate and up, the activation, MatMul of
// down, on one thread) and sums the outputs by weight in rank order,
// leaving out the choices of experts held elsewhere (negative ids).
func moeReference(k *impl, m *MoE, b *MoEBuffers, n int) []float32 {
	e0 := m.Experts[0]
	dim, hidden := e0.Gate.Cols, e0.Gate.Rows
	ref := newPool(1, k)
	defer ref.Close()
	out := make([]float32, n*dim)
	gate, up, y := make([]float32, hidden), make([]float32, hidden), make([]float32, dim)
	for t := range n {
		x := b.X[t*dim : (t+1)*dim]
		o := out[t*dim : (t+1)*dim]
		first := true
		for r := range b.K {
			if b.IDs[t*b.K+r] < 0 {
				continue
			}
			e := m.Experts[b.IDs[t*b.K+r]]
			ref.MatMulN([]MatMulOut{{gate, e.Gate}, {up, e.Up}}, x, 1)
			if e.GateBias != nil {
				Add(gate, e.GateBias)
				Add(up, e.UpBias)
			}
			k.glu(m.Act, gate, gate, up)
			ref.MatMul(y, e.Down, gate, 1)
			if e.DownBias != nil {
				Add(y, e.DownBias)
			}
			w := b.Weights[t*b.K+r]
			for i := range o {
				if first {
					o[i] = w * y[i]
				} else {
					o[i] += float32(w * y[i])
				}
			}
			first = false
		}
	}
	return out
}

// randomRoutes draws n tokens' k distinct experts among the first avail
// and their weights.
func randomRoutes(r *rand.Rand, n, k, avail int) ([]int32, []float32) {
	ids, w := make([]int32, n*k), make([]float32, n*k)
	for t := range n {
		perm := r.Perm(avail)
		for j := range k {
			ids[t*k+j] = int32(perm[j%avail])
			w[t*k+j] = float32(r.Float64())
		}
	}
	return ids, w
}

// TestMoE: Pool.MoE equals every token run alone through its experts
// with the separate kernels and summed in rank order, bit for bit (so a
// token's output does not depend on the batch), for every implementation,
// 1 to 3 threads; with random routes, every token on one expert, and most
// experts unused; the output written over the input as Forward does.
func TestMoE(t *testing.T) {
	forEachImpl(t, func(t *testing.T, k *impl) {
		r := newRand(51)
		for ci, c := range moeCases {
			m := newMoE(t, r, k, c.gate, c.up, c.down, c.dim, c.hidden, c.experts, c.fast)
			m.Act = GLU(ci % 2)
			for _, n := range fusedTokens() {
				x := randVec(r, n*c.dim, 1)
				routes := map[string]int{"random": c.experts, "one expert": 1, "two experts": min(2, c.experts),
					"some held elsewhere": c.experts}
				for name, avail := range routes {
					kc := min(c.choices, avail)
					ids, w := randomRoutes(r, n, kc, avail)
					switch name {
					case "one expert", "two experts":
						// The last experts, so that the first ones are unused.
						for i := range ids {
							ids[i] = int32(c.experts-avail) + ids[i]
						}
					case "some held elsewhere": // expert parallelism: a third of the choices another rank's
						for i := range ids {
							if ids[i]%3 == 1 || i%7 == 0 {
								ids[i] = -1
							}
						}
					}
					b := &MoEBuffers{Dst: nanVec(n * c.dim), X: x, IDs: ids, Weights: w, K: kc}
					want := moeReference(k, m, b, n)
					for _, threads := range fusedThreads() {
						what := fmt.Sprintf("%s/%s/n=%d/threads=%d", c.name, name, n, threads)
						p := newPool(threads, k)
						p.MoE(m, b, n)
						sameBits(t, what, b.Dst, want)
						in := append([]float32(nil), x...)
						b2 := &MoEBuffers{Dst: in, X: in, IDs: ids, Weights: w, K: kc}
						p.MoE(m, b2, n) // reused scratch, output over the input
						p.Close()
						sameBits(t, what+" (in place)", b2.Dst, want)
						b.Dst = nanVec(n * c.dim)
					}
				}
			}
		}
	})
}

// BenchmarkMoE: one layer of experts at Qwen3-30B-A3B's width (2048 →
// 768, 8 of 32 experts here rather than 128, Q4_K with Q6_K down, the
// fast arithmetic), a decode of 1 and of 32 tokens.
func BenchmarkMoE(b *testing.B) {
	const dim, hidden, experts, choices = 2048, 768, 32, 8
	t := &testing.T{}
	r := newRand(52)
	m := newMoE(t, r, def, gguf.Q4_K, gguf.Q4_K, gguf.Q6_K, dim, hidden, experts, true)
	p := NewPool(0)
	defer p.Close()
	for _, n := range []int{1, 32} {
		b.Run(fmt.Sprintf("tokens=%d", n), func(b *testing.B) {
			ids, w := randomRoutes(r, n, choices, experts)
			x := randVec(r, n*dim, 1)
			buf := &MoEBuffers{Dst: make([]float32, n*dim), X: x, IDs: ids, Weights: w, K: choices}
			used := map[int32]bool{}
			for _, id := range ids {
				used[id] = true
			}
			b.SetBytes(int64(len(used)) * int64(m.Experts[0].Gate.RowBytes()*2*hidden+m.Experts[0].Down.RowBytes()*dim))
			for b.Loop() {
				p.MoE(&MoE{Experts: m.Experts}, buf, n)
			}
		})
	}
}

// BenchmarkMoEWide: one layer of Qwen3-30B-A3B's experts in full (128
// experts of 2048 → 768, 8 per token, Q4_K with Q6_K down, the fast
// arithmetic): a decode step of 1, 8 and 32 sequences (about 2.3 tokens
// per used expert at 32) and a prefill of 512 tokens, each call routed
// anew.
func BenchmarkMoEWide(b *testing.B) {
	const dim, hidden, experts, choices = 2048, 768, 128, 8
	t := &testing.T{}
	r := newRand(53)
	m := newMoE(t, r, def, gguf.Q4_K, gguf.Q4_K, gguf.Q6_K, dim, hidden, experts, true)
	p := NewPool(0)
	defer p.Close()
	for _, n := range []int{1, 8, 32, 512} {
		b.Run(fmt.Sprintf("tokens=%d", n), func(b *testing.B) {
			// A new route each call (of 16), so that the experts' weights
			// come from memory, not from the cache of the call before.
			x := randVec(r, n*dim, 1)
			var bufs []*MoEBuffers
			used := 0
			for range 16 {
				ids, w := randomRoutes(r, n, choices, experts)
				bufs = append(bufs, &MoEBuffers{Dst: make([]float32, n*dim), X: x, IDs: ids, Weights: w, K: choices})
				u := map[int32]bool{}
				for _, id := range ids {
					u[id] = true
				}
				used += len(u)
			}
			b.SetBytes(int64(used/len(bufs)) * int64(m.Experts[0].Gate.RowBytes()*2*hidden+m.Experts[0].Down.RowBytes()*dim))
			i := 0
			for b.Loop() {
				p.MoE(m, bufs[i%len(bufs)], n)
				i++
			}
			b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "tokens/s")
		})
	}
	// Every expert with exactly c tokens (16·c tokens, token t choosing
	// the 8 experts of group t mod 16): the kernels' cost per token and
	// expert as c grows, every expert's weights read once per call.
	for _, c := range []int{1, 2, 3, 4, 8, 32} {
		b.Run(fmt.Sprintf("per-expert=%d", c), func(b *testing.B) {
			n := 16 * c
			ids, w := randomRoutes(r, n, choices, choices)
			for i := range ids {
				ids[i] += int32(i / choices % 16 * choices)
			}
			x := randVec(r, n*dim, 1)
			buf := &MoEBuffers{Dst: make([]float32, n*dim), X: x, IDs: ids, Weights: w, K: choices}
			for b.Loop() {
				p.MoE(m, buf, n)
			}
			b.ReportMetric(b.Elapsed().Seconds()*1e6/float64(b.N)/float64(n*choices), "µs/token-expert")
		})
	}
}
