package kernels

import "math"

// Single-precision functions of the C library, reproduced bit for bit:
// ggml calls glibc's cosf/sinf (RoPE) and expf (flash attention, and the
// tails of softmax and SiLU rows), whose results are not always correctly
// rounded. x86-64 glibc 2.36 runs their FMA variants on CPUs with FMA.

// expf reproduces glibc's expf: e^x = 2^(k/32)·2^(r/32) with k = round(x·32/ln2)
// (by the 1.5·2^52 shifter), 2^(k/32) from a 32-entry table and a cubic in
// r, all in float64, rounded to float32 once at the end.
//
// bit-exact contract: results equal glibc 2.36's expf (TestLibmGolden).
func expf(x float32) float32 {
	if abstop12(x) >= abstop12(88) {
		switch {
		case math.Float32bits(x) == math.Float32bits(float32(math.Inf(-1))):
			return 0
		case abstop12(x) >= abstop12(float32(math.Inf(1))):
			return x + x
		case x > 0x1.62e42ep6:
			return float32(math.Inf(1))
		case x < -0x1.9fe368p6:
			return 0
		}
	}
	z := expInvLn2N * float64(x)
	kd := z + expShift52
	ki := math.Float64bits(kd)
	kd -= expShift52
	r := z - kd
	s := math.Float64frombits(exp2fTab[ki%32] + ki<<47)
	c := math.FMA(expP0, r, expP1)
	y := math.FMA(expP2, r, 1)
	y = math.FMA(c, r*r, y)
	return float32(y * s)
}

const (
	expInvLn2N = 0x1.71547652b82fep+0 * 32 // 32/ln 2
	expShift52 = 0x1.8p+52
	expP0      = 0x1.c6af84b912394p-5 / 32 / 32 / 32
	expP1      = 0x1.ebfce50fac4f3p-3 / 32 / 32
	expP2      = 0x1.62e42ff0c52d6p-1 / 32
)

// exp2fTab[i] is the encoding of 2^(i/32) minus i<<47, so that adding k<<47
// gives 2^(k/32) for any integer k in range.
var exp2fTab = [32]uint64{
	0x3ff0000000000000, 0x3fefd9b0d3158574, 0x3fefb5586cf9890f, 0x3fef9301d0125b51,
	0x3fef72b83c7d517b, 0x3fef54873168b9aa, 0x3fef387a6e756238, 0x3fef1e9df51fdee1,
	0x3fef06fe0a31b715, 0x3feef1a7373aa9cb, 0x3feedea64c123422, 0x3feece086061892d,
	0x3feebfdad5362a27, 0x3feeb42b569d4f82, 0x3feeab07dd485429, 0x3feea47eb03a5585,
	0x3feea09e667f3bcd, 0x3fee9f75e8ec5f74, 0x3feea11473eb0187, 0x3feea589994cce13,
	0x3feeace5422aa0db, 0x3feeb737b0cdc5e5, 0x3feec49182a3f090, 0x3feed503b23e255d,
	0x3feee89f995ad3ad, 0x3feeff76f2fb5e47, 0x3fef199bdd85529c, 0x3fef3720dcef9069,
	0x3fef5818dcfba487, 0x3fef7c97337b9b5f, 0x3fefa4afa2a490da, 0x3fefd0765b6e4540,
}

// powf is the C library's powf, rounded once from a float64 power (which
// equals glibc's powf on every RoPE base and dimension count tested).
func powf(x, y float32) float32 { return float32(math.Pow(float64(x), float64(y))) }

// sincosf reproduces glibc's single-precision sincosf, which ggml's RoPE
// cache calls through cosf/sinf. glibc's result is within 0.56 ulp, not
// correctly rounded, so rounding a float64 sine differs from it on about 2%
// of RoPE angles; this is the same computation step for step: the argument
// is reduced to [−π/4, π/4] by a multiple n of π/2 (one fused step below
// 120, a 4/π table with 192 bits beyond), then odd and even polynomials in
// float64 give the sine and cosine, swapped and negated by the quadrant.
//
// bit-exact contract: results equal glibc 2.36's sincosf (checked against
// it on RoPE angles and random arguments by TestSinCosGolden).
func sincosf(y float32) (sin, cos float32) {
	x := float64(y)
	top := abstop12(y)
	switch {
	case top < abstop12(pio4f):
		if top < abstop12(0x1p-12) {
			return y, 1
		}
		return sincosPoly(x, x*x, &sincosTab[0], 0)
	case top < abstop12(120):
		// hpiInv is 2/π·2^24: the quadrant is rounded in integer arithmetic.
		n := int((int32(x*sincosHpiInv) + 0x800000) >> 24)
		r := math.FMA(-float64(n), sincosHpi, x)
		p := &sincosTab[0]
		if n&2 != 0 {
			p = &sincosTab[1]
		}
		return sincosPoly(r*sincosSign[n&3], r*r, p, n)
	case top < abstop12(float32(math.Inf(1))):
		xi := math.Float32bits(y)
		sign := int(xi >> 31)
		r, n := reduceLarge(xi)
		p := &sincosTab[0]
		if (n+sign)&2 != 0 {
			p = &sincosTab[1]
		}
		return sincosPoly(r*sincosSign[(n+sign)&3], r*r, p, n)
	}
	nan := y - y
	return nan, nan
}

