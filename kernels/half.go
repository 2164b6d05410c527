package kernels

import "math"

// f16Table maps every IEEE half bit pattern to its float32 value. It is
// filled once at package initialisation and never written again.
var f16Table = func() *[1 << 16]float32 {
	var t [1 << 16]float32
	for i := range t {
		t[i] = f16Decode(uint16(i))
	}
	return &t
}()

// f16Decode converts an IEEE half to float32 exactly (every half is a float32).
func f16Decode(h uint16) float32 {
	sign := uint32(h&0x8000) << 16
	exp := uint32(h>>10) & 0x1f
	man := uint32(h & 0x3ff)
	switch {
	case exp == 0x1f: // inf or NaN, payload kept
		return math.Float32frombits(sign | 0x7f800000 | man<<13)
	case exp != 0: // normal
		return math.Float32frombits(sign | (exp+112)<<23 | man<<13)
	case man == 0: // signed zero
		return math.Float32frombits(sign)
	}
	// subnormal: man × 2^-24, exact in float32
	v := float32(man) * (1.0 / (1 << 24))
	if sign != 0 {
		v = -v
	}
	return v
}

// F16ToF32 returns the float32 value of an IEEE half bit pattern.
func F16ToF32(h uint16) float32 { return f16Table[h] }

// F32ToF16 rounds f to the nearest IEEE half, ties to even (as x86 F16C's
// VCVTPS2PH with the default rounding mode, which ggml uses). Values beyond
// the half range become ±Inf; NaN stays a quiet NaN.
func F32ToF16(f float32) uint16 {
	b := math.Float32bits(f)
	sign := uint16(b>>16) & 0x8000
	exp := int32(b>>23) & 0xff
	man := b & 0x7fffff
	if exp == 0xff {
		if man != 0 {
			return sign | 0x7e00 | uint16(man>>13)
		}
		return sign | 0x7c00
	}
	e := exp - 127 + 15
	if e >= 0x1f {
		return sign | 0x7c00
	}
	if e <= 0 {
		// Subnormal half: value / 2^-24 = (man|1<<23) >> (14-e).
		shift := uint32(14 - e)
		if shift > 24 {
			return sign
		}
		m := man | 0x800000
		return sign | uint16(roundShift(m, shift))
	}
	h := uint32(e)<<10 | man>>13
	rem := man & 0x1fff
	if rem > 0x1000 || (rem == 0x1000 && h&1 == 1) {
		h++ // a carry into the exponent is the correct next value (up to Inf)
	}
	return sign | uint16(h)
}

// roundShift returns m >> shift rounded to nearest, ties to even.
func roundShift(m, shift uint32) uint32 {
	q := m >> shift
	rem := m & (1<<shift - 1)
	half := uint32(1) << (shift - 1)
	if rem > half || (rem == half && q&1 == 1) {
		q++
	}
	return q
}

// BF16ToF32 returns the float32 value of a bfloat16 bit pattern.
func BF16ToF32(h uint16) float32 { return math.Float32frombits(uint32(h) << 16) }

// F32ToBF16 rounds f to the nearest bfloat16, ties to even (as ggml's
// GGML_FP32_TO_BF16). NaN stays a quiet NaN.
func F32ToBF16(f float32) uint16 {
	u := math.Float32bits(f)
	if u&0x7fffffff > 0x7f800000 {
		return uint16(u>>16) | 64
	}
	return uint16((u + (0x7fff + (u>>16)&1)) >> 16)
}

// roundF16 returns f rounded to half precision, as a float32.
func roundF16(f float32) float32 { return f16Table[F32ToF16(f)] }

// roundBF16 returns f rounded to bfloat16, as a float32.
func roundBF16(f float32) float32 { return BF16ToF32(F32ToBF16(f)) }
