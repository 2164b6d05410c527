package kernels

import (
	"fmt"
	"strings"
	"testing"
)

// TestKVQ8Golden: a row written into a Q8_0 cache is ggml's
// quantize_row_q8_0 of it, byte for byte (the golden rows of
// TestGoldenQuantize: ggml's blocks of random rows), at the slot's offset.
func TestKVQ8Golden(t *testing.T) {
	g := openGolden(t, "q8_0.bin")
	checked := 0
	for rec := 0; g.more(); rec++ {
		n := g.u32()
		x := g.f32s(n)
		want := g.take(n / q8Block * q8BlockBytes)
		if n%q8Block != 0 {
			continue
		}
		checked++
		// one KV head of n elements, blocks of 2 slots; slot 3 holds x as
		// K and −x as V
		l := NewKVLayer(KVQ8_0, 3, 2, 1, n)
		neg := make([]float32, n)
		for i, v := range x {
			neg[i] = -v
		}
		WriteKV(&l, []int32{3}, x, neg)
		off := q8Offset(l.RowOffset(3, 0))
		if got := l.K8[off:][:len(want)]; string(got) != string(want) {
			t.Fatalf("record %d (n=%d):\n got %x\nggml %x", rec, n, got, want)
		}
		// V: ggml's blocks of −x are those of x with every quant negated
		for b := range n / q8Block {
			blk := l.V8[off+b*q8BlockBytes:][:q8BlockBytes]
			ref := want[b*q8BlockBytes:][:q8BlockBytes]
			if blk[0] != ref[0] || blk[1] != ref[1] {
				t.Fatalf("record %d block %d: V scale %x, want %x", rec, b, blk[:2], ref[:2])
			}
			for i := 2; i < q8BlockBytes; i++ {
				if int8(blk[i]) != -int8(ref[i]) {
					t.Fatalf("record %d block %d: V quant %d = %d, want %d", rec, b, i-2, int8(blk[i]), -int8(ref[i]))
				}
			}
		}
		for i, b := range l.K8 { // nothing else written
			if (i < off || i >= off+len(want)) && b != 0 {
				t.Fatalf("record %d: byte %d outside the slot written", rec, i)
			}
		}
	}
	if checked == 0 {
		t.Fatal("no golden rows")
	}
	t.Logf("%d rows of ggml's q8_0 blocks", checked)
}

// dequantizedF32 returns an F32 layer holding the values of the Q8_0
// layer q (d·q).
func dequantizedF32(q *KVLayer) *KVLayer {
	l := NewKVLayer(KVF32, q.Slots()/q.BlockSize, q.BlockSize, q.KVHeads, q.HeadDim)
	for off := 0; off < len(l.K32); off += q.HeadDim {
		DequantizeKVQ8(l.K32[off:][:q.HeadDim], q.K8, off)
		DequantizeKVQ8(l.V32[off:][:q.HeadDim], q.V8, off)
	}
	return &l
}

// TestAttentionQ8: the attention over a Q8_0 cache is, bit for bit, the
// attention over an F32 cache holding the Q8_0 values, on every
// implementation: the quantization is the only difference a Q8_0 cache
// makes. Decodes (the rows read in place where an implementation can),
// prefill tiles, GQA and windows.
func TestAttentionQ8(t *testing.T) {
	forEachImpl(t, func(t *testing.T, k *impl) {
		p := newPool(2, k)
		defer p.Close()
		r := newRand(131)
		for _, c := range []struct {
			hd, heads, kvHeads, bs, window int
			ctx, newTok                    []int
		}{
			{64, 9, 3, 16, 0, []int{1, 17, 300}, []int{1, 1, 1}},
			{64, 6, 2, 16, 0, []int{40, 90}, []int{40, 33}},
			{128, 4, 1, 32, 0, []int{70, 5}, []int{1, 5}},
			{256, 4, 1, 16, 48, []int{200, 30}, []int{1, 20}},
			{32, 2, 2, 8, 0, []int{77}, []int{3}},
		} {
			t.Run(fmt.Sprintf("hd%d/%dover%d/bs%d/window%d", c.hd, c.heads, c.kvHeads, c.bs, c.window), func(t *testing.T) {
				a, kv := sameAttnCase(r, KVQ8_0, c.hd, c.heads, c.kvHeads, c.bs, c.ctx, c.newTok)
				a.Mode, a.Window = AttnTiled, c.window
				p.Attention(a, kv)
				got := append([]float32(nil), a.Out...)
				clear(a.Out)
				p.Attention(a, dequantizedF32(kv))
				checkSameF32(t, "out", got, a.Out)
			})
		}
	})
}

