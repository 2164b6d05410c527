package gguf

import "math"

// F16ToF32 converts an IEEE 754 half-precision value to float32 exactly.
func F16ToF32(h uint16) float32 {
	sign := uint32(h&0x8000) << 16
	exp := uint32(h>>10) & 0x1f
	mant := uint32(h & 0x3ff)
	switch {
	case exp == 0x1f: // Inf or NaN; NaN payload kept in the top mantissa bits
		return math.Float32frombits(sign | 0x7f800000 | mant<<13)
	case exp != 0: // normal
		return math.Float32frombits(sign | (exp+127-15)<<23 | mant<<13)
	case mant == 0:
		return math.Float32frombits(sign)
	}
	// Subnormal: mant · 2^-24, exact in float32.
	f := float32(mant) * (1.0 / (1 << 24))
	if sign != 0 {
		return -f
	}
	return f
}

// F32ToF16 converts a float32 to half precision, rounding to nearest even
// (as F16C's vcvtps2ph with rounding mode 0). Values too large become ±Inf;
// NaN stays NaN (quiet).
func F32ToF16(f float32) uint16 {
	b := math.Float32bits(f)
	sign := uint16(b>>16) & 0x8000
	exp := int(b>>23) & 0xff
	mant := b & 0x7fffff
	if exp == 0xff {
		if mant != 0 {
			return sign | 0x7e00 | uint16(mant>>13)
		}
		return sign | 0x7c00
	}
	e := exp - 127 + 15 // half exponent
	if e >= 0x1f {
		return sign | 0x7c00
	}
	if e <= 0 { // subnormal half (or zero)
		if e < -10 {
			return sign // below half the smallest subnormal: rounds to zero
		}
		m := mant | 0x800000  // 24-bit significand
		shift := uint(14 - e) // 14..24
		return sign | uint16(roundShift(m, shift))
	}
	// Normal: a carry out of the mantissa correctly bumps the exponent (up to Inf).
	return sign | uint16(roundShift(uint32(e)<<23|mant, 13))
}

// roundShift returns v >> s rounded to nearest, ties to even.
func roundShift(v uint32, s uint) uint32 {
	r := v >> s
	rem := v & (1<<s - 1)
	half := uint32(1) << (s - 1)
	if rem > half || rem == half && r&1 == 1 {
		r++
	}
	return r
}

// BF16ToF32 converts a bfloat16 to float32 exactly.
func BF16ToF32(h uint16) float32 { return math.Float32frombits(uint32(h) << 16) }

// F32ToBF16 converts a float32 to bfloat16, rounding to nearest even; NaN
// stays NaN (quiet), as ggml's GGML_FP32_TO_BF16.
func F32ToBF16(f float32) uint16 {
	u := math.Float32bits(f)
	if u&0x7fffffff > 0x7f800000 {
		return uint16(u>>16) | 0x40
	}
	return uint16((u + 0x7fff + (u>>16)&1) >> 16)
}
