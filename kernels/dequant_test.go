package kernels

import (
	"encoding/binary"
	"math"
	"testing"

	"pagoda/gguf"
)

// TestDequantizeFusedSame states the relation between the two ways of
// evaluating a dequantization formula. gguf.Dequantize (which DequantizeRow
// runs) rounds every product separately; ggml's compiled dequantize_row_*
// may fuse y = d·q + m (Q4_1, Q5_1) or y = d·sc·q − dmin·mn (Q2_K, Q4_K,
// Q5_K) into one FMA, as GCC contracts such expressions on an FMA build.
// They are equal bit for bit, because every product is exact in float32: a
// half-precision scale has 11 significant bits and the integers it is
// multiplied by (q ≤ 31, sc·q ≤ 63·31, mn ≤ 63) at most 12, so only the
// final add rounds, once, either way. The test checks both halves of that
// argument on random blocks with scales drawn from every finite half.
func TestDequantizeFusedSame(t *testing.T) {
	r := newRand(17)
	for _, typ := range []gguf.Type{gguf.Q4_1, gguf.Q5_1, gguf.Q2_K, gguf.Q4_K, gguf.Q5_K} {
		t.Run(typ.String(), func(t *testing.T) {
			blk := make([]byte, typ.TypeSize())
			got := make([]float32, typ.BlockSize())
			want := make([]float32, typ.BlockSize())
			for n := range 4000 {
				for i := range blk {
					blk[i] = byte(r.Uint32())
				}
				dOff, mOff := 0, 2 // d and m (or dmin) halves
				if typ == gguf.Q2_K {
					dOff, mOff = 80, 82
				}
				binary.LittleEndian.PutUint16(blk[dOff:], randFiniteHalf(r.Uint32()))
				binary.LittleEndian.PutUint16(blk[mOff:], randFiniteHalf(r.Uint32()))
				if err := gguf.Dequantize(typ, blk, got); err != nil {
					t.Fatal(err)
				}
				dequantFused(t, typ, blk, want)
				for e := range got {
					if !sameFloat(got[e], want[e]) {
						t.Fatalf("block %d element %d: separately rounded %v, fused %v", n, e, got[e], want[e])
					}
				}
			}
		})
	}
}

// randFiniteHalf returns a half-precision bit pattern from u that is
// neither an infinity nor a NaN (any sign, normal or subnormal).
func randFiniteHalf(u uint32) uint16 {
	h := uint16(u)
	if h&0x7c00 == 0x7c00 {
		h &^= 0x4000 // exponent 31 → 15: a finite number
	}
	return h
}

// dequantFused dequantizes one block the way an FMA build of ggml does,
// y = fma(a, q, c), after checking that a·q and c are exact in float32.
func dequantFused(t *testing.T, typ gguf.Type, blk []byte, y []float32) {
	t.Helper()
	fused := func(a, q, c float32) float32 {
		if float64(a)*float64(q) != float64(a*q) {
			t.Fatalf("%v: product %v·%v is not exact in float32", typ, a, q)
		}
		return fma32(a, q, c)
	}
	var q [256]int8
	switch typ {
	case gguf.Q4_1, gguf.Q5_1:
		d, m := f16Table[le16(blk)], f16Table[le16(blk[2:])]
		qs, qh := blk[4:20], uint32(0)
		if typ == gguf.Q5_1 {
			qs, qh = blk[8:24], binary.LittleEndian.Uint32(blk[4:])
		}
		for j, b := range qs {
			y[j] = fused(d, float32(b&15|byte(qh>>j&1)<<4), m)
			y[j+16] = fused(d, float32(b>>4|byte(qh>>(j+16)&1)<<4), m)
		}
	case gguf.Q4_K, gguf.Q5_K:
		var sc, mn [8]int32
		if typ == gguf.Q4_K {
			decodeQ4K(blk, &q, &sc, &mn)
		} else {
			decodeQ5K(blk, &q, &sc, &mn)
		}
		d, dmin := f16Table[le16(blk)], f16Table[le16(blk[2:])]
		for e := range 256 {
			y[e] = fused(exactProduct(t, d, sc[e/32]), float32(q[e]), -exactProduct(t, dmin, mn[e/32]))
		}
	case gguf.Q2_K:
		var sc, mn [16]int32
		decodeQ2K(blk, &q, &sc, &mn)
		d, dmin := f16Table[le16(blk[80:])], f16Table[le16(blk[82:])]
		for e := range 256 {
			y[e] = fused(exactProduct(t, d, sc[e/16]), float32(q[e]), -exactProduct(t, dmin, mn[e/16]))
		}
	default:
		t.Fatalf("no fused form for %v", typ)
	}
}

// exactProduct returns h·n, failing the test if float32 rounds it.
func exactProduct(t *testing.T, h float32, n int32) float32 {
	p := h * float32(n)
	if float64(p) != float64(h)*float64(n) || math.IsInf(float64(p), 0) {
		t.Fatalf("product %v·%d is not exact in float32", h, n)
	}
	return p
}
