package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// attnCase is a paged batch built from dense per-sequence keys and values.
type attnCase struct {
	heads, kvHeads, hd, bs int
	ctx, newTok            []int       // per sequence: context after the step, tokens in the batch
	k, v                   [][]float32 // (seq)(ctx, kvHeads, hd) dense keys and values
	tables                 [][]int32   // (seq, blocks)
	kv                     *KVLayer
	att                    Attention
}

// newAttnCase writes every sequence's keys and values into randomly chosen
// blocks of a paged cache of type typ and builds the Attention input.
func newAttnCase(r *rand.Rand, typ KVType, bs int, ctx, newTok []int) *attnCase {
	return newAttnCaseHeads(r, typ, bs, 6, 2, 8, ctx, newTok)
}

// newAttnCaseHeads is newAttnCase with heads query heads over kvHeads KV
// heads of hd values.
func newAttnCaseHeads(r *rand.Rand, typ KVType, bs, heads, kvHeads, hd int, ctx, newTok []int) *attnCase {
	c := &attnCase{heads: heads, kvHeads: kvHeads, hd: hd, bs: bs, ctx: ctx, newTok: newTok}
	stride := c.kvHeads * c.hd
	nblocks := 0
	for _, n := range ctx {
		nblocks += (n + bs - 1) / bs
	}
	nblocks += 3 // unused blocks
	c.kv = &KVLayer{Type: typ, BlockSize: bs, KVHeads: c.kvHeads, HeadDim: c.hd}
	if typ == KVF32 {
		c.kv.K32, c.kv.V32 = make([]float32, nblocks*bs*stride), make([]float32, nblocks*bs*stride)
	} else {
		c.kv.K16, c.kv.V16 = make([]uint16, nblocks*bs*stride), make([]uint16, nblocks*bs*stride)
	}
	perm := r.Perm(nblocks)
	c.att = Attention{Heads: c.heads, Scale: float32(1 / math.Sqrt(float64(c.hd))), QueryStart: []int32{0}}
	for s, n := range ctx {
		table := make([]int32, (n+bs-1)/bs)
		for i := range table {
			table[i], perm = int32(perm[0]), perm[1:]
		}
		c.tables = append(c.tables, table)
		c.k = append(c.k, randVec(r, n*stride, 1))
		c.v = append(c.v, randVec(r, n*stride, 1))
		slots := make([]int32, n)
		for p := range n {
			slots[p] = table[p/bs]*int32(bs) + int32(p%bs)
		}
		WriteKV(c.kv, slots, c.k[s], c.v[s])
		for p := n - newTok[s]; p < n; p++ {
			c.att.Positions = append(c.att.Positions, int32(p))
		}
		c.att.QueryStart = append(c.att.QueryStart, int32(len(c.att.Positions)))
	}
	c.att.BlockTables = c.tables
	nt := len(c.att.Positions)
	c.att.Q = randVec(r, nt*c.heads*c.hd, 1)
	c.att.Out = make([]float32, nt*c.heads*c.hd)
	return c
}

// reference computes the attention of token i, head h densely in float64
// from the values the cache holds, with the query rounded to the cache's
// precision as the kernel does (AttnTiled keeps it in float32).
func (c *attnCase) reference(s, pos, tok, h int) []float64 {
	round := func(v float32) float64 {
		switch c.kv.Type {
		case KVF16:
			return float64(roundF16(v))
		case KVBF16:
			return float64(roundBF16(v))
		}
		return float64(v)
	}
	stride, kvh := c.kvHeads*c.hd, h/(c.heads/c.kvHeads)
	q := c.att.Q[(tok*c.heads+h)*c.hd:][:c.hd]
	scores := make([]float64, pos+1)
	lo := c.att.windowStart(int32(pos))
	mx := math.Inf(-1)
	for j := range scores {
		if j < lo {
			scores[j] = math.Inf(-1) // outside the sliding window
			continue
		}
		for d := range c.hd {
			qd := round(q[d])
			if c.att.Mode == AttnTiled {
				qd = float64(q[d])
			}
			scores[j] += qd * round(c.k[s][j*stride+kvh*c.hd+d])
		}
		scores[j] /= math.Sqrt(float64(c.hd))
		mx = math.Max(mx, scores[j])
	}
	var sum float64
	if c.att.Sinks != nil { // a logit in the denominator only
		mx = math.Max(mx, float64(c.att.Sinks[h]))
		sum = math.Exp(float64(c.att.Sinks[h]) - mx)
	}
	for j := range scores {
		scores[j] = math.Exp(scores[j] - mx)
		sum += scores[j]
	}
	out := make([]float64, c.hd)
	for j, p := range scores {
		for d := range c.hd {
			out[d] += p / sum * round(c.v[s][j*stride+kvh*c.hd+d])
		}
	}
	return out
}

