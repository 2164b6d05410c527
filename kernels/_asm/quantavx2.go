package main

import (
	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	"github.com/mmcloughlin/avo/reg"
)

// AVX2 versions of the activation quantizers and the gemm32 records (see
// quant.go), VEX only. The maxima fold the same lanes in the same operand
// order as the AVX-512 kernels (so NaN and ±0 come out alike); VPMOVDB's
// truncation to bytes is VPAND 0xFF then unsigned packs, which cannot
// saturate, then VPERMD to undo the packs' lane interleaving.

func genQuantAVX2() {
	genQuantQ8V("quantizeQ8_0AVX2", false)
	genQuantQ8V("quantizeQ8_1AVX2", true)
	genRecords32V()
	genQuantQ8KV()
	genFastRecords("AVX2", false, sum4AVX2)
	genFastRecords("AVX2", true, sum4AVX2)
}

// sum4AVX2: c = the sums of each four signed bytes of q: pairs by
// VPMADDUBSW with unsigned ones (|2·128| fits int16), then VPMADDWD.
func sum4AVX2(q, c reg.VecVirtual) {
	ones := YMM()
	VMOVDQU(vec8u("bytes01x8", 0x01010101), ones)
	VPMADDUBSW(q, ones, c)
	VPMADDWD(vec8u("words01x8", 0x00010001), c, c)
}

// absV sets v = |v| (in place).
func absV(v reg.VecVirtual) {
	VANDPS(vec8u("absMask8", 0x7fffffff), v, v)
}

// hmaxV returns max over the 8 lanes of m in lane 0 of an XMM, folding as
// hmaxAbs after its first step.
func hmaxV(m reg.VecVirtual) reg.VecVirtual {
	x := XMM()
	VEXTRACTF128(U8(1), m, x)
	VMAXPS(x, m.AsX(), x)
	u := XMM()
	VPERMILPS(U8(0x4e), x, u)
	VMAXPS(u, x, x)
	VPERMILPS(U8(0xb1), x, u)
	VMAXPS(u, x, x)
	return x
}

// bytesV stores the low bytes of the 32 int32 lanes of q (in order) at m.
func bytesV(q [4]reg.VecVirtual, m Mem) {
	lo := vec8u("lowByte8", 0xff)
	var t [4]reg.VecVirtual
	for i := range q {
		t[i] = YMM()
		VPAND(lo, q[i], t[i])
	}
	VPACKUSDW(t[1], t[0], t[0]) // [a0-3 b0-3 | a4-7 b4-7] words
	VPACKUSDW(t[3], t[2], t[2])
	VPACKUSWB(t[2], t[0], t[0]) // [a0-3 b0-3 c0-3 d0-3 | a4-7 b4-7 c4-7 d4-7]
	ix := YMM()
	VMOVDQU(constU32("unpack8", 0, 4, 1, 5, 2, 6, 3, 7), ix)
	VPERMD(t[0], ix, t[0])
	VMOVDQU(t[0], m)
}

// hsumV returns the sum of the int32 lanes of y in lane 0 (exact).
func hsumV(y reg.VecVirtual) reg.VecVirtual {
	x := XMM()
	VEXTRACTI128(U8(1), y, x)
	VPADDD(x, y.AsX(), x)
	u := XMM()
	VPSHUFD(U8(0x4e), x, u)
	VPADDD(u, x, x)
	VPSHUFD(U8(0xb1), x, u)
	VPADDD(u, x, x)
	return x
}

