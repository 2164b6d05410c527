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

// Softmax normalises x in place into probabilities.
func Softmax(x []float32) { def.softmax(x) }

// SiLU computes dst = x·sigmoid(x).
func SiLU(dst, x []float32) {
	checkLen("SiLU", len(dst), len(x))
	def.silu(dst, x)
}

// SwiGLU computes dst = silu(gate)·up elementwise. dst may alias gate or up.
func SwiGLU(dst, gate, up []float32) {
	checkLen("SwiGLU", len(dst), len(gate), len(up))
	def.swiGLU(dst, gate, up)
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
