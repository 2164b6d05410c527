//go:build amd64 && !noasm

package kernels

import (
	"math"
	"unsafe"
)

// Wrappers of the AVX2 float vector kernels (vecavx2_amd64.s) with the
// generic kernels' signatures. The assembly covers whole 8-element blocks
// (elementwise kernels, exact in any width) or 64-element steps (dot
// products); the tails run the generic code in the generic order.

func axpyF32AVX2w(dst []float32, a float32, x []float32) {
	x = x[:len(dst)]
	if full := len(dst) &^ 7; full > 0 {
		axpyF32AVX2(&dst[0], a, &x[0], full)
		dst, x = dst[full:], x[full:]
	}
	axpyF32Generic(dst, a, x)
}

func axpyF16AVX2w(dst []float32, a float32, x []uint16) {
	x = x[:len(dst)]
	if full := len(dst) &^ 7; full > 0 {
		axpyF16AVX2(&dst[0], a, &x[0], full)
		dst, x = dst[full:], x[full:]
	}
	axpyF16Generic(dst, a, x)
}

func axpyBF16AVX2w(dst []float32, a float32, x []uint16) {
	x = x[:len(dst)]
	if full := len(dst) &^ 7; full > 0 {
		axpyBF16AVX2(&dst[0], a, &x[0], full)
		dst, x = dst[full:], x[full:]
	}
	axpyBF16Generic(dst, a, x)
}

func madF16AVX2w(acc []uint16, a float32, x []uint16) {
	x = x[:len(acc)]
	if full := len(acc) &^ 7; full > 0 {
		madF16AVX2(&acc[0], a, &x[0], full)
		acc, x = acc[full:], x[full:]
	}
	madF16Generic(acc, a, x)
}

func scaleF16AVX2w(acc []uint16, a float32) {
	if full := len(acc) &^ 7; full > 0 {
		scaleF16AVX2(&acc[0], a, full)
		acc = acc[full:]
	}
	scaleF16Generic(acc, a)
}

func scaleF32AVX2w(x []float32, a float32) {
	if full := len(x) &^ 7; full > 0 {
		scaleF32AVX2(&x[0], a, full)
		x = x[full:]
	}
	scaleF32Generic(x, a)
}

func addAVX2w(dst, x []float32) {
	x = x[:len(dst)]
	if full := len(dst) &^ 7; full > 0 {
		addAVX2(&dst[0], &x[0], full)
		dst, x = dst[full:], x[full:]
	}
	addGeneric(dst, x)
}

func mulAVX2w(dst, x []float32) {
	x = x[:len(dst)]
	if full := len(dst) &^ 7; full > 0 {
		mulAVX2(&dst[0], &x[0], full)
		dst, x = dst[full:], x[full:]
	}
	mulGeneric(dst, x)
}

// rmsNormAVX2 is rmsNormGeneric with the scaling pass vectorised.
func rmsNormAVX2(dst, x, w []float32, eps float32) {
	x, w = x[:len(dst)], w[:len(dst)]
	var sum float64
	for _, v := range x {
		sum += float64(v * v)
	}
	mean := float32(sum / float64(len(x)))
	scale := 1 / float32(math.Sqrt(float64(mean+eps)))
	full := len(dst) &^ 7
	if full > 0 {
		rmsScaleAVX2(&dst[0], &x[0], &w[0], full, scale)
	}
	for i := full; i < len(dst); i++ {
		dst[i] = (x[i] * scale) * w[i]
	}
}

func dotF32AVX2(a, b []float32) float32 {
	b = b[:len(a)]
	np := len(a) &^ 63
	var sum float32
	if np > 0 {
		sum = dotF32LanesAVX2(&a[0], &b[0], np)
	}
	return dotF32Tail(sum, a, func(i int) float32 { return b[i] }, np)
}

func dotF16AVX2(a []float32, b []uint16) float32 {
	b = b[:len(a)]
	np := len(a) &^ 63
	var s float64
	if np > 0 {
		s = float64(dotF16LanesAVX2(&a[0], &b[0], np))
	}
	for i := np; i < len(a); i++ {
		s += float64(a[i] * f16Table[b[i]])
	}
	return float32(s)
}

