package gguf

import "math"

// MXFP4 (OCP Microscaling Formats v1.0, FP4 E2M1 elements with a shared
// E8M0 scale), as ggml stores it (ggml-common.h's block_mxfp4,
// ggml-quants.c's quantize_row_mxfp4_ref and dequantize_row_mxfp4):
//
//	e u8 | qs[16]   element j = kvaluesMXFP4[qs[j]&15]·d,
//	                element j+16 = kvaluesMXFP4[qs[j]>>4]·d,  d = 2^(e−128)
//
// The E2M1 values are stored doubled (0, ±0.5, ±1, ±1.5, ±2, ±3, ±4, ±6 as
// the integers 0, ±1, …, ±12), so the scale is half the E8M0 value
// (ggml's GGML_E8M0_TO_FP32_HALF); the integers let the kernels multiply
// them with int8 activations exactly.

// KValuesMXFP4 are the doubled E2M1 values of the 16 codes (ggml's
// kvalues_mxfp4): code 8 is −0.
var KValuesMXFP4 = [16]int8{0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12}

// E8M0Half returns half the E8M0 scale e, 2^(e−128), as ggml's
// ggml_e8m0_to_fp32_half: float32 subnormals for e < 2 (e = 0 gives
// 2^−128, e = 1 gives 2^−127), e = 255 is not treated as NaN.
func E8M0Half(e uint8) float32 {
	if e < 2 {
		return math.Float32frombits(0x00200000 << e)
	}
	return math.Float32frombits(uint32(e-1) << 23)
}

// dequantMXFP4: y = kvalue·d, one rounding (exact unless it underflows).
func dequantMXFP4(b []byte, y []float32) {
	d := E8M0Half(b[0])
	for j, q := range b[1:17] {
		y[j] = float32(KValuesMXFP4[q&15]) * d
		y[j+16] = float32(KValuesMXFP4[q>>4]) * d
	}
}

// quantMXFP4 is ggml's quantize_row_mxfp4_ref: e = floor(log2f(amax)) −
// 2 + 127 (0 for an all-zero block), d = E8M0Half(e), and each element the
// code whose doubled value times d is nearest (the first of equals, codes
// in order 0..15, so +0 before −0). log2f is glibc's, correctly rounded
// for float32 arguments away from 1; it is taken as the float64 log2
// rounded to float32, which floors alike except within an ulp of a power
// of two, where both give the power's exponent. The scale never
// overflows: the largest float32 gives e = 252.
func quantMXFP4(x []float32, b []byte) bool {
	var amax float32
	for _, v := range x {
		amax = max(amax, float32(math.Abs(float64(v))))
	}
	var e uint8
	if amax > 0 {
		l := math.Floor(float64(float32(math.Log2(float64(amax)))))
		e = uint8(int(l) - 2 + 127) // ggml casts the float; tiny blocks wrap as its cast on x86
	}
	d := E8M0Half(e)
	b[0] = e
	for j := range 16 {
		b[1+j] = bestMXFP4(x[j], d) | bestMXFP4(x[j+16], d)<<4
	}
	return true
}

// bestMXFP4 is ggml's best_index_mxfp4: the first code minimising
// |kvalue·d − v|, in float32 operations.
func bestMXFP4(v, d float32) uint8 {
	best := 0
	bestErr := float32(math.Abs(float64(float32(KValuesMXFP4[0])*d - v)))
	for i := 1; i < 16; i++ {
		err := float32(math.Abs(float64(float32(KValuesMXFP4[i])*d - v)))
		if err < bestErr {
			best, bestErr = i, err
		}
	}
	return uint8(best)
}