// tolerance bounds the kernel's error for a context of ctx positions.
// AttnFlash with an F16 cache rounds its accumulator once per position, by
// at most half an ulp (2^-11 relative) of a value bounded by max|v|·S; an
// F32 cache runs flash attention in F16 too (as llama.cpp casts it).
// AttnMatMul rounds each probability to the cache type (2^-11 for F16,
// 2^-8 for BF16 relative), moving the output by at most that times max|v|.
func (c *attnCase) tolerance(ctx int) float64 {
	var vmax float64
	for _, v := range c.v {
		for _, x := range v {
			vmax = math.Max(vmax, math.Abs(float64(x)))
		}
	}
	switch {
	case c.att.Mode == AttnFlash && (c.kv.Type == KVF16 || c.kv.Type == KVF32):
		return float64(ctx+1)*vmax/2048 + 1e-5
	case c.att.Mode == AttnMatMul && c.kv.Type == KVF16:
		return vmax/2048 + 2e-5
	case c.att.Mode == AttnMatMul && c.kv.Type == KVBF16:
		return vmax/256 + 2e-5
	}
	return 2e-5
}

func TestAttentionMatchesDense(t *testing.T) {
	forEachImpl(t, func(t *testing.T, k *impl) {
		p := newPool(3, k)
		defer p.Close()
		r := newRand(10)
		for _, mode := range []AttnMode{AttnFlash, AttnMatMul, AttnTiled} {
			for _, typ := range []KVType{KVF32, KVF16, KVBF16} {
				for _, bs := range []int{1, 4, 16} {
					t.Run(fmt.Sprintf("mode%d/kv%d/bs%d", mode, typ, bs), func(t *testing.T) {
						// decode of a first token, a prefill chunk, a decode, a full prefill
						c := newAttnCase(r, typ, bs, []int{1, 37, 20, 9}, []int{1, 5, 1, 9})
						c.att.Mode = mode
						checkDense(t, p, c)
					})
				}
			}
		}
	})
}

// checkDense runs c and compares every output with the dense reference.
func checkDense(t *testing.T, p *Pool, c *attnCase) {
	t.Helper()
	p.Attention(&c.att, c.kv)
	tok := 0
	for s := range c.ctx {
		for range c.newTok[s] {
			for h := range c.heads {
				pos := int(c.att.Positions[tok])
				want := c.reference(s, pos, tok, h)
				got := c.att.Out[(tok*c.heads+h)*c.hd:][:c.hd]
				tol := c.tolerance(pos + 1)
				for d, w := range want {
					if !closeTo(float64(got[d]), w, tol) {
						t.Fatalf("seq %d token %d head %d dim %d: %v, want %v", s, tok, h, d, got[d], w)
					}
				}
			}
			tok++
		}
	}
}

// TestAttentionInvariance: every sequence's output is bit-identical alone
// or in the batch, on any number of threads.
func TestAttentionInvariance(t *testing.T) {
	forEachImpl(t, func(t *testing.T, k *impl) {
		for _, mode := range []AttnMode{AttnMatMul, AttnFlash, AttnTiled} {
			for _, typ := range []KVType{KVF32, KVF16} {
				t.Run(fmt.Sprintf("mode%d/kv%d", mode, typ), func(t *testing.T) {
					c := newAttnCase(newRand(11), typ, 4, []int{30, 3, 12}, []int{1, 3, 6})
					c.att.Mode = mode
					checkInvariance(t, k, c)
				})
			}
		}
	})
}

