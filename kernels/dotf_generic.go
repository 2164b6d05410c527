package kernels

import (
	"encoding/binary"
	"math"
)

// Float dot products. Lane k of the eight accumulators takes elements
// i ≡ k (mod 8), each updated by fma in increasing i; lanes reduce with
// hsum8.

// dotF32WGeneric: F32 weight row (little-endian bytes) · float32 row.
func dotF32WGeneric(w []byte, a *actRow) float32 {
	var acc [8]float32
	for i, x := range a.f {
		acc[i&7] = fma32(math.Float32frombits(binary.LittleEndian.Uint32(w[4*i:])), x, acc[i&7])
	}
	return hsum8(&acc)
}

// dotF16WGeneric: F16 weight row · activations rounded to F16. Products of
// two halves are exact in float32.
func dotF16WGeneric(w []byte, a *actRow) float32 {
	var acc [8]float32
	for i, x := range a.f {
		acc[i&7] = fma32(f16Table[le16(w[2*i:])], x, acc[i&7])
	}
	return hsum8(&acc)
}

// dotBF16WGeneric: BF16 weight row · activations rounded to BF16.
func dotBF16WGeneric(w []byte, a *actRow) float32 {
	var acc [8]float32
	for i, x := range a.f {
		acc[i&7] = fma32(BF16ToF32(le16(w[2*i:])), x, acc[i&7])
	}
	return hsum8(&acc)
}

// dotF32Generic returns a·b over len(a) elements (b at least as long).
func dotF32Generic(a, b []float32) float32 {
	var acc [8]float32
	b = b[:len(a)]
	for i, x := range a {
		acc[i&7] = fma32(x, b[i], acc[i&7])
	}
	return hsum8(&acc)
}

// dotF16Generic returns a·b for half-precision b.
func dotF16Generic(a []float32, b []uint16) float32 {
	var acc [8]float32
	b = b[:len(a)]
	for i, x := range a {
		acc[i&7] = fma32(x, f16Table[b[i]], acc[i&7])
	}
	return hsum8(&acc)
}

// dotBF16Generic returns a·b for bfloat16 b.
func dotBF16Generic(a []float32, b []uint16) float32 {
	var acc [8]float32
	b = b[:len(a)]
	for i, x := range a {
		acc[i&7] = fma32(x, BF16ToF32(b[i]), acc[i&7])
	}
	return hsum8(&acc)
}

// axpyF32Generic computes dst[i] = fma(a, x[i], dst[i]).
func axpyF32Generic(dst []float32, a float32, x []float32) {
	x = x[:len(dst)]
	for i := range dst {
		dst[i] = fma32(a, x[i], dst[i])
	}
}

// madF16Generic computes acc[i] = f16(fma(x[i], a, acc[i])) on a
// half-precision accumulator (ggml_vec_mad_f16).
func madF16Generic(acc []uint16, a float32, x []uint16) {
	x = x[:len(acc)]
	for i := range acc {
		acc[i] = F32ToF16(fma32(f16Table[x[i]], a, f16Table[acc[i]]))
	}
}

// scaleF16Generic computes acc[i] = f16(acc[i]·a) (ggml_vec_scale_f16).
func scaleF16Generic(acc []uint16, a float32) {
	for i, v := range acc {
		acc[i] = F32ToF16(f16Table[v] * a)
	}
}

// scaleF32Generic computes x[i] *= a.
func scaleF32Generic(x []float32, a float32) {
	for i := range x {
		x[i] *= a
	}
}

// axpyF16Generic is axpyF32Generic for half-precision x.
func axpyF16Generic(dst []float32, a float32, x []uint16) {
	x = x[:len(dst)]
	for i := range dst {
		dst[i] = fma32(a, f16Table[x[i]], dst[i])
	}
}

// axpyBF16Generic is axpyF32Generic for bfloat16 x.
func axpyBF16Generic(dst []float32, a float32, x []uint16) {
	x = x[:len(dst)]
	for i := range dst {
		dst[i] = fma32(a, BF16ToF32(x[i]), dst[i])
	}
}
