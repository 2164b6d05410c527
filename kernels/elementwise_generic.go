package kernels

import "math"

// Row-wise and elementwise kernels, computed as ggml's CPU ops do.

// rmsNormGeneric: dst = (x · 1/sqrt(mean(x²)+eps)) · w for one row.
//
// bit-exact contract (ggml_compute_forward_rms_norm_f32 fused with the
// weight mul): the squares are rounded to float32 and summed in float64 in
// index order; mean = float32(sum/n); scale = 1/sqrtf(mean+eps) in float32;
// dst[i] = (x[i]·scale)·w[i], each product rounded.
func rmsNormGeneric(dst, x, w []float32, eps float32) {
	x, w = x[:len(dst)], w[:len(dst)]
	scale := rmsScale(x, eps)
	for i, v := range x {
		dst[i] = (v * scale) * w[i]
	}
}

// rmsScale returns 1/sqrtf(mean(x²)+eps) as rmsNormGeneric's contract
// computes it (every implementation's RMSNorm shares it).
func rmsScale(x []float32, eps float32) float32 {
	var sum float64
	for _, v := range x {
		sum += float64(v * v)
	}
	mean := float32(sum / float64(len(x)))
	return 1 / float32(math.Sqrt(float64(mean+eps)))
}

// softmaxGeneric normalises one row x in place.
//
// bit-exact contract (ggml_compute_forward_soft_max_f32 after its scale,
// i.e. ggml_vec_soft_max_f32 on AVX-512): m = max(x); every full block of
// 16 elements takes e = vexp(x−m), reduces the block with reduce16 in
// float32 and adds that to a float64 sum; the n mod 16 trailing elements
// take expf(x−m) and are added to the sum one by one; finally every e is
// multiplied by float32(1/sum).
func softmaxGeneric(x []float32) {
	if len(x) == 0 {
		return
	}
	mx := float32(math.Inf(-1))
	for _, v := range x {
		mx = max(mx, v)
	}
	sum := softmaxExp(x, mx)
	s := float32(1 / sum)
	for i := range x {
		x[i] *= s
	}
}

// softmaxExp replaces x by exp(x−mx) as ggml_vec_soft_max_f32 and returns
// the float64 sum.
func softmaxExp(x []float32, mx float32) float64 {
	var sum float64
	i := 0
	for ; i+16 <= len(x); i += 16 {
		b := (*[16]float32)(x[i:])
		for l, v := range b {
			b[l] = vexp(v - mx)
		}
		sum += float64(reduce16(b))
	}
	for ; i < len(x); i++ {
		x[i] = expf(x[i] - mx)
		sum += float64(x[i])
	}
	return sum
}

// siluGeneric: dst = x / (1 + exp(−x)) for one row.
//
// bit-exact contract (ggml_vec_silu_f32 on AVX-512): elements of full
// 16-element blocks (counted from the row start) use vsilu, the n mod 16
// trailing ones silu (expf).
func siluGeneric(dst, x []float32) {
	x = x[:len(dst)]
	full := len(dst) &^ 15
	for i, v := range x[:full] {
		dst[i] = vsilu(v)
	}
	for i := full; i < len(dst); i++ {
		dst[i] = silu(x[i])
	}
}

// swiGLUGeneric: dst = silu(gate) · up for one row.
//
// bit-exact contract (ggml_vec_swiglu_f32 on AVX-512): vsilu(gate[i])·up[i]
// on full 16-element blocks from the row start, silu(gate[i])·up[i] on the
// n mod 16 trailing elements; one rounding per product.
func swiGLUGeneric(dst, gate, up []float32) {
	gate, up = gate[:len(dst)], up[:len(dst)]
	full := len(dst) &^ 15
	for i := range full {
		dst[i] = vsilu(gate[i]) * up[i]
	}
	for i := full; i < len(dst); i++ {
		dst[i] = silu(gate[i]) * up[i]
	}
}

// addGeneric: dst += x.
func addGeneric(dst, x []float32) {
	x = x[:len(dst)]
	for i := range dst {
		dst[i] += x[i]
	}
}

// mulGeneric: dst *= x.
func mulGeneric(dst, x []float32) {
	x = x[:len(dst)]
	for i := range dst {
		dst[i] *= x[i]
	}
}
