//go:build amd64 && !noasm

package kernels

// Wrappers of the AVX2 float vector kernels (vecavx2_amd64.s) with the
// generic kernels' signatures. The assembly covers whole 8-element blocks
// (elementwise kernels, exact in any width) or 64-element steps (dot
// products); the tails run the generic code in the generic order. The dot
// products and exp-based kernels shared with AVX-512 are in lanes_amd64.go.

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
	scale := rmsScale(x, eps)
	full := len(dst) &^ 7
	if full > 0 {
		rmsScaleAVX2(&dst[0], &x[0], &w[0], full, scale)
	}
	for i := full; i < len(dst); i++ {
		dst[i] = (x[i] * scale) * w[i]
	}
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
