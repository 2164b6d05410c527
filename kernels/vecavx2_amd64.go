//go:build amd64 && !noasm

package kernels

// Wrappers of the AVX2 float vector kernels (vecavx2_amd64.s) with the
// generic kernels' signatures. The assembly covers whole 8-element blocks
// (elementwise kernels, exact in any width) or 64-element steps (dot
// products); the tails run the generic code in the generic order. The dot
// products and exp-based kernels shared with AVX-512 are in lanes_amd64.go.

func axpyF32AVX2w(dst []float32, a float32, x []float32) {
	axpyBlocks8(dst, a, x, axpyF32AVX2, axpyF32Generic)
}

func axpyF16AVX2w(dst []float32, a float32, x []uint16) {
	axpyBlocks8(dst, a, x, axpyF16AVX2, axpyF16Generic)
}

func axpyBF16AVX2w(dst []float32, a float32, x []uint16) {
	axpyBlocks8(dst, a, x, axpyBF16AVX2, axpyBF16Generic)
}

func madF16AVX2w(acc []uint16, a float32, x []uint16) {
	axpyBlocks8(acc, a, x, madF16AVX2, madF16Generic)
}

func scaleF16AVX2w(acc []uint16, a float32) {
	scaleBlocks8(acc, a, scaleF16AVX2, scaleF16Generic)
}

func scaleF32AVX2w(x []float32, a float32) {
	scaleBlocks8(x, a, scaleF32AVX2, scaleF32Generic)
}

func addAVX2w(dst, x []float32) {
	pairBlocks8(dst, x, addAVX2, addGeneric)
}

func mulAVX2w(dst, x []float32) {
	pairBlocks8(dst, x, mulAVX2, mulGeneric)
}

// axpyBlocks8 runs an elementwise kernel of the axpy shape (dst, a, x):
// asm on the whole 8-element blocks, tail on the rest.
func axpyBlocks8[D, X any](dst []D, a float32, x []X, asm func(*D, float32, *X, int), tail func([]D, float32, []X)) {
	x = x[:len(dst)]
	if full := len(dst) &^ 7; full > 0 {
		asm(&dst[0], a, &x[0], full)
		dst, x = dst[full:], x[full:]
	}
	tail(dst, a, x)
}

// scaleBlocks8 is axpyBlocks8 for kernels of the shape (x, a).
func scaleBlocks8[T any](x []T, a float32, asm func(*T, float32, int), tail func([]T, float32)) {
	if full := len(x) &^ 7; full > 0 {
		asm(&x[0], a, full)
		x = x[full:]
	}
	tail(x, a)
}

// pairBlocks8 is axpyBlocks8 for kernels of the shape (dst, x).
func pairBlocks8(dst, x []float32, asm func(*float32, *float32, int), tail func([]float32, []float32)) {
	x = x[:len(dst)]
	if full := len(dst) &^ 7; full > 0 {
		asm(&dst[0], &x[0], full)
		dst, x = dst[full:], x[full:]
	}
	tail(dst, x)
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
