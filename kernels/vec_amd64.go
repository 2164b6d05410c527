//go:build amd64 && !noasm

package kernels

// Wrappers of the generated float vector kernels (vec_amd64.s) with the
// generic kernels' signatures and bounds checks. Block kernels cover whole
// 16- or 64-element blocks; the tails run the generic scalar code, in the
// generic order.

func axpyF32AVX(dst []float32, a float32, x []float32) { axpyWhole(dst, a, x, axpyF32AVX512) }

func axpyF16AVX(dst []float32, a float32, x []uint16) { axpyWhole(dst, a, x, axpyF16AVX512) }

func axpyBF16AVX(dst []float32, a float32, x []uint16) { axpyWhole(dst, a, x, axpyBF16AVX512) }

func madF16AVX(acc []uint16, a float32, x []uint16) { axpyWhole(acc, a, x, madF16AVX512) }

// axpyWhole runs a kernel of the axpy shape (dst, a, x) that takes any
// length on all of dst.
func axpyWhole[D, X any](dst []D, a float32, x []X, asm func(*D, float32, *X, int)) {
	if len(dst) > 0 {
		x = x[:len(dst)]
		asm(&dst[0], a, &x[0], len(dst))
	}
}

func scaleF16AVX(acc []uint16, a float32) {
	if len(acc) > 0 {
		scaleF16AVX512(&acc[0], a, len(acc))
	}
}

func toF16AVX(dst []uint16, x []float32) {
	if len(dst) > 0 {
		x = x[:len(dst)]
		toF16AVX512(&dst[0], &x[0], len(dst))
	}
}

// ropeAVX is ropeGeneric.
func ropeAVX(v []float32, neox bool, cos, sin []float32) {
	half := len(cos)
	if half == 0 {
		return
	}
	v, sin = v[:2*half], sin[:half]
	if neox {
		ropeNeoXAVX512(&v[0], &v[half], &cos[0], &sin[0], half)
	} else {
		ropeNormAVX512(&v[0], &cos[0], &sin[0], half)
	}
}

func ropeAVX2(v []float32, neox bool, cos, sin []float32) {
	half := len(cos)
	if half == 0 {
		return
	}
	v, sin = v[:2*half], sin[:half]
	done := half &^ 3
	if neox {
		done = half &^ 7
		ropeNeoXAVX2(&v[0], &v[half], &cos[0], &sin[0], half)
	} else {
		ropeNormAVX2(&v[0], &cos[0], &sin[0], half)
	}
	ropeFrom(v, neox, cos, sin, done)
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
	scale := rmsScale(x, eps)
	if len(dst) > 0 {
		rmsScaleAVX512(&dst[0], &x[0], &w[0], len(dst), scale)
	}
}

func reduceLanesAVX(out, lanes []float32) {
	if len(out) > 0 {
		lanes = lanes[:64*len(out)]
		reduceLanesAVX512(&out[0], &lanes[0], len(out))
	}
}