// pio4f is π/4 rounded to float32.
const pio4f = float32(0x1.921FB54442D18p-1)

// abstop12 returns the top 12 bits of y's encoding without the sign.
func abstop12(y float32) uint32 { return math.Float32bits(y) >> 20 & 0x7ff }

const (
	sincosHpiInv = 0x1.45F306DC9C883p+23 // 2/π · 2^24
	sincosHpi    = 0x1.921FB54442D18p0   // π/2
	sincosPi63   = 0x1.921FB54442D18p-62 // 2π · 2^-64
)

// sincosSign is the sign of the sine in quadrants 0..3.
var sincosSign = [4]float64{1, -1, -1, 1}

// sincosCoef holds the polynomial coefficients: c0..c4 of the cosine, s1..s3
// of the sine.
type sincosCoef struct{ c0, c1, c2, c3, c4, s1, s2, s3 float64 }

// sincosTab: the second entry computes −cos instead of cos (quadrants 2, 3).
var sincosTab = [2]sincosCoef{
	{0x1p0, -0x1.ffffffd0c621cp-2, 0x1.55553e1068f19p-5, -0x1.6c087e89a359dp-10, 0x1.99343027bf8c3p-16,
		-0x1.555545995a603p-3, 0x1.1107605230bc4p-7, -0x1.994eb3774cf24p-13},
	{-0x1p0, 0x1.ffffffd0c621cp-2, -0x1.55553e1068f19p-5, 0x1.6c087e89a359dp-10, -0x1.99343027bf8c3p-16,
		-0x1.555545995a603p-3, 0x1.1107605230bc4p-7, -0x1.994eb3774cf24p-13},
}

// sincosPoly evaluates both polynomials at x (x2 = x²); odd quadrants swap
// sine and cosine.
func sincosPoly(x, x2 float64, p *sincosCoef, n int) (sin, cos float32) {
	x4 := x2 * x2
	x3 := x2 * x
	c2 := math.FMA(x2, p.c4, p.c3)
	s1 := math.FMA(x2, p.s3, p.s2)
	c1 := math.FMA(x2, p.c1, p.c0)
	x5 := x3 * x2
	x6 := x4 * x2
	s := math.FMA(x3, p.s1, x)
	c := math.FMA(x4, p.c2, c1)
	sv := float32(math.FMA(x5, s1, s))
	cv := float32(math.FMA(x6, c2, c))
	if n&1 != 0 {
		return cv, sv
	}
	return sv, cv
}

// invPio4 is 4/π to 192 bits, eight new bits per entry.
var invPio4 = [24]uint32{
	0xa2, 0xa2f9, 0xa2f983, 0xa2f9836e, 0xf9836e4e, 0x836e4e44, 0x6e4e4415, 0x4e441529,
	0x441529fc, 0x1529fc27, 0x29fc2757, 0xfc2757d1, 0x2757d1f5, 0x57d1f534, 0xd1f534dd, 0xf534ddc0,
	0x34ddc0db, 0xddc0db62, 0xc0db6295, 0xdb629599, 0x6295993c, 0x95993c43, 0x993c4390, 0x3c439041,
}

// reduceLarge reduces |y| ≥ 120 (encoding xi) modulo π/2 with a 32×96-bit
// fixed-point product by 4/π; it returns the remainder in [−π/4, π/4] and
// the quadrant.
func reduceLarge(xi uint32) (float64, int) {
	arr := invPio4[(xi>>26)&15:]
	shift := (xi >> 23) & 7
	m := (xi&0xffffff | 0x800000) << shift
	res0 := uint64(m * arr[0])
	res1 := uint64(m) * uint64(arr[4])
	res2 := uint64(m) * uint64(arr[8])
	res0 = res2>>32 | res0<<32
	res0 += res1
	n := (res0 + 1<<61) >> 62
	res0 -= n << 62
	return float64(int64(res0)) * sincosPi63, int(n)
}
