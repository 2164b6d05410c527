package kernels

import "math"

// Scalar building blocks of the bit-exact contract with ggml's x86 CPU
// backend (AVX-512 build). Every accelerated kernel must produce exactly
// what these produce.

// fma32 returns a·b+c rounded once to float32: an IEEE fused multiply-add,
// as VFMADD computes it.
//
// The product of two float32 values is exact in float64, so the only error
// of float32(float64(a)·float64(b)+float64(c)) is double rounding: the
// float64 sum can land exactly on a float32 rounding midpoint that the
// exact sum is not on (or, below float32's normal range, anywhere). Those
// cases are detected and resolved by fma32Slow with the exact remainder of
// the float64 addition. Hot loops call fmaTry and fma32Slow themselves,
// because fma32 is too big for the inliner.
func fma32(a, b, c float32) float32 {
	if r, ok := fmaTry(a, b, c); ok {
		return r
	}
	return fma32Slow(a, b, c)
}

// fmaTry returns float32(fl64(a·b+c)) and whether that is a·b+c rounded
// once. It is unless the float64 sum s sits on a float32 rounding midpoint
// (low 29 bits 1<<28) without being exact, or the result is zero or a
// float32 subnormal (left to fma32Slow).
func fmaTry(a, b, c float32) (float32, bool) {
	p := float64(a) * float64(b)
	s := p + float64(c)
	r := float32(s)
	if uint32(math.Float64bits(s))&(1<<29-1) != 1<<28 {
		return r, math.Float32bits(r)&0x7f800000 != 0
	}
	bb := s - p // two-sum: exact ties round correctly
	return r, (p-(s-bb))+(float64(c)-bb) == 0 && math.Float32bits(r)&0x7f800000 != 0
}

// fma32Slow rounds the exact value a·b+c to float32 when its float64
// rounding s may sit on a float32 midpoint or in the subnormal range.
func fma32Slow(a, b, c float32) float32 {
	p, cc := float64(a)*float64(b), float64(c)
	s := p + cc
	// Two-sum: e is the exact error of s = p + cc.
	bb := s - p
	e := (p - (s - bb)) + (cc - bb)
	r := float32(s)
	if e == 0 || float64(r) == s || math.IsInf(s, 0) || math.IsNaN(s) {
		return r
	}
	lo, hi := r, r
	if float64(r) < s {
		hi = math.Nextafter32(r, float32(math.Inf(1)))
	} else {
		lo = math.Nextafter32(r, float32(math.Inf(-1)))
	}
	if mid := (float64(lo) + float64(hi)) / 2; s != mid {
		return r
	}
	if e > 0 {
		return hi
	}
	return lo
}

// reduce16 sums 16 float32 lanes as GCC's _mm512_reduce_add_ps does:
// halves, then quarters, then pairs: ((v0+v8)+(v4+v12)) + ((v2+v10)+(v6+v14))
// for the even lanes, likewise for the odd ones, then even + odd.
func reduce16(v *[16]float32) float32 {
	var h [8]float32
	for i := range h {
		h[i] = v[i] + v[i+8]
	}
	var q [4]float32
	for i := range q {
		q[i] = h[i] + h[i+4]
	}
	return (q[0] + q[2]) + (q[1] + q[3])
}

// reduce64 sums the 64 lanes of ggml's AVX-512 dot product accumulators
// (four registers of 16): registers (0+2)+(1+3) lane by lane, then
// reduce16. Lane k holds the elements i ≡ k (mod 64).
func reduce64(acc *[64]float32) float32 {
	var r [16]float32
	for l := range r {
		r[l] = (acc[l] + acc[32+l]) + (acc[16+l] + acc[48+l])
	}
	return reduce16(&r)
}

// Constants of ggml_v_expf (an Arm optimized-routines polynomial).
const (
	expShift = 0x1.8p23       // round-to-integer shifter
	expLog2e = 0x1.715476p+0  // 1/ln 2
	expLn2Hi = 0x1.62e4p-1    // ln 2, high part
	expLn2Lo = 0x1.7f7d1cp-20 // ln 2, low part
	expC5    = 0x1.0e4020p-7  // polynomial coefficients
	expC4    = 0x1.573e2ep-5  //
	expC3    = 0x1.555e66p-3  //
	expC2    = 0x1.fffdb6p-2  //
	expC1    = 0x1.ffffecp-1  //
	expLimit = 192            // |n| beyond which the result saturates
)

// vexp computes e^x exactly as ggml_v_expf does in one lane (AVX-512):
// n = round(x/ln2) by the shifter, b = x − n·ln2 in two fused steps, a
// degree-5 polynomial in fused multiply-adds, scaled by 2^n (VSCALEFPS).
// |n| > 192 saturates to 0 (n ≤ 0) or +Inf. Its error is up to ~1.5 ulp;
// softmax and SiLU use it on every full 16-element block.
func vexp(x float32) float32 {
	z := fma32(x, expLog2e, expShift)
	n := z - expShift
	b := fma32(-n, expLn2Lo, fma32(-n, expLn2Hi, x))
	u := b * b
	j := fma32(fma32(fma32(expC5, b, expC4), u, fma32(expC3, b, expC2)), u, fma32(expC1, b, 1))
	if n != n {
		return n // NaN in, NaN out
	}
	if abs32(n) > expLimit {
		if n <= 0 {
			return 0
		}
		return float32(math.Inf(1))
	}
	// j·2^n is exact in float64; the conversion rounds once, as VSCALEFPS.
	return float32(math.Ldexp(float64(j), int(n)))
}

// vsilu is ggml_v_silu in one lane: x / (1 + vexp(0 − x)).
func vsilu(x float32) float32 { return x / (1 + vexp(0-x)) }

// silu is ggml_silu_f32, ggml's scalar SiLU: x / (1 + expf(−x)).
func silu(x float32) float32 { return x / (1 + expf(-x)) }
