package main

import (
	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	"github.com/mmcloughlin/avo/reg"
)

// Activation quantizers Q8_0 and Q8_1 (ggml's x86 quantize_row_q8_0/_1),
// one 32-element block per iteration: amax = max|x|, d = amax/127 stored
// rounded to half precision, q = round-half-even(x·(127/amax)) (0 when
// amax = 0), and for Q8_1 s = f16(d·Σq) with the unrounded d.

func genQuant() {
	genQuantQ8("quantizeQ8_0AVX512", false)
	genQuantQ8("quantizeQ8_1AVX512", true)
	genRecords32()
	genQuantQ8K()
	genFastRecords("AVX512", false, sum4VNNI)
	genFastRecords("AVX512", true, sum4VNNI)
}

func genQuantQ8(name string, withSum bool) {
	sig := "func(x *float32, qs *int8, d *float32, nb int)"
	if withSum {
		sig = "func(x *float32, qs *int8, d, s *float32, nb int)"
	}
	TEXT(name, NOSPLIT, sig)
	Doc(name + " quantizes nb blocks of 32 values of x as ggml's quantize_row_q8_" + map[bool]string{false: "0", true: "1"}[withSum] + ".")
	Pragma("noescape")
	xs, qs, ds := loadGP("x"), loadGP("qs"), loadGP("d")
	var ss reg.GPVirtual
	if withSum {
		ss = loadGP("s")
	}
	n := loadGP("nb")
	TESTQ(n, n)
	JZ(LabelRef(name + "_done"))
	c127 := XMM()
	VMOVSS(f32c("c127", 127), c127)
	Label(name + "_block")
	a, b := ZMM(), ZMM()
	VMOVUPS(Mem{Base: xs}, a)
	VMOVUPS(Mem{Base: xs, Disp: 64}, b)
	amax := hmaxAbs(a, b)
	// d = amax/127; id = amax ≠ 0 ? 127/amax : 0
	d, id := XMM(), XMM()
	VDIVSS(c127, amax, d)
	VDIVSS(amax, c127, id)
	z, k := XMM(), K()
	zero(z)
	VCMPSS(U8(4), z, amax, k) // amax ≠ 0 (or NaN): bit 0 only
	VMOVAPS_Z(id, k, id)
	half := XMM()
	VCVTPS2PH(U8(0), d, half)
	VCVTPH2PS(half, half)
	VMOVSS(half, Mem{Base: ds})
	idz := ZMM()
	VBROADCASTSS(id, idz)
	qa, qb := ZMM(), ZMM()
	VMULPS(idz, a, a)
	VMULPS(idz, b, b)
	VCVTPS2DQ(a, qa) // nearest even (MXCSR default)
	VCVTPS2DQ(b, qb)
	VPMOVDB(qa, Mem{Base: qs})
	VPMOVDB(qb, Mem{Base: qs, Disp: 16})
	if withSum {
		sumScale(qa, qb, d, ss)
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

// hmax folds the 16 lanes of m to their maximum, in lane 0 of the result.
func hmax(m reg.VecVirtual) reg.VecVirtual {
	y := YMM()
	VEXTRACTF32X8(U8(1), m, y)
	VMAXPS(y, m.AsY(), y)
	x := XMM()
	VEXTRACTF32X4(U8(1), y, x)
	VMAXPS(x, y.AsX(), x)
	u := XMM()
	VPERMILPS(U8(0x4e), x, u)
	VMAXPS(u, x, x)
	VPERMILPS(U8(0xb1), x, u)
	VMAXPS(u, x, x)
	return x
}

// hmaxAbs returns max(|a|, |b|) over all 32 lanes in lane 0 of an XMM.
func hmaxAbs(a, b reg.VecVirtual) reg.VecVirtual {
	mask := constU32("absMask", 0x7fffffff)
	m, t := ZMM(), ZMM()
	VANDPS_BCST(mask, a, m)
	VANDPS_BCST(mask, b, t)
	VMAXPS(t, m, m)
	return hmax(m)
}

// sumScale stores f16(d·Σq) at s, q the int32 quants of qa and qb.
func sumScale(qa, qb, d reg.VecVirtual, s reg.GPVirtual) {
	t := ZMM()
	VPADDD(qb, qa, t)
	y := YMM()
	VEXTRACTI64X4(U8(1), t, y)
	VPADDD(y, t.AsY(), y)
	x := XMM()
	VEXTRACTI32X4(U8(1), y, x)
	VPADDD(x, y.AsX(), x)
	u := XMM()
	VPSHUFD(U8(0x4e), x, u)
	VPADDD(u, x, x)
	VPSHUFD(U8(0xb1), x, u)
	VPADDD(u, x, x)
	VCVTDQ2PS(x, x)
	VMULSS(d, x, x)
	h := XMM()
	VCVTPS2PH(U8(0), x, h)
	VCVTPH2PS(h, h)
	VMOVSS(h, Mem{Base: s})
}

// genRecords32: the gemm32 activation records of nb blocks of one row:
// rec = qs (32 bytes), −bias·(sums of 4 quants) (8 int32), d, s (0 when s
// is nil), gemm32Rec bytes per block.
func genRecords32() {
	name := "records32AVX512"
	TEXT(name, NOSPLIT, "func(qs *int8, d, s *float32, rec *byte, nb int, bias int32)")
	Doc(name + " writes the gemm32 activation records of nb blocks (s may be nil).")
	Pragma("noescape")
	qs, d, s, rec, n := loadGP("qs"), loadGP("d"), loadGP("s"), loadGP("rec"), loadGP("nb")
	nbias := ZMM()
	b := GP32()
	Load(Param("bias"), b)
	NEGL(b)
	VPBROADCASTD(b, nbias)
	ones := YMM()
	VPBROADCASTD(constU32("bytes01", 0x01010101), ones)
	TESTQ(n, n)
	JZ(LabelRef(name + "_done"))
	Label(name + "_block")
	q := YMM()
	VMOVDQU(Mem{Base: qs}, q)
	VMOVDQU(q, Mem{Base: rec, Disp: recQS})
	c := YMM()
	zero(c)
	vpdpbusd(q, ones, c) // Σ of each 4 quants
	VPMULLD(nbias.AsY(), c, c)
	VMOVDQU(c, Mem{Base: rec, Disp: recCorr})
	recordScales(name, zero, qs, d, s, rec, n)
}

// recordScales ends a records loop (gemm32 records): it stores the
// block's d and s (0 when s is nil) in the record at rec, advances qs, d,
// s and rec by one block and loops to name_block until n reaches 0. clear
// zeroes an XMM register in the caller's instruction set.
func recordScales(name string, clear func(reg.Register), qs, d, s, rec, n reg.GPVirtual) {
	x := XMM()
	VMOVSS(Mem{Base: d}, x)
	VMOVSS(x, Mem{Base: rec, Disp: recD})
	clear(x)
	TESTQ(s, s)
	JZ(LabelRef(name + "_nos"))
	VMOVSS(Mem{Base: s}, x)
	ADDQ(U8(4), s)
	Label(name + "_nos")
	VMOVSS(x, Mem{Base: rec, Disp: recS})
	ADDQ(U8(32), qs)
	ADDQ(U8(4), d)
	ADDQ(U32(gemm32Rec), rec)
	DECQ(n)
	JNZ(LabelRef(name + "_block"))
	Label(name + "_done")
	VZEROUPPER()
	RET()
}

// genQuantQ8K: ggml's quantize_row_q8_K on nb 256-element blocks: the
// first element of largest magnitude mx gives iscale = −127/mx, q =
// min(127, round-half-even(iscale·x)), d = 1/iscale, bsums the sums of
// each 16 quants; an all-zero block gives zeros.
func genQuantQ8K() {
	name := "quantizeQ8KAVX512"
	TEXT(name, NOSPLIT, "func(x *float32, qs *int8, d *float32, bsums *int16, nb int)")
	Doc(name + " quantizes nb blocks of 256 values of x as ggml's quantize_row_q8_K.")
	Pragma("noescape")
	xs, qs, ds, bs, n := loadGP("x"), loadGP("qs"), loadGP("d"), loadGP("bsums"), loadGP("nb")
	TESTQ(n, n)
	JZ(LabelRef(name + "_done"))
	Label(name + "_block")
	amax := q8kMax(xs)
	z := XMM()
	zero(z)
	VUCOMISS(z, amax)
	JNE(LabelRef(name + "_nonzero"))
	zq := ZMM()
	zero(zq)
	for i := range 4 {
		VMOVDQU64(zq, Mem{Base: qs, Disp: 64 * i})
	}
	VMOVDQU(zq.AsY(), Mem{Base: bs})
	VMOVSS(z, Mem{Base: ds})
	JMP(LabelRef(name + "_next"))
	Label(name + "_nonzero")
	mx := q8kFirst(name, xs, amax)
	is := XMM()
	VMOVSS(f32c("cm127", -127), is)
	VDIVSS(mx, is, is) // −127/mx
	q8kQuants(xs, qs, bs, is)
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

// q8kMax returns max|x| over the 256 values at xs, in lane 0.
func q8kMax(xs reg.GPVirtual) reg.VecVirtual {
	mask := constU32("absMask", 0x7fffffff)
	m := ZMM()
	VMOVUPS(Mem{Base: xs}, m)
	VANDPS_BCST(mask, m, m)
	for i := 1; i < 16; i++ {
		t := ZMM()
		VMOVUPS(Mem{Base: xs, Disp: 64 * i}, t)
		VANDPS_BCST(mask, t, t)
		VMAXPS(t, m, m)
	}
	return hmax(m)
}

// q8kFirst returns the first of the 256 values at xs whose magnitude is
// amax (lane 0).
func q8kFirst(name string, xs reg.GPVirtual, amax reg.VecVirtual) reg.VecVirtual {
	ab := ZMM()
	VBROADCASTSS(amax, ab)
	p, bits := GP64(), GP32()
	MOVQ(xs, p)
	Label(name + "_find")
	t, k := ZMM(), K()
	VMOVUPS(Mem{Base: p}, t)
	VANDPS_BCST(constU32("absMask", 0x7fffffff), t, t)
	VCMPPS(U8(0), ab, t, k) // |x| == amax
	KMOVW(k, bits)
	TESTL(bits, bits)
	JNZ(LabelRef(name + "_found"))
	ADDQ(U8(64), p)
	JMP(LabelRef(name + "_find"))
	Label(name + "_found")
	TZCNTL(bits, bits)
	mx := XMM()
	VMOVSS(Mem{Base: p, Index: bits.As64(), Scale: 4}, mx)
	return mx
}

// q8kQuants stores the quants and the 16 sums of 16 of the block at xs.
func q8kQuants(xs, qs, bs reg.GPVirtual, is reg.VecVirtual) {
	isz, c127 := ZMM(), ZMM()
	VBROADCASTSS(is, isz)
	VPBROADCASTD(constU32("i127", 127), c127)
	for i := range 16 {
		v := ZMM()
		VMULPS(Mem{Base: xs, Disp: 64 * i}, isz, v)
		VCVTPS2DQ(v, v)
		VPMINSD(c127, v, v)
		VPMOVDB(v, Mem{Base: qs, Disp: 16 * i})
		s := hsumZ(v)
		VPEXTRW(U8(0), s, Mem{Base: bs, Disp: 2 * i})
	}
}

// hsumZ returns the sum of the 16 int32 lanes of v in lane 0 (exact).
func hsumZ(v reg.VecVirtual) reg.VecVirtual {
	y := YMM()
	VEXTRACTI64X4(U8(1), v, y)
	VPADDD(y, v.AsY(), y)
	x := XMM()
	VEXTRACTI32X4(U8(1), y, x)
	VPADDD(x, y.AsX(), x)
	hsumI32(x)
	return x
}

// genFastRecords: the fast kernels' activation records (fastRec bytes per
// block: the 32 quants, x, d) of nb blocks of one row, x = −bias·Σq
// (int32) or, with min, float32(d·float32(Σq)). Σq is exact in int32 in
// any order; sum4 leaves the sums of each four quants in the 8 dwords of a
// YMM register (VPDPBUSD with ones on AVX-512 VNNI, VPMADDUBSW and
// VPMADDWD on AVX2).
func genFastRecords(isa string, min bool, sum4 func(q, c reg.VecVirtual)) {
	name := "fastRecordsBias" + isa
	sig := "func(qs *int8, d *float32, rec *byte, nb int, bias int32)"
	if min {
		name, sig = "fastRecordsMin"+isa, "func(qs *int8, d *float32, rec *byte, nb int)"
	}
	TEXT(name, NOSPLIT, sig)
	Doc(name + " writes the fast kernels' activation records of nb blocks of quants qs with scales d.")
	Pragma("noescape")
	qs, d, rec, n := loadGP("qs"), loadGP("d"), loadGP("rec"), loadGP("nb")
	var nbias reg.GPVirtual
	if !min {
		b := GP32()
		Load(Param("bias"), b)
		NEGL(b)
		nbias = GP64()
		MOVLQSX(b, nbias)
	}
	TESTQ(n, n)
	JZ(LabelRef(name + "_done"))
	Label(name + "_block")
	q, c := YMM(), YMM()
	VMOVDQU(Mem{Base: qs}, q)
	VMOVDQU(q, Mem{Base: rec})
	sum4(q, c)
	x := hsumV(c) // Σq
	dx := XMM()
	VMOVSS(Mem{Base: d}, dx)
	if min {
		VCVTDQ2PS(x, x)
		VMULSS(dx, x, x)
		VMOVSS(x, Mem{Base: rec, Disp: 32})
	} else {
		s := GP64()
		VMOVD(x, s.As32())
		IMULL(nbias.As32(), s.As32())
		MOVL(s.As32(), Mem{Base: rec, Disp: 32})
	}
	VMOVSS(dx, Mem{Base: rec, Disp: 36})
	ADDQ(U8(32), qs)
	ADDQ(U8(4), d)
	ADDQ(U8(40), rec)
	DECQ(n)
	JNZ(LabelRef(name + "_block"))
	Label(name + "_done")
	VZEROUPPER()
	RET()
}

// sum4VNNI: c = the sums of each four signed bytes of q (VPDPBUSD with
// unsigned ones).
func sum4VNNI(q, c reg.VecVirtual) {
	ones := YMM()
	VPBROADCASTD(constU32("bytes01", 0x01010101), ones)
	zero(c)
	vpdpbusd(q, ones, c)
}
