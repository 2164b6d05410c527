package kernels

import "fmt"

// RMSNorm normalises every row of x (rows of len(w)) into dst:
// dst = x / sqrt(mean(x²) + eps) · w. dst and x may be the same slice.
func RMSNorm(dst, x, w []float32, eps float32) { rmsNormRows(def, dst, x, w, eps) }

func rmsNormRows(k *impl, dst, x, w []float32, eps float32) {
	d := len(w)
	if d == 0 || len(x)%d != 0 || len(dst) != len(x) {
		panic(fmt.Sprintf("kernels: RMSNorm of %d values into %d with a %d-element weight", len(x), len(dst), d))
	}
	for r := 0; r < len(x); r += d {
		k.rmsNorm(dst[r:r+d], x[r:r+d], w, eps)
	}
}

// SiLU computes dst = x·sigmoid(x) on rows of cols elements (ggml's vector
// blocks start at every row). dst may alias x.
func SiLU(dst, x []float32, cols int) {
	checkLen("SiLU", len(dst), len(x))
	checkRows("SiLU", len(dst), cols)
	for r := 0; r < len(dst); r += cols {
		def.silu(dst[r:r+cols], x[r:r+cols])
	}
}

// SwiGLU computes dst = silu(gate)·up elementwise on rows of cols elements
// (ggml's vector blocks start at every row). dst may alias gate or up.
func SwiGLU(dst, gate, up []float32, cols int) {
	checkLen("SwiGLU", len(dst), len(gate), len(up))
	checkRows("SwiGLU", len(dst), cols)
	for r := 0; r < len(dst); r += cols {
		def.swiGLU(dst[r:r+cols], gate[r:r+cols], up[r:r+cols])
	}
}

func checkRows(op string, n, cols int) {
	if cols <= 0 || n%cols != 0 {
		panic(fmt.Sprintf("kernels: %s of %d values in rows of %d", op, n, cols))
	}
}

// Add computes dst += x (the residual add).
func Add(dst, x []float32) {
	checkLen("Add", len(dst), len(x))
	def.add(dst, x)
}

// Mul computes dst *= x elementwise.
func Mul(dst, x []float32) {
	checkLen("Mul", len(dst), len(x))
	def.mul(dst, x)
}

func checkLen(op string, n int, others ...int) {
	for _, m := range others {
		if m != n {
			panic(fmt.Sprintf("kernels: %s length mismatch %d vs %d", op, n, m))
		}
	}
}

// Scale multiplies x by s elementwise, one rounding per element (ggml's
// ggml_scale: ggml_vec_scale_f32).
func Scale(x []float32, s float32) {
	for i := range x {
		x[i] *= s
	}
}