// TestTiledBlockQ8: each implementation's Q8_0 block conversion places
// d·q as blockRows does, for 1 to 16 rows in any order.
func TestTiledBlockQ8(t *testing.T) {
	forEachImpl(t, func(t *testing.T, k *impl) {
		r := newRand(133)
		for _, hd := range []int{32, 64, 256} {
			l := NewKVLayer(KVQ8_0, 4, 16, 1, hd)
			WriteKV(&l, seqSlots(64), randVec(r, 64*hd, 2), randVec(r, 64*hd, 1))
			vals := make([]float32, 64*hd)
			for s := range 64 {
				DequantizeKVQ8(vals[s*hd:][:hd], l.K8, s*hd)
			}
			for _, n := range []int{16, 1, 7} {
				offs := r.Perm(64)[:n]
				for i := range offs {
					offs[i] *= hd
				}
				want, got := nanVec(16*hd), nanVec(16*hd)
				blockRows(want, offs, hd, func(off, d int) float32 { return vals[off+d] })
				k.tiled.blockQ8(got, l.K8, offs, hd)
				checkSameF32(t, fmt.Sprintf("hd %d, %d rows", hd, n), got, want)
			}
		}
	})
}

// seqSlots is slots 0..n−1.
func seqSlots(n int) []int32 {
	s := make([]int32, n)
	for i := range s {
		s[i] = int32(i)
	}
	return s
}

// TestKVQ8Bytes: a Q8_0 block takes 34 bytes per 32 elements of K and of
// V, 53% of F16's.
func TestKVQ8Bytes(t *testing.T) {
	l := NewKVLayer(KVQ8_0, 5, 16, 3, 64)
	if want := 5 * 16 * 3 * 64 / 32 * 34; len(l.K8) != want || len(l.V8) != want || KVQ8_0.Bytes(5*16*3*64) != want {
		t.Fatalf("Q8_0 layer of %d/%d bytes, Bytes %d, want %d", len(l.K8), len(l.V8), KVQ8_0.Bytes(5*16*3*64), want)
	}
	if l.Slots() != 80 {
		t.Fatalf("Slots = %d, want 80", l.Slots())
	}
	if s, err := ParseKVType("q8_0"); err != nil || s != KVQ8_0 || s.String() != "q8_0" {
		t.Fatalf("ParseKVType(q8_0) = %v, %v", s, err)
	}
}

// TestAttentionQ8NoAllocs: the attention over a Q8_0 cache, and writing
// rows into it, allocate nothing once a pool has run the shape.
func TestAttentionQ8NoAllocs(t *testing.T) {
	p := NewPool(2)
	defer p.Close()
	a, kv := sameAttnCase(newRand(6), KVQ8_0, 64, 6, 2, 16, []int{3, 60}, []int{1, 40})
	a.Mode = AttnTiled
	p.Attention(a, kv)
	k, v := randVec(newRand(7), 2*64, 1), randVec(newRand(8), 2*64, 1)
	slots := []int32{5}
	if n := testing.AllocsPerRun(20, func() { p.Attention(a, kv); WriteKV(kv, slots, k, v) }); n != 0 {
		t.Fatalf("Attention and WriteKV on a Q8_0 cache allocate %v times", n)
	}
}

// TestAttentionQ8OtherModesPanic: llama.cpp's exact paths do not read a
// Q8_0 cache; asking them to panics with a message that says so.
func TestAttentionQ8OtherModesPanic(t *testing.T) {
	p := NewPool(1)
	defer p.Close()
	for _, mode := range []AttnMode{AttnMatMul, AttnFlash} {
		a, kv := sameAttnCase(newRand(9), KVQ8_0, 64, 2, 1, 16, []int{5}, []int{1})
		a.Mode = mode
		func() {
			defer func() {
				if r := recover(); r == nil || !strings.Contains(fmt.Sprint(r), "AttnTiled only") {
					t.Fatalf("mode %d: recovered %v", mode, r)
				}
			}()
			p.Attention(a, kv)
		}()
	}
}
