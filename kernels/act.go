package kernels

import "fmt"

// actKind is the format activations are converted to before they meet a
// weight row: ggml's vec_dot_type of the weight type.
type actKind int

const (
	actF32  actKind = iota // plain float32
	actF16                 // float32 values rounded to half precision
	actBF16                // float32 values rounded to bfloat16
	actQ8_0                // 32-element blocks: int8 quants, scale d (f16-rounded)
	actQ8_1                // as Q8_0 plus s = f16(d·Σq) per block
	actQ8K                 // 256-element blocks: int8 quants, f32 scale, 16-element sums
	numActKinds
)

// actBlock is the block length of the quantized kinds.
func (k actKind) block() int {
	switch k {
	case actQ8_0, actQ8_1:
		return 32
	case actQ8K:
		return 256
	}
	return 1
}

// actRow is one row of converted activations. Only the fields of its kind
// are set; they are views into an actRows buffer.
type actRow struct {
	f     []float32 // (cols) float kinds
	qs    []int8    // (cols) quantized kinds
	d     []float32 // (cols/block) block scales
	s     []float32 // (cols/32) Q8_1: f16(d·Σq) as float32
	bsums []int16   // (cols/16) Q8_K: sums of 16 consecutive quants
}

// actRows holds n rows of converted activations. It is scratch: buffers
// grow to the largest shape seen and are reused.
type actRows struct {
	kind  actKind
	cols  int
	f     []float32 // (n, cols)
	qs    []int8    // (n, cols)
	d     []float32 // (n, cols/block)
	s     []float32 // (n, cols/32)
	bsums []int16   // (n, cols/16)
	rows  []actRow  // (n) views
	rec   []byte    // (n, cols/32, gemm32Rec) accelerated kernels' records
}

// prepare converts x (n rows of cols) to the format of kind with the
// quantizers of k.
func (a *actRows) prepare(k *impl, kind actKind, x []float32, n, cols int) {
	a.layout(kind, n, cols)
	a.convert(k, x, 0, n)
}

// layout sizes a's buffers for n rows of cols in kind's format and points
// the row views into them, converting nothing.
func (a *actRows) layout(kind actKind, n, cols int) {
	if cols%kind.block() != 0 {
		panic(fmt.Sprintf("kernels: %d columns is not a whole number of %d-element activation blocks", cols, kind.block()))
	}
	a.kind, a.cols = kind, cols
	nb := cols / kind.block()
	a.rows = grow(a.rows, n)
	switch kind {
	case actF32, actF16, actBF16:
		a.f = grow(a.f, n*cols)
	default:
		a.qs = grow(a.qs, n*cols)
		a.d = grow(a.d, n*nb)
		if kind == actQ8_1 {
			a.s = grow(a.s, n*nb)
		}
		if kind == actQ8K {
			a.bsums = grow(a.bsums, n*cols/16)
		}
	}
	for t := range n {
		r := &a.rows[t]
		*r = actRow{}
		switch kind {
		case actF32, actF16, actBF16:
			r.f = a.f[t*cols : (t+1)*cols]
		default:
			r.qs = a.qs[t*cols : (t+1)*cols]
			r.d = a.d[t*nb : (t+1)*nb]
			if kind == actQ8_1 {
				r.s = a.s[t*nb : (t+1)*nb]
			}
			if kind == actQ8K {
				r.bsums = a.bsums[t*cols/16 : (t+1)*cols/16]
			}
		}
	}
}

// convert converts rows [t0, t1) of x (rows of a.cols) into a's laid-out
// rows with the quantizers of k. Disjoint ranges may run concurrently.
func (a *actRows) convert(k *impl, x []float32, t0, t1 int) {
	for t := t0; t < t1; t++ {
		k.quantize[a.kind](&a.rows[t], x[t*a.cols:(t+1)*a.cols])
	}
}

// grow returns s resized to n elements, reallocating only when the capacity
// is too small. Contents are not preserved meaningfully.
func grow[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	return s[:n]
}
