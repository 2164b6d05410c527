package kernels

import "math"

// LayerNorm normalises one row (BERT's LayerNorm, llama.cpp's LLM_NORM):
// dst = (x − mean)/√(var + eps)·w + b, w and b of len(x) (b may be nil).
// dst may alias x. As ggml_norm then ggml_mul and ggml_add: the mean and
// the variance summed in float64, the scale 1/√(var+eps) in float32.
func LayerNorm(dst, x, w, b []float32, eps float32) {
	checkLen("LayerNorm", len(dst), len(x), len(w))
	n := len(x)
	var sum float64
	for _, v := range x {
		sum += float64(v)
	}
	mean := float32(sum / float64(n))
	var ss float64
	for i, v := range x {
		d := v - mean
		dst[i] = d
		ss += float64(d * d)
	}
	scale := 1 / float32(math.Sqrt(float64(float32(ss/float64(n))+eps)))
	for i := range dst {
		dst[i] = dst[i] * scale * w[i]
	}
	if b != nil {
		for i := range dst {
			dst[i] += b[i]
		}
	}
}

// GELU computes dst = gelu(x) elementwise (ggml_vec_gelu_f32 with
// GGML_GELU_FP16: x ≤ −10 gives 0, x ≥ 10 gives x, otherwise x rounded to
// half precision and looked up in ggml's half-precision GELU table, as
// GeGLU's gate). dst may alias x.
func GELU(dst, x []float32) {
	checkLen("GELU", len(dst), len(x))
	t := geluTable()
	for i, v := range x[:len(dst)] {
		switch {
		case v <= -10:
			dst[i] = 0
		case v >= 10:
			dst[i] = v
		default:
			dst[i] = f16Table[t[F32ToF16(v)]]
		}
	}
}
