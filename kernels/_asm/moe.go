package main

import (
	"math"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	"github.com/mmcloughlin/avo/reg"
)

// Kernels only mixtures of experts use: gpt-oss's expert activation.
func genMoE() { genSwigluOAI() }

// glibc expf's constants, as kernels/libm.go writes them.
const (
	oaiInvLn2N = 0x1.71547652b82fep+0 * 32
	oaiShift52 = 0x1.8p+52
	oaiP0      = 0x1.c6af84b912394p-5 / 32 / 32 / 32
	oaiP1      = 0x1.ebfce50fac4f3p-3 / 32 / 32
	oaiP2      = 0x1.62e42ff0c52d6p-1 / 32
)

// oaiExp2Tab is kernels/libm.go's exp2fTab, and the constants above its
// exp* constants, repeated because this generator is a module of its own
// that imports nothing of pagoda's; TestVecSameAsGeneric (swigluOAI, bit
// for bit against the generic code on libm.go's expf) fails if they drift.
var oaiExp2Tab = []uint64{
	0x3ff0000000000000, 0x3fefd9b0d3158574, 0x3fefb5586cf9890f, 0x3fef9301d0125b51,
	0x3fef72b83c7d517b, 0x3fef54873168b9aa, 0x3fef387a6e756238, 0x3fef1e9df51fdee1,
	0x3fef06fe0a31b715, 0x3feef1a7373aa9cb, 0x3feedea64c123422, 0x3feece086061892d,
	0x3feebfdad5362a27, 0x3feeb42b569d4f82, 0x3feeab07dd485429, 0x3feea47eb03a5585,
	0x3feea09e667f3bcd, 0x3fee9f75e8ec5f74, 0x3feea11473eb0187, 0x3feea589994cce13,
	0x3feeace5422aa0db, 0x3feeb737b0cdc5e5, 0x3feec49182a3f090, 0x3feed503b23e255d,
	0x3feee89f995ad3ad, 0x3feeff76f2fb5e47, 0x3fef199bdd85529c, 0x3fef3720dcef9069,
	0x3fef5818dcfba487, 0x3fef7c97337b9b5f, 0x3fefa4afa2a490da, 0x3fefd0765b6e4540,
}

func f64c(name string, v float64) Mem { return constU64(name, math.Float64bits(v)) }

// genSwigluOAI emits swigluOAIAVX512, kernels' swigluOAIGeneric on 8
// elements at a time: the clamps and float32 operations as there, and
// expf as glibc's (kernels/libm.go) in eight float64 lanes, the table
// looked up by two VPERMT2Q. It stops before the first 8 whose exponent
// argument takes one of expf's special cases (|α·x| ≥ 88, NaN), which the
// caller finishes with the generic code.
func genSwigluOAI() {
	TEXT("swigluOAIAVX512", NOSPLIT, "func(dst, gate, up *float32, n int) int")
	Doc("swigluOAIAVX512 is swigluOAIGeneric on whole blocks of 8 elements of n, up to the first block",
		"with an exponent argument of expf's special cases; it returns the elements done.")
	Pragma("noescape")
	dst, gate, up, n := loadGP("dst"), loadGP("gate"), loadGP("up"), loadGP("n")
	i := GP64()
	XORQ(i, i)
	ymm := func(m Mem) reg.VecVirtual {
		v := YMM()
		VBROADCASTSS(m, v)
		return v
	}
	lim, nlim := ymm(f32c("oaiLimit", 7)), ymm(f32c("oaiNegLimit", -7))
	nalpha, one := ymm(f32c("oaiNegAlpha", -1.702)), ymm(f32c("oaiOne", 1))
	top, thr := ymm(constU32("oaiTopMask", 0x7ff)), ymm(constU32("oaiTop88", math.Float32bits(88)>>20))
	tab := constU64("oaiExp2Tab", oaiExp2Tab...)
	shift := ZMM()
	VBROADCASTSD(f64c("oaiShift52", oaiShift52), shift)
	Label("oai_loop")
	last := GP64()
	LEAQ(Mem{Base: i, Disp: 8}, last)
	CMPQ(last, n)
	JG(LabelRef("oai_done"))
	x, y := YMM(), YMM()
	VMOVUPS(Mem{Base: gate, Index: i, Scale: 4}, x)
	VMOVUPS(Mem{Base: up, Index: i, Scale: 4}, y)
	VMINPS(x, lim, x)  // 7 < x ? 7 : x (a NaN stays)
	VMAXPS(y, nlim, y) // y < −7 ? −7 : y
	VMINPS(y, lim, y)  // 7 < y ? 7 : y
	t := YMM()
	VMULPS(nalpha, x, t) // α·(−x)
	// expf's special cases: abstop12(t) ≥ abstop12(88).
	tt := YMM()
	VPSRLD(U8(20), t, tt)
	VPANDD(top, tt, tt)
	k := K()
	VPCMPUD(U8(5), thr, tt, k) // tt ≥ thr
	KORTESTB(k, k)
	JNZ(LabelRef("oai_done"))
	z := ZMM()
	VCVTPS2PD(t, z)
	VMULPD_BCST(f64c("oaiInvLn2N", oaiInvLn2N), z, z) // z = 32/ln2 · x
	kd := ZMM()
	VADDPD(shift, z, kd) // kd = z + shift; ki its bits
	r := ZMM()
	VSUBPD(shift, kd, r)
	VSUBPD(r, z, r) // r = z − (kd − shift)
	// s = exp2fTab[ki mod 32] + ki<<47.
	lo, hi := ZMM(), ZMM()
	VMOVDQU64(tab, lo)
	VPERMT2Q(tab.Offset(64), kd, lo)
	VMOVDQU64(tab.Offset(128), hi)
	VPERMT2Q(tab.Offset(192), kd, hi)
	kh := K()
	VPTESTMQ_BCST(constU64("oaiBit4", 16), kd, kh)
	s := ZMM()
	VPBLENDMQ(hi, lo, kh, s)
	VPSLLQ(U8(47), kd, kd)
	VPADDQ(kd, s, s)
	c, p := ZMM(), ZMM()
	VBROADCASTSD(f64c("oaiP1", oaiP1), c)
	VFMADD231PD_BCST(f64c("oaiP0", oaiP0), r, c) // c = P0·r + P1
	VBROADCASTSD(f64c("oaiOne64", 1), p)
	VFMADD231PD_BCST(f64c("oaiP2", oaiP2), r, p) // p = P2·r + 1
	VMULPD(r, r, r)
	VFMADD231PD(r, c, p) // p = c·r² + p
	VMULPD(s, p, p)
	e := YMM()
	VCVTPD2PS(p, e) // expf(t)
	VADDPS(one, e, e)
	VDIVPS(e, x, x) // x/(1 + expf(t))
	VADDPS(one, y, y)
	VMULPS(y, x, x) // ·(y + 1)
	VMOVUPS(x, Mem{Base: dst, Index: i, Scale: 4})
	MOVQ(last, i)
	JMP(LabelRef("oai_loop"))
	Label("oai_done")
	Store(i, ReturnIndex(0))
	VZEROUPPER()
	RET()
}
