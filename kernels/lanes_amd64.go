//go:build amd64 && !noasm

package kernels

import (
	"math"
	"unsafe"
)

// vecISA is one instruction set's assembly for the float kernels whose Go
// wrappers are otherwise the same for AVX-512 and AVX2: the dot products in
// whole 64-element steps (ggml's 64-lane layout) and the exp-based
// elementwise kernels on whole 16-element blocks. The wrappers run the
// tails in the generic scalar order, so both ISAs keep the generic
// contract bit for bit. Weight rows are little-endian bytes, possibly
// misaligned (x86 loads do not care; the element types hold no pointers,
// so checkptr does not either).
type vecISA struct {
	dotF32     func(a, b *float32, n int) float32
	dotF16     func(a *float32, b *uint16, n int) float32
	bf16Pairs  func(a *float32, b *uint16, n int) (c0, c1 float32)
	silu       func(dst, x *float32, n int)
	swiGLU     func(dst, gate, up *float32, n int)
	softmaxExp func(x *float32, n int, mx float32) float64
	scaleF32   func(x []float32, a float32) // the whole-slice wrapper
}

var (
	isaAVX512 = &vecISA{dotF32LanesAVX512, dotF16LanesAVX512, dotBF16PairsAVX512,
		siluAVX512, swiGLUAVX512, softmaxExpAVX512, scaleF32AVX}
	isaAVX2 = &vecISA{dotF32LanesAVX2, dotF16LanesAVX2, dotBF16PairsAVX2,
		siluAVX2, swiGLUAVX2, softmaxExpAVX2, scaleF32AVX2w}
)

// DotF32 is dotF32Generic.
func (v *vecISA) DotF32(a, b []float32) float32 {
	b = b[:len(a)]
	np := len(a) &^ 63
	var sum float32
	if np > 0 {
		sum = v.dotF32(&a[0], &b[0], np)
	}
	return dotF32Tail(sum, a, func(i int) float32 { return b[i] }, np)
}

// DotF16 is dotF16Generic.
func (v *vecISA) DotF16(a []float32, b []uint16) float32 {
	b = b[:len(a)]
	return v.f16(a, unsafe.SliceData(b), func(i int) uint16 { return b[i] })
}

// DotBF16 is dotBF16Generic.
func (v *vecISA) DotBF16(a []float32, b []uint16) float32 {
	b = b[:len(a)]
	return v.bf16(a, unsafe.SliceData(b), func(i int) float32 { return BF16ToF32(b[i]) })
}

// DotF32W is dotF32WGeneric.
func (v *vecISA) DotF32W(w []byte, a *actRow) float32 {
	n := len(a.f)
	w = w[:4*n]
	np := n &^ 63
	var sum float32
	if np > 0 {
		sum = v.dotF32(&a.f[0], (*float32)(unsafe.Pointer(&w[0])), np)
	}
	return dotF32Tail(sum, a.f, func(i int) float32 { return math.Float32frombits(le32(w[4*i:])) }, np)
}

// DotF16W is dotF16WGeneric.
func (v *vecISA) DotF16W(w []byte, a *actRow) float32 {
	w = w[:2*len(a.f)]
	return v.f16(a.f, (*uint16)(unsafe.Pointer(unsafe.SliceData(w))), func(i int) uint16 { return le16(w[2*i:]) })
}

// DotBF16W is dotBF16WGeneric.
func (v *vecISA) DotBF16W(w []byte, a *actRow) float32 {
	w = w[:2*len(a.f)]
	return v.bf16(a.f, (*uint16)(unsafe.Pointer(unsafe.SliceData(w))), func(i int) float32 { return BF16ToF32(le16(w[2*i:])) })
}

// f16 is the F16 dot of a with the len(a) halves at b (also read by at for
// the tail): the steps in assembly, then the tail in float64.
func (v *vecISA) f16(a []float32, b *uint16, at func(int) uint16) float32 {
	np := len(a) &^ 63
	var s float64
	if np > 0 {
		s = float64(v.dotF16(&a[0], b, np))
	}
	for i := np; i < len(a); i++ {
		s += float64(a[i] * f16Table[at(i)])
	}
	return float32(s)
}

// bf16 is dotBF16Lanes with the whole steps in assembly; b points at
// len(a) bfloat16 values, also read by at for the tail.
func (v *vecISA) bf16(a []float32, b *uint16, at func(int) float32) float32 {
	np := len(a) &^ 63
	var s float64
	if np > 0 {
		c0, c1 := v.bf16Pairs(&a[0], b, np)
		s = float64(c0)
		s += float64(c1)
	}
	for i := np; i < len(a); i++ {
		s += float64(a[i] * at(i))
	}
	return float32(s)
}

// SiLU is siluGeneric: the vector silu on whole 16-element blocks, silu
// (expf) on the n mod 16 trailing elements.
func (v *vecISA) SiLU(dst, x []float32) {
	x = x[:len(dst)]
	full := len(dst) &^ 15
	if full > 0 {
		v.silu(&dst[0], &x[0], full)
	}
	for i := full; i < len(dst); i++ {
		dst[i] = silu(x[i])
	}
}

// SwiGLU is swiGLUGeneric, blocked as SiLU.
func (v *vecISA) SwiGLU(dst, gate, up []float32) {
	gate, up = gate[:len(dst)], up[:len(dst)]
	full := len(dst) &^ 15
	if full > 0 {
		v.swiGLU(&dst[0], &gate[0], &up[0], full)
	}
	for i := full; i < len(dst); i++ {
		dst[i] = silu(gate[i]) * up[i]
	}
}

// Softmax is softmaxGeneric.
func (v *vecISA) Softmax(x []float32) {
	if len(x) == 0 {
		return
	}
	mx := float32(math.Inf(-1))
	for _, e := range x {
		mx = max(mx, e)
	}
	v.scaleF32(x, float32(1/v.SoftmaxExp(x, mx)))
}

// SoftmaxExp is softmaxExpGeneric, blocked as SiLU.
func (v *vecISA) SoftmaxExp(x []float32, mx float32) float64 {
	full := len(x) &^ 15
	var sum float64
	if full > 0 {
		sum = v.softmaxExp(&x[0], full, mx)
	}
	for i := full; i < len(x); i++ {
		x[i] = expf(x[i] - mx)
		sum += float64(x[i])
	}
	return sum
}

func le32(b []byte) uint32 {
	return uint32(b[0]) | uint32(b[1])<<8 | uint32(b[2])<<16 | uint32(b[3])<<24
}
