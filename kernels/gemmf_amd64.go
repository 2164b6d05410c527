//go:build amd64 && !noasm

package kernels

import (
	"encoding/binary"
	"math"
	"unsafe"
)

// Float-weight dot products (F32, F16, BF16 weight rows) with the generic
// kernels' contracts: the whole 64-element steps run in assembly
// (vec_amd64.s, gemmf_amd64.s), the tails in the generic scalar order.
// Weight rows are little-endian bytes, possibly misaligned (x86 loads do
// not care; the element types hold no pointers, so checkptr does not).

// dotF32WAVX is dotF32WGeneric.
func dotF32WAVX(w []byte, a *actRow) float32 {
	n := len(a.f)
	if n == 0 {
		return 0
	}
	w = w[:4*n]
	np := n &^ 63
	var sum float32
	if np > 0 {
		sum = dotF32LanesAVX512(&a.f[0], (*float32)(unsafe.Pointer(&w[0])), np)
	}
	return dotF32Tail(sum, a.f, func(i int) float32 { return math.Float32frombits(binary.LittleEndian.Uint32(w[4*i:])) }, np)
}

// dotF16WAVX is dotF16WGeneric.
func dotF16WAVX(w []byte, a *actRow) float32 {
	n := len(a.f)
	if n == 0 {
		return 0
	}
	w = w[:2*n]
	np := n &^ 63
	var s float64
	if np > 0 {
		s = float64(dotF16LanesAVX512(&a.f[0], (*uint16)(unsafe.Pointer(&w[0])), np))
	}
	for i := np; i < n; i++ {
		s += float64(a.f[i] * f16Table[le16(w[2*i:])])
	}
	return float32(s)
}

// dotBF16WAVX is dotBF16WGeneric.
func dotBF16WAVX(w []byte, a *actRow) float32 {
	n := len(a.f)
	if n == 0 {
		return 0
	}
	w = w[:2*n]
	return dotBF16Pairs(a.f, (*uint16)(unsafe.Pointer(&w[0])), func(i int) float32 { return BF16ToF32(le16(w[2*i:])) })
}

// dotBF16AVX is dotBF16Generic.
func dotBF16AVX(a []float32, b []uint16) float32 {
	if len(a) == 0 {
		return 0
	}
	b = b[:len(a)]
	return dotBF16Pairs(a, &b[0], func(i int) float32 { return BF16ToF32(b[i]) })
}

// dotBF16Pairs is dotBF16Lanes with the whole steps in assembly; b points
// at len(a) bfloat16 values, also read by at for the tail.
func dotBF16Pairs(a []float32, b *uint16, at func(int) float32) float32 {
	np := len(a) &^ 63
	var s float64
	if np > 0 {
		c0, c1 := dotBF16PairsAVX512(&a[0], b, np)
		s = float64(c0)
		s += float64(c1)
	}
	for i := np; i < len(a); i++ {
		s += float64(a[i] * at(i))
	}
	return float32(s)
}
