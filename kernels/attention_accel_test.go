package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

// sameAttnCase builds a paged cache and a batch with the given head size
// and GQA shape; sequence s has ctx[s] positions and its last newTok[s]
// tokens are queries.
func sameAttnCase(r *rand.Rand, typ KVType, hd, heads, kvHeads, bs int, ctx, newTok []int) (*Attention, *KVLayer) {
	stride := kvHeads * hd
	nblocks := 2
	for _, n := range ctx {
		nblocks += (n + bs - 1) / bs
	}
	l := NewKVLayer(typ, nblocks, bs, kvHeads, hd)
	kv := &l
	perm := r.Perm(nblocks)
	a := &Attention{Heads: heads, Scale: float32(1 / math.Sqrt(float64(hd))), QueryStart: []int32{0}}
	for s, n := range ctx {
		table := make([]int32, (n+bs-1)/bs)
		for i := range table {
			table[i], perm = int32(perm[0]), perm[1:]
		}
		a.BlockTables = append(a.BlockTables, table)
		slots := make([]int32, n)
		for p := range n {
			slots[p] = table[p/bs]*int32(bs) + int32(p%bs)
		}
		// Large keys make some probabilities round to zero (skipped rows).
		WriteKV(kv, slots, randVec(r, n*stride, 3), randVec(r, n*stride, 1))
		for p := n - newTok[s]; p < n; p++ {
			a.Positions = append(a.Positions, int32(p))
		}
		a.QueryStart = append(a.QueryStart, int32(len(a.Positions)))
	}
	nt := len(a.Positions)
	a.Q = randVec(r, nt*heads*hd, 1)
	a.Out = make([]float32, nt*heads*hd)
	return a, kv
}

// TestAttentionSameAsGeneric: every implementation's attention output is
// bit-identical to the generic one, for every cache type, both modes, head
// sizes with and without the whole-context kernels, and GQA.
func TestAttentionSameAsGeneric(t *testing.T) {
	forEachAccel(t, func(t *testing.T, k *impl) {
		pk, pg := newPool(2, k), newPool(2, generic)
		defer pk.Close()
		defer pg.Close()
		r := newRand(50)
		for _, typ := range []KVType{KVF16, KVF32, KVBF16, KVQ8_0} {
			for _, mode := range []AttnMode{AttnMatMul, AttnFlash, AttnTiled} {
				for _, hd := range []int{64, 128, 8, 80} {
					if typ == KVQ8_0 && (mode != AttnTiled || hd%32 != 0) {
						continue // AttnTiled only, whole blocks of 32
					}
					t.Run(fmt.Sprintf("kv%d/mode%d/hd%d", typ, mode, hd), func(t *testing.T) {
						a, kv := sameAttnCase(r, typ, hd, 6, 2, 16, []int{1, 70, 300}, []int{1, 5, 3})
						a.Mode = mode
						pg.Attention(a, kv)
						want := append([]float32(nil), a.Out...)
						clear(a.Out)
						pk.Attention(a, kv)
						checkSameF32(t, "out", a.Out, want)
					})
				}
			}
		}
	})
}

// A block table naming a block outside the cache panics with a clear
// message on every implementation before any kernel reads a row.
func TestAttentionBadBlockPanics(t *testing.T) {
	for _, k := range implementations() {
		t.Run(k.name, func(t *testing.T) {
			p := newPool(1, k)
			defer p.Close()
			a, kv := sameAttnCase(newRand(52), KVF16, 64, 6, 2, 16, []int{40}, []int{1})
			a.BlockTables[0][1] = int32(kv.Slots() / kv.BlockSize) // one past the last block
			defer func() {
				if r := recover(); r == nil || !strings.Contains(fmt.Sprint(r), "outside the cache") {
					t.Fatalf("recovered %v, want a panic naming the block", r)
				}
			}()
			p.Attention(a, kv)
		})
	}
}
