package kernels

import (
	"encoding/binary"
	"math"
)

// Float dot products and vector updates.
//
// bit-exact contract (ggml_vec_dot_f32 / ggml_vec_dot_f16 on AVX-512): the
// first n − n mod 64 elements go to 64 float32 lanes, element i to lane
// i mod 64, each lane updated by a fused multiply-add in increasing i; the
// lanes are summed by reduce64. The n mod 64 trailing elements are then
// added one by one: for F16 each float32 product is added to the float64
// value of that sum and the total rounded to float32 at the end; for F32
// see dotF32Tail. (BF16: see dotBF16Generic.)

// dotLanes accumulates the full 64-element steps of a·b where b's elements
// come from at(i), and returns the lanes' sum and the number of elements
// consumed.
func dotLanes(a []float32, at func(int) float32) (float32, int) {
	np := len(a) &^ 63
	if np == 0 {
		return 0, 0
	}
	var acc [64]float32
	for i := 0; i < np; i += 64 {
		for k, x := range a[i : i+64] {
			if r, ok := fmaTry(x, at(i+k), acc[k]); ok {
				acc[k] = r
			} else {
				acc[k] = fma32Slow(x, at(i+k), acc[k])
			}
		}
	}
	return reduce64(&acc), np
}

// dotF32Generic returns a·b over len(a) elements (b at least as long).
func dotF32Generic(a, b []float32) float32 {
	b = b[:len(a)]
	sum, np := dotLanes(a, func(i int) float32 { return b[i] })
	return dotF32Tail(sum, a, func(i int) float32 { return b[i] }, np)
}

// dotF32Tail adds the trailing products a[i]·at(i), i ≥ np, to sum as
// GCC's vectorisation of ggml's scalar loop does: products of whole groups
// of four are rounded and added in order; the last (n−np) mod 4 are fused.
func dotF32Tail(sum float32, a []float32, at func(int) float32, np int) float32 {
	split := np + (len(a)-np)&^3
	for i := np; i < split; i++ {
		sum += float32(a[i] * at(i)) // rounded product: no fusion
	}
	for i := split; i < len(a); i++ {
		sum = fma32(a[i], at(i), sum)
	}
	return sum
}

// dotF16Generic returns a·b for half-precision b. Callers round a to half
// precision first (ggml converts the activations to F16), so every product
// is exact. (The attention scores' hot loop: written out without dotLanes.)
func dotF16Generic(a []float32, b []uint16) float32 {
	b = b[:len(a)]
	np := len(a) &^ 63
	var s float64
	if np > 0 {
		var acc [64]float32
		for i := 0; i < np; i += 64 {
			x, y := (*[64]float32)(a[i:]), (*[64]uint16)(b[i:])
			for k := range acc {
				if r, ok := fmaTry(x[k], f16Table[y[k]], acc[k]); ok {
					acc[k] = r
				} else {
					acc[k] = fma32Slow(x[k], f16Table[y[k]], acc[k])
				}
			}
		}
		s = float64(reduce64(&acc))
	}
	for i := np; i < len(a); i++ {
		s += float64(a[i] * f16Table[b[i]])
	}
	return float32(s)
}

// dotBF16Generic returns a·b for bfloat16 b; callers round a to bfloat16.
//
// bit-exact contract (ggml_vec_dot_bf16 with AVX512-BF16's VDPBF16PS): each
// 64-element step feeds two registers of 16 float32 lanes, elements
// 32r+2j and 32r+2j+1 to lane j of register r; every VDPBF16PS adds the odd
// element's product, then the even one's, each sum rounded (products of
// bfloat16 values are exact). Both registers are reduced by reduce16 and
// added to a float64 sum, first then second; the n mod 64 trailing
// products are added to it one by one; the total is rounded to float32.
func dotBF16Generic(a []float32, b []uint16) float32 {
	b = b[:len(a)]
	return dotBF16Lanes(a, func(i int) float32 { return BF16ToF32(b[i]) })
}

// dotBF16Lanes is dotBF16Generic with b's elements from at(i).
func dotBF16Lanes(a []float32, at func(int) float32) float32 {
	np := len(a) &^ 63
	var c [2][16]float32
	for i := 0; i < np; i += 64 {
		for r := range c {
			for j := range c[r] {
				e := i + 32*r + 2*j
				c[r][j] += a[e+1] * at(e+1) // exact products: one rounding
				c[r][j] += a[e] * at(e)
			}
		}
	}
	var s float64
	if np > 0 {
		s = float64(reduce16(&c[0]))
		s += float64(reduce16(&c[1]))
	}
	for i := np; i < len(a); i++ {
		s += float64(a[i] * at(i))
	}
	return float32(s)
}

// dotF32WGeneric: F32 weight row (little-endian bytes) · float32 row, as
// dotF32Generic.
func dotF32WGeneric(w []byte, a *actRow) float32 {
	at := func(i int) float32 { return math.Float32frombits(binary.LittleEndian.Uint32(w[4*i:])) }
	sum, np := dotLanes(a.f, at)
	return dotF32Tail(sum, a.f, at, np)
}

// dotF16WGeneric: F16 weight row · activations rounded to F16, as
// dotF16Generic.
func dotF16WGeneric(w []byte, a *actRow) float32 {
	at := func(i int) float32 { return f16Table[le16(w[2*i:])] }
	sum, np := dotLanes(a.f, at)
	s := float64(sum)
	for i := np; i < len(a.f); i++ {
		s += float64(a.f[i] * at(i))
	}
	return float32(s)
}

// dotBF16WGeneric: BF16 weight row · activations rounded to BF16, as
// dotBF16Generic.
func dotBF16WGeneric(w []byte, a *actRow) float32 {
	return dotBF16Lanes(a.f, func(i int) float32 { return BF16ToF32(le16(w[2*i:])) })
}

// axpyF32Generic computes dst[i] = fma(a, x[i], dst[i]).
func axpyF32Generic(dst []float32, a float32, x []float32) {
	x = x[:len(dst)]
	for i := range dst {
		if r, ok := fmaTry(a, x[i], dst[i]); ok {
			dst[i] = r
		} else {
			dst[i] = fma32Slow(a, x[i], dst[i])
		}
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
		if r, ok := fmaTry(a, f16Table[x[i]], dst[i]); ok {
			dst[i] = r
		} else {
			dst[i] = fma32Slow(a, f16Table[x[i]], dst[i])
		}
	}
}

// axpyBF16Generic is axpyF32Generic for bfloat16 x.
func axpyBF16Generic(dst []float32, a float32, x []uint16) {
	x = x[:len(dst)]
	for i := range dst {
		if r, ok := fmaTry(a, BF16ToF32(x[i]), dst[i]); ok {
			dst[i] = r
		} else {
			dst[i] = fma32Slow(a, BF16ToF32(x[i]), dst[i])
		}
	}
}

// toF16Generic sets dst[i] = F32ToF16(x[i]) (round to nearest even, as
// F16C's VCVTPS2PH with rounding mode 0).
func toF16Generic(dst []uint16, x []float32) {
	x = x[:len(dst)]
	for i, v := range x {
		dst[i] = F32ToF16(v)
	}
}
