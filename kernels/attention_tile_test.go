package kernels

import (
	"fmt"
	"math"
	"testing"
)

// perTokenAttention is the reference the tiled kernel must reproduce bit
// for bit: one (token, head) at a time, each with its own offset table
// built position by position, on a single worker (AttnTiled: a tile of one
// token and one query head).
func perTokenAttention(k *impl, a *Attention, kv *KVLayer) {
	j := attentionJob{a: a, kv: kv, k: k, scratch: make([]workerScratch, 1)}
	ws := &j.scratch[0]
	bs := kv.BlockSize
	for s := range len(a.QueryStart) - 1 {
		table := a.BlockTables[s]
		for i := int(a.QueryStart[s]); i < int(a.QueryStart[s+1]); i++ {
			for h := range a.Heads {
				if a.Mode == AttnTiled {
					j.tiled(ws, attnTile{seq: int32(s), first: int32(i), end: int32(i + 1)}, h, h+1)
					continue
				}
				ws.offs = make([]int, a.Positions[i]+1)
				for p := range ws.offs {
					ws.offs[p] = kv.RowOffset(int(table[p/bs])*bs+p%bs, h/(a.Heads/kv.KVHeads))
				}
				j.token(ws, i, h)
			}
		}
	}
}

// worstCaseBatch is the worst case for n sequences sharing m query
// tokens: n−1 sequences with one token (after some context) and one with
// the rest.
func worstCaseLens(n, m int) (ctx, newTok []int) {
	for s := range n - 1 {
		ctx, newTok = append(ctx, 5+7*s), append(newTok, 1)
	}
	rest := m - (n - 1)
	return append(ctx, rest+9), append(newTok, rest)
}

// TestAttentionTilesBeyondRealWork: with a plan's worst-case tile count
// (and more), the tiled kernel's output equals the per-token path bit for
// bit, and the tasks past the real tiles write nothing: guard values
// around Out are untouched.
func TestAttentionTilesBeyondRealWork(t *testing.T) {
	forEachImpl(t, func(t *testing.T, k *impl) {
		p := newPool(2, k)
		defer p.Close()
		r := newRand(77)
		for _, typ := range []KVType{KVF16, KVF32, KVBF16, KVQ8_0} {
			for _, mode := range []AttnMode{AttnMatMul, AttnFlash, AttnTiled} {
				if typ == KVQ8_0 && mode != AttnTiled {
					continue // a Q8_0 cache is read by AttnTiled only
				}
				for _, shape := range [][2]int{{1, 1}, {1, 40}, {4, 40}, {8, 8}, {5, 70}} {
					n, m := shape[0], shape[1]
					t.Run(fmt.Sprintf("kv%d/mode%d/%dseqs%dtokens", typ, mode, n, m), func(t *testing.T) {
						ctx, newTok := worstCaseLens(n, m)
						a, kv := sameAttnCase(r, typ, 64, 6, 2, 16, ctx, newTok)
						a.Mode = mode
						want := make([]float32, len(a.Out))
						ref := *a
						ref.Out = want
						perTokenAttention(k, &ref, kv)

						// the bucket's worst case, then more than it
						worst := min(n, m) + (m-min(n, m))/AttnTile
						if real := AttentionTiles(a.QueryStart); real != worst {
							t.Fatalf("worst-case split has %d tiles, bucket.MaxTiles formula gives %d", real, worst)
						}
						for _, tiles := range []int{0, worst, worst + 3, 4 * worst} {
							const guard = 8
							buf := make([]float32, len(a.Out)+2*guard)
							for i := range buf {
								buf[i] = float32(math.NaN())
							}
							a.Out = buf[guard : guard+len(want)]
							a.Tiles = tiles
							p.Attention(a, kv)
							for i := range guard {
								if !math.IsNaN(float64(buf[i])) || !math.IsNaN(float64(buf[len(buf)-1-i])) {
									t.Fatalf("Tiles %d: guard value %d written", tiles, i)
								}
							}
							checkSameF32(t, fmt.Sprintf("Tiles %d", tiles), a.Out, want)
						}
					})
				}
			}
		}
	})
}

// TestAttentionTilesTooFew: a tile count below the real work is raised to
// it: work is never dropped (FastDeploy's bug: two 80-token prompts in a
// graph captured for [160, 0] lost the last request's tiles).
func TestAttentionTilesTooFew(t *testing.T) {
	p := NewPool(2)
	defer p.Close()
	a, kv := sameAttnCase(newRand(3), KVF16, 64, 6, 2, 16, []int{90, 90}, []int{80, 80})
	want := make([]float32, len(a.Out))
	ref := *a
	ref.Out = want
	perTokenAttention(def, &ref, kv)
	a.Tiles = 3 // real: 2·⌈80/16⌉ = 10
	p.Attention(a, kv)
	checkSameF32(t, "out", a.Out, want)
}

// TestAttentionNoAllocs: once a pool has run a call laid out for a plan's
// tile count, any step of that bucket (any split of its tokens) allocates
// nothing.
func TestAttentionNoAllocs(t *testing.T) {
	for _, mode := range []AttnMode{AttnMatMul, AttnTiled} {
		p := NewPool(2)
		big, kv := sameAttnCase(newRand(4), KVF16, 64, 6, 2, 16, []int{1, 2, 3, 60}, []int{1, 1, 1, 40})
		big.Tiles, big.Mode = 8, mode
		p.Attention(big, kv) // warm-up
		small, kv2 := sameAttnCase(newRand(5), KVF16, 64, 6, 2, 16, []int{30, 30}, []int{20, 20})
		small.Tiles, small.Mode = 8, mode
		p.Attention(small, kv2)
		n := testing.AllocsPerRun(20, func() { p.Attention(big, kv); p.Attention(small, kv2) })
		p.Close()
		if n != 0 {
			t.Fatalf("mode %d: Attention allocates %v times per call pair", mode, n)
		}
	}
}