// checkInvariance runs c on 1, 2, 3 and 7 threads and each sequence alone:
// every output must be bit-identical.
func checkInvariance(t *testing.T, k *impl, c *attnCase) {
	t.Helper()
	p1 := newPool(1, k)
	defer p1.Close()
	p1.Attention(&c.att, c.kv)
	want := append([]float32(nil), c.att.Out...)
	for _, threads := range []int{2, 3, 7} {
		p := newPool(threads, k)
		clear(c.att.Out)
		p.Attention(&c.att, c.kv)
		p.Close()
		for i := range want {
			if math.Float32bits(c.att.Out[i]) != math.Float32bits(want[i]) {
				t.Fatalf("%d threads: element %d differs", threads, i)
			}
		}
	}
	row := c.heads * c.hd
	for s := range c.ctx {
		q0, q1 := int(c.att.QueryStart[s]), int(c.att.QueryStart[s+1])
		alone := Attention{
			Q: c.att.Q[q0*row : q1*row], Out: make([]float32, (q1-q0)*row),
			Positions: c.att.Positions[q0:q1], QueryStart: []int32{0, int32(q1 - q0)},
			BlockTables: c.tables[s : s+1], Heads: c.heads, Scale: c.att.Scale, Mode: c.att.Mode,
			Window: c.att.Window, Sinks: c.att.Sinks,
		}
		p1.Attention(&alone, c.kv)
		for i, v := range alone.Out {
			if math.Float32bits(v) != math.Float32bits(want[q0*row+i]) {
				t.Fatalf("sequence %d alone: element %d differs", s, i)
			}
		}
	}
}

// TestAttentionWindow: with a sliding window every mode matches the dense
// reference restricted to the window, stays batch-invariant, and never
// reads the block table entries of blocks wholly before the window of a
// tile's first token (they hold ids outside the cache here, which would
// panic).
func TestAttentionWindow(t *testing.T) {
	forEachImpl(t, func(t *testing.T, k *impl) {
		p := newPool(3, k)
		defer p.Close()
		for _, mode := range []AttnMode{AttnFlash, AttnMatMul, AttnTiled} {
			for _, typ := range []KVType{KVF32, KVF16, KVBF16} {
				for _, bs := range []int{1, 4, 16} {
					for _, window := range []int{1, 40} {
						t.Run(fmt.Sprintf("mode%d/kv%d/bs%d/w%d", mode, typ, bs, window), func(t *testing.T) {
							c := newAttnCaseHeads(newRand(12), typ, bs, 4, 2, 32,
								[]int{1, 37, 90, 9, 70}, []int{1, 5, 1, 9, 20})
							c.att.Mode, c.att.Window = mode, window
							for s, table := range c.tables {
								first := int(c.att.Positions[c.att.QueryStart[s]])
								from := c.att.windowStart(int32(first))
								for b := range table {
									if (b+1)*bs <= from {
										table[b] = 1 << 30
									}
								}
							}
							checkDense(t, p, c)
							if typ == KVF16 && bs == 16 {
								checkInvariance(t, k, c)
							}
						})
					}
				}
			}
		}
	})
}

func TestWriteKV(t *testing.T) {
	l := &KVLayer{Type: KVF16, BlockSize: 2, KVHeads: 1, HeadDim: 2, K16: make([]uint16, 8), V16: make([]uint16, 8)}
	WriteKV(l, []int32{3, -1, 0}, []float32{1, 2, 9, 9, 5, 6}, []float32{-1, -2, 9, 9, -5, -6})
	wantK := []float32{5, 6, 0, 0, 0, 0, 1, 2}
	wantV := []float32{-5, -6, 0, 0, 0, 0, -1, -2}
	for i := range wantK {
		if F16ToF32(l.K16[i]) != wantK[i] || F16ToF32(l.V16[i]) != wantV[i] {
			t.Fatalf("slot value %d: K %v V %v, want %v %v", i, F16ToF32(l.K16[i]), F16ToF32(l.V16[i]), wantK[i], wantV[i])
		}
	}
	if l.Slots() != 4 {
		t.Fatalf("Slots() = %d, want 4", l.Slots())
	}
	// two KV heads: a block holds head 0's rows, then head 1's
	l = &KVLayer{Type: KVF32, BlockSize: 2, KVHeads: 2, HeadDim: 2, K32: make([]float32, 16), V32: make([]float32, 16)}
	WriteKV(l, []int32{1, 2}, []float32{1, 2, 3, 4, 5, 6, 7, 8}, make([]float32, 8))
	want := []float32{0, 0, 1, 2, 0, 0, 3, 4, 5, 6, 0, 0, 7, 8, 0, 0}
	for i, w := range want {
		if l.K32[i] != w {
			t.Fatalf("two heads: K = %v, want %v", l.K32, want)
		}
	}
}