func genQuantQ8V(name string, withSum bool) {
	sig := "func(x *float32, qs *int8, d *float32, nb int)"
	if withSum {
		sig = "func(x *float32, qs *int8, d, s *float32, nb int)"
	}
	TEXT(name, NOSPLIT, sig)
	Doc(name + " quantizes nb blocks of 32 values of x as ggml's quantize_row_q8_" + map[bool]string{false: "0", true: "1"}[withSum] + " (AVX2).")
	Pragma("noescape")
	xs, qs, ds := loadGP("x"), loadGP("qs"), loadGP("d")
	var ss reg.GPVirtual
	if withSum {
		ss = loadGP("s")
	}
	n := loadGP("nb")
	TESTQ(n, n)
	JZ(LabelRef(name + "_done"))
	Label(name + "_block")
	var v [4]reg.VecVirtual
	for i := range v {
		v[i] = YMM()
		VMOVUPS(Mem{Base: xs, Disp: 32 * i}, v[i])
	}
	// max|x|: lanes i and 16+i first, as the 16-lane kernel
	m0, m1 := YMM(), YMM()
	VMOVAPS(v[0], m0)
	VMOVAPS(v[1], m1)
	absV(m0)
	absV(m1)
	t0, t1 := YMM(), YMM()
	VMOVAPS(v[2], t0)
	VMOVAPS(v[3], t1)
	absV(t0)
	absV(t1)
	VMAXPS(t0, m0, m0)
	VMAXPS(t1, m1, m1)
	VMAXPS(m1, m0, m1) // y = max(m.lo, m.hi): second operand m.hi
	amax := hmaxV(m1)
	c127 := XMM()
	VMOVSS(f32c("c127", 127), c127)
	d, id := XMM(), XMM()
	VDIVSS(c127, amax, d)
	VDIVSS(amax, c127, id)
	z, nz := XMM(), XMM()
	VXORPS(z, z, z)
	VCMPSS(U8(4), z, amax, nz) // amax ≠ 0 (or NaN)
	VANDPS(nz, id, id)
	half := XMM()
	VCVTPS2PH(U8(0), d, half)
	VCVTPH2PS(half, half)
	VMOVSS(half, Mem{Base: ds})
	idy := YMM()
	VBROADCASTSS(id, idy)
	for i := range v {
		VMULPS(idy, v[i], v[i])
		VCVTPS2DQ(v[i], v[i]) // nearest even
	}
	bytesV(v, Mem{Base: qs})
	if withSum {
		t := YMM()
		VPADDD(v[1], v[0], t)
		u := YMM()
		VPADDD(v[3], v[2], u)
		VPADDD(u, t, t)
		x := hsumV(t)
		VCVTDQ2PS(x, x)
		VMULSS(d, x, x)
		h := XMM()
		VCVTPS2PH(U8(0), x, h)
		VCVTPH2PS(h, h)
		VMOVSS(h, Mem{Base: ss})
		ADDQ(U8(4), ss)
	}
	ADDQ(U32(128), xs)
	ADDQ(U8(32), qs)
	ADDQ(U8(4), ds)
	DECQ(n)
	JNZ(LabelRef(name + "_block"))
	Label(name + "_done")
	VZEROUPPER()
	RET()
}

// genRecords32V: records32AVX512 in AVX2; the sums of four quants come
// from VPMADDUBSW by ones (pairs, exact in int16) and VPMADDWD by ones.
func genRecords32V() {
	name := "records32AVX2"
	TEXT(name, NOSPLIT, "func(qs *int8, d, s *float32, rec *byte, nb int, bias int32)")
	Doc(name + " writes the gemm32 activation records of nb blocks (s may be nil) (AVX2).")
	Pragma("noescape")
	qs, d, s, rec, n := loadGP("qs"), loadGP("d"), loadGP("s"), loadGP("rec"), loadGP("nb")
	nbias := YMM()
	b := GP32()
	Load(Param("bias"), b)
	NEGL(b)
	bx := XMM()
	VMOVD(b, bx)
	VPBROADCASTD(bx, nbias)
	TESTQ(n, n)
	JZ(LabelRef(name + "_done"))
	Label(name + "_block")
	q := YMM()
	VMOVDQU(Mem{Base: qs}, q)
	VMOVDQU(q, Mem{Base: rec, Disp: recQS})
	c := YMM()
	ones := YMM()
	VMOVDQU(vec8u("bytes01x8", 0x01010101), ones)
	VPMADDUBSW(q, ones, c) // u8 ones × s8 q
	VPMADDWD(vec8u("words01x8", 0x00010001), c, c)
	VPMULLD(nbias, c, c)
	VMOVDQU(c, Mem{Base: rec, Disp: recCorr})
	recordScales(name, func(x reg.Register) { VXORPS(x, x, x) }, qs, d, s, rec, n)
}