func dotBF16AVX2(a []float32, b []uint16) float32 {
	if len(a) == 0 {
		return 0
	}
	b = b[:len(a)]
	return dotBF16PairsV(a, &b[0], func(i int) float32 { return BF16ToF32(b[i]) })
}

// dotBF16PairsV is dotBF16Pairs with the AVX2 kernel.
func dotBF16PairsV(a []float32, b *uint16, at func(int) float32) float32 {
	np := len(a) &^ 63
	var s float64
	if np > 0 {
		c0, c1 := dotBF16PairsAVX2(&a[0], b, np)
		s = float64(c0)
		s += float64(c1)
	}
	for i := np; i < len(a); i++ {
		s += float64(a[i] * at(i))
	}
	return float32(s)
}

// Weight-row dot products (see gemmf_amd64.go).

func dotF32WAVX2(w []byte, a *actRow) float32 {
	n := len(a.f)
	if n == 0 {
		return 0
	}
	w = w[:4*n]
	np := n &^ 63
	var sum float32
	if np > 0 {
		sum = dotF32LanesAVX2(&a.f[0], (*float32)(unsafe.Pointer(&w[0])), np)
	}
	return dotF32Tail(sum, a.f, func(i int) float32 { return math.Float32frombits(le32(w[4*i:])) }, np)
}

func dotF16WAVX2(w []byte, a *actRow) float32 {
	n := len(a.f)
	if n == 0 {
		return 0
	}
	w = w[:2*n]
	np := n &^ 63
	var s float64
	if np > 0 {
		s = float64(dotF16LanesAVX2(&a.f[0], (*uint16)(unsafe.Pointer(&w[0])), np))
	}
	for i := np; i < n; i++ {
		s += float64(a.f[i] * f16Table[le16(w[2*i:])])
	}
	return float32(s)
}

func dotBF16WAVX2(w []byte, a *actRow) float32 {
	n := len(a.f)
	if n == 0 {
		return 0
	}
	w = w[:2*n]
	return dotBF16PairsV(a.f, (*uint16)(unsafe.Pointer(&w[0])), func(i int) float32 { return BF16ToF32(le16(w[2*i:])) })
}

func le32(b []byte) uint32 {
	return uint32(b[0]) | uint32(b[1])<<8 | uint32(b[2])<<16 | uint32(b[3])<<24
}

func reduceLanesAVX2w(out, lanes []float32) {
	hd := len(out)
	lanes = lanes[:64*hd]
	full := hd &^ 7
	if full > 0 {
		reduceLanesAVX2(&out[0], &lanes[0], full, hd)
	}
	var acc [64]float32
	for d := full; d < hd; d++ {
		for k := range acc {
			acc[k] = lanes[k*hd+d]
		}
		out[d] = reduce64(&acc)
	}
}

// siluAVX2w: vsilu on the elements of whole 16-element blocks, silu
// (expf) on the n mod 16 trailing ones, as siluGeneric.
func siluAVX2w(dst, x []float32) {
	x = x[:len(dst)]
	full := len(dst) &^ 15
	if full > 0 {
		siluAVX2(&dst[0], &x[0], full)
	}
	for i := full; i < len(dst); i++ {
		dst[i] = silu(x[i])
	}
}

func swiGLUAVX2w(dst, gate, up []float32) {
	gate, up = gate[:len(dst)], up[:len(dst)]
	full := len(dst) &^ 15
	if full > 0 {
		swiGLUAVX2(&dst[0], &gate[0], &up[0], full)
	}
	for i := full; i < len(dst); i++ {
		dst[i] = silu(gate[i]) * up[i]
	}
}

func softmaxAVX2(x []float32) {
	if len(x) == 0 {
		return
	}
	mx := float32(math.Inf(-1))
	for _, v := range x {
		mx = max(mx, v)
	}
	s := float32(1 / softmaxExpAVX2w(x, mx))
	scaleF32AVX2w(x, s)
}

func softmaxExpAVX2w(x []float32, mx float32) float64 {
	full := len(x) &^ 15
	var sum float64
	if full > 0 {
		sum = softmaxExpAVX2(&x[0], full, mx)
	}
	for i := full; i < len(x); i++ {
		x[i] = expf(x[i] - mx)
		sum += float64(x[i])
	}
	return sum
}
