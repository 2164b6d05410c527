//go:build amd64 && !noasm

package kernels

import "math"

// Wrappers of the generated float vector kernels (vec_amd64.s) with the
// generic kernels' signatures and bounds checks. Block kernels cover whole
// 16- or 64-element blocks; the tails run the generic scalar code, in the
// generic order.

func axpyF32AVX(dst []float32, a float32, x []float32) {
	if len(dst) > 0 {
		x = x[:len(dst)]
		axpyF32AVX512(&dst[0], a, &x[0], len(dst))
	}
}

func axpyF16AVX(dst []float32, a float32, x []uint16) {
	if len(dst) > 0 {
		x = x[:len(dst)]
		axpyF16AVX512(&dst[0], a, &x[0], len(dst))
	}
}

func axpyBF16AVX(dst []float32, a float32, x []uint16) {
	if len(dst) > 0 {
		x = x[:len(dst)]
		axpyBF16AVX512(&dst[0], a, &x[0], len(dst))
	}
}

func madF16AVX(acc []uint16, a float32, x []uint16) {
	if len(acc) > 0 {
		x = x[:len(acc)]
		madF16AVX512(&acc[0], a, &x[0], len(acc))
	}
}

func scaleF16AVX(acc []uint16, a float32) {
	if len(acc) > 0 {
		scaleF16AVX512(&acc[0], a, len(acc))
	}
}

func scaleF32AVX(x []float32, a float32) {
	if len(x) > 0 {
		scaleF32AVX512(&x[0], a, len(x))
	}
}

func addAVX(dst, x []float32) {
	if len(dst) > 0 {
		x = x[:len(dst)]
		addAVX512(&dst[0], &x[0], len(dst))
	}
}

func mulAVX(dst, x []float32) {
	if len(dst) > 0 {
		x = x[:len(dst)]
		mulAVX512(&dst[0], &x[0], len(dst))
	}
}

// rmsNormAVX is rmsNormGeneric with the scaling pass vectorised; the sum
// of squares is a float64 chain in index order either way.
func rmsNormAVX(dst, x, w []float32, eps float32) {
	x, w = x[:len(dst)], w[:len(dst)]
	var sum float64
	for _, v := range x {
		sum += float64(v * v)
	}
	mean := float32(sum / float64(len(x)))
	scale := 1 / float32(math.Sqrt(float64(mean+eps)))
	if len(dst) > 0 {
		rmsScaleAVX512(&dst[0], &x[0], &w[0], len(dst), scale)
	}
}

func siluAVX(dst, x []float32) {
	x = x[:len(dst)]
	full := len(dst) &^ 15
	if full > 0 {
		siluAVX512(&dst[0], &x[0], full)
	}
	for i := full; i < len(dst); i++ {
		dst[i] = silu(x[i])
	}
}

func swiGLUAVX(dst, gate, up []float32) {
	gate, up = gate[:len(dst)], up[:len(dst)]
	full := len(dst) &^ 15
	if full > 0 {
		swiGLUAVX512(&dst[0], &gate[0], &up[0], full)
	}
	for i := full; i < len(dst); i++ {
		dst[i] = silu(gate[i]) * up[i]
	}
}

func softmaxAVX(x []float32) {
	if len(x) == 0 {
		return
	}
	mx := float32(math.Inf(-1))
	for _, v := range x {
		mx = max(mx, v)
	}
	s := float32(1 / softmaxExpAVX(x, mx))
	scaleF32AVX(x, s)
}

func softmaxExpAVX(x []float32, mx float32) float64 {
	full := len(x) &^ 15
	var sum float64
	if full > 0 {
		sum = softmaxExpAVX512(&x[0], full, mx)
	}
	for i := full; i < len(x); i++ {
		x[i] = expf(x[i] - mx)
		sum += float64(x[i])
	}
	return sum
}

func dotF32AVX(a, b []float32) float32 {
	b = b[:len(a)]
	np := len(a) &^ 63
	var sum float32
	if np > 0 {
		sum = dotF32LanesAVX512(&a[0], &b[0], np)
	}
	return dotF32Tail(sum, a, func(i int) float32 { return b[i] }, np)
}

func dotF16AVX(a []float32, b []uint16) float32 {
	b = b[:len(a)]
	np := len(a) &^ 63
	var s float64
	if np > 0 {
		s = float64(dotF16LanesAVX512(&a[0], &b[0], np))
	}
	for i := np; i < len(a); i++ {
		s += float64(a[i] * f16Table[b[i]])
	}
	return float32(s)
}

func reduceLanesAVX(out, lanes []float32) {
	if len(out) > 0 {
		lanes = lanes[:64*len(out)]
		reduceLanesAVX512(&out[0], &lanes[0], len(out))
	}
}
