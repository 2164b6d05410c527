package kernels

import "pagoda/gguf"

// f16Table maps every IEEE half bit pattern to its float32 value. It is
// filled once at package initialisation and never written again.
var f16Table = func() *[1 << 16]float32 {
	var t [1 << 16]float32
	for i := range t {
		t[i] = gguf.F16ToF32(uint16(i))
	}
	return &t
}()

// F16ToF32 returns the float32 value of an IEEE half bit pattern.
func F16ToF32(h uint16) float32 { return f16Table[h] }

// F32ToF16 rounds f to the nearest IEEE half, ties to even (as x86 F16C's
// VCVTPS2PH with the default rounding mode, which ggml uses); the format's
// conversion lives in package gguf.
func F32ToF16(f float32) uint16 { return gguf.F32ToF16(f) }

// BF16ToF32 returns the float32 value of a bfloat16 bit pattern.
func BF16ToF32(h uint16) float32 { return gguf.BF16ToF32(h) }

// F32ToBF16 rounds f to the nearest bfloat16, ties to even (as ggml's
// GGML_FP32_TO_BF16). NaN stays a quiet NaN.
func F32ToBF16(f float32) uint16 { return gguf.F32ToBF16(f) }

// roundF16 returns f rounded to half precision, as a float32.
func roundF16(f float32) float32 { return f16Table[F32ToF16(f)] }

// roundBF16 returns f rounded to bfloat16, as a float32.
func roundBF16(f float32) float32 { return BF16ToF32(F32ToBF16(f)) }
