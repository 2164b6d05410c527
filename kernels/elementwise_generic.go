package kernels

import "math"

// Row-wise and elementwise kernels, computed as ggml's CPU ops do.

// rmsNormGeneric: dst = (x · 1/sqrt(mean(x²)+eps)) · w for one row. The sum
// of squares is accumulated in float64 in index order (as ggml).
func rmsNormGeneric(dst, x, w []float32, eps float32) {
	x, w = x[:len(dst)], w[:len(dst)]
	var sum float64
	for _, v := range x {
		sum += float64(v * v)
	}
	mean := float32(sum / float64(len(x)))
	scale := 1 / float32(math.Sqrt(float64(mean+eps)))
	for i, v := range x {
		dst[i] = (v * scale) * w[i]
	}
}

// softmaxGeneric normalises x in place: exp(x−max), summed in float64,
// then scaled by float32(1/sum).
func softmaxGeneric(x []float32) {
	if len(x) == 0 {
		return
	}
	mx := float32(math.Inf(-1))
	for _, v := range x {
		mx = max(mx, v)
	}
	var sum float64
	for i, v := range x {
		e := exp32(v - mx)
		x[i] = e
		sum += float64(e)
	}
	s := float32(1 / sum)
	for i := range x {
		x[i] *= s
	}
}

// siluGeneric: dst = x / (1 + exp(−x)).
func siluGeneric(dst, x []float32) {
	x = x[:len(dst)]
	for i, v := range x {
		dst[i] = silu(v)
	}
}

// swiGLUGeneric: dst = silu(gate) · up.
func swiGLUGeneric(dst, gate, up []float32) {
	gate, up = gate[:len(dst)], up[:len(dst)]
	for i := range dst {
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

func silu(v float32) float32 { return v / (1 + exp32(-v)) }

func exp32(v float32) float32 { return float32(math.Exp(float64(v))) }