// genQuantQ8KV: quantizeQ8KAVX512 in AVX2.
func genQuantQ8KV() {
	name := "quantizeQ8KAVX2"
	TEXT(name, NOSPLIT, "func(x *float32, qs *int8, d *float32, bsums *int16, nb int)")
	Doc(name + " quantizes nb blocks of 256 values of x as ggml's quantize_row_q8_K (AVX2).")
	Pragma("noescape")
	xs, qs, ds, bs, n := loadGP("x"), loadGP("qs"), loadGP("d"), loadGP("bsums"), loadGP("nb")
	TESTQ(n, n)
	JZ(LabelRef(name + "_done"))
	Label(name + "_block")
	amax := q8kMaxV(xs)
	z := XMM()
	VXORPS(z, z, z)
	VUCOMISS(z, amax)
	JNE(LabelRef(name + "_nonzero"))
	zq := YMM()
	VXORPS(zq, zq, zq)
	for i := range 8 {
		VMOVDQU(zq, Mem{Base: qs, Disp: 32 * i})
	}
	VMOVDQU(zq, Mem{Base: bs})
	VMOVSS(z, Mem{Base: ds})
	JMP(LabelRef(name + "_next"))
	Label(name + "_nonzero")
	mx := q8kFirstV(name, xs, amax)
	is := XMM()
	VMOVSS(f32c("cm127", -127), is)
	VDIVSS(mx, is, is) // −127/mx
	q8kQuantsV(xs, qs, bs, is)
	one := XMM()
	VMOVSS(f32c("one", 1), one)
	VDIVSS(is, one, one) // 1/iscale
	VMOVSS(one, Mem{Base: ds})
	Label(name + "_next")
	ADDQ(U32(1024), xs)
	ADDQ(U32(256), qs)
	ADDQ(U8(4), ds)
	ADDQ(U8(32), bs)
	DECQ(n)
	JNZ(LabelRef(name + "_block"))
	Label(name + "_done")
	VZEROUPPER()
	RET()
}

// q8kMaxV is q8kMax: sixteen 16-lane registers folded in order, each as
// two YMM halves (lo: lanes 0..7, hi: 8..15).
func q8kMaxV(xs reg.GPVirtual) reg.VecVirtual {
	lo, hi := YMM(), YMM()
	VMOVUPS(Mem{Base: xs}, lo)
	VMOVUPS(Mem{Base: xs, Disp: 32}, hi)
	absV(lo)
	absV(hi)
	for i := 1; i < 16; i++ {
		tl, th := YMM(), YMM()
		VMOVUPS(Mem{Base: xs, Disp: 64 * i}, tl)
		VMOVUPS(Mem{Base: xs, Disp: 64*i + 32}, th)
		absV(tl)
		absV(th)
		VMAXPS(tl, lo, lo)
		VMAXPS(th, hi, hi)
	}
	VMAXPS(hi, lo, hi) // y = max(m.lo, m.hi), second operand m.hi
	return hmaxV(hi)
}

// q8kFirstV returns the first of the 256 values at xs whose magnitude is
// amax (lane 0).
func q8kFirstV(name string, xs reg.GPVirtual, amax reg.VecVirtual) reg.VecVirtual {
	ab := YMM()
	VBROADCASTSS(amax, ab)
	p, bits, left := GP64(), GP32(), GP64()
	MOVQ(xs, p)
	MOVQ(U32(32), left)
	Label(name + "_find")
	t := YMM()
	VMOVUPS(Mem{Base: p}, t)
	absV(t)
	VCMPPS(U8(0), ab, t, t) // |x| == amax
	VMOVMSKPS(t, bits)
	TESTL(bits, bits)
	JNZ(LabelRef(name + "_found"))
	ADDQ(U8(32), p)
	DECQ(left)
	JNZ(LabelRef(name + "_find"))
	// not found (amax is NaN): stay within the block, as no lane compares equal
	SUBQ(U8(32), p)
	Label(name + "_found")
	TZCNTL(bits, bits) // 32 when bits = 0: clamp to the block's last value
	MOVL(U32(7), left.As32())
	CMPL(bits, left.As32())
	CMOVLGT(left.As32(), bits)
	mx := XMM()
	VMOVSS(Mem{Base: p, Index: bits.As64(), Scale: 4}, mx)
	return mx
}

// q8kQuantsV stores the quants and the 16 sums of 16 of the block at xs.
func q8kQuantsV(xs, qs, bs reg.GPVirtual, is reg.VecVirtual) {
	isy := YMM()
	VBROADCASTSS(is, isy)
	c127 := vec8u("i127x8", 127)
	for g := range 8 { // 32 elements per step: two groups of 16
		var v [4]reg.VecVirtual
		for i := range v {
			v[i] = YMM()
			VMULPS(Mem{Base: xs, Disp: 128*g + 32*i}, isy, v[i])
			VCVTPS2DQ(v[i], v[i])
			VPMINSD(c127, v[i], v[i])
		}
		bytesV(v, Mem{Base: qs, Disp: 32 * g})
		for h := range 2 {
			t := YMM()
			VPADDD(v[2*h+1], v[2*h], t)
			x := hsumV(t)
			VPEXTRW(U8(0), x, Mem{Base: bs, Disp: 2 * (2*g + h)})
		}
	}
}
