package main

import (
	"fmt"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	"github.com/mmcloughlin/avo/reg"
)

// Float-weight kernels (AVX-512): the BF16 dot product in VDPBF16PS's
// pairwise layout, computed with separate multiplies and adds so that
// denormals are kept (VDPBF16PS flushes them).
//
// Per 64-element step, register r (0, 1) takes elements 32r+2j+1 (odd)
// then 32r+2j (even) in lane j, each product rounded (exact for bfloat16
// values unless it underflows) and each sum rounded, as dotBF16Lanes.

func genGemmF() {
	genDotBF16Pairs()
	for _, ft := range fTypes {
		for a := 1; a <= gemmFTile; a++ {
			g := &gemmf{ft: ft, na: a}
			g.gen()
		}
	}
}

// genDotBF16Pairs: n a positive multiple of 64; returns reduce16 of both
// registers.
func genDotBF16Pairs() {
	name := "dotBF16PairsAVX512"
	TEXT(name, NOSPLIT, "func(a *float32, b *uint16, n int) (c0, c1 float32)")
	Doc(name + " returns reduce16 of the two VDPBF16PS-layout accumulators of a·b over n elements, n a positive multiple of 64.")
	Pragma("noescape")
	as, bs := loadGP("a"), loadGP("b")
	n := loadGP("n")
	SHRQ(U8(6), n)
	odd, even := ZMM(), ZMM()
	VMOVDQU32(constU32("idxOdd", 1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31), odd)
	VMOVDQU32(constU32("idxEven", 0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30), even)
	hiMask := constU32("hiWords", 0xFFFF0000)
	c := [2]reg.VecVirtual{ZMM(), ZMM()}
	zero(c[0])
	zero(c[1])
	Label(name + "_loop")
	for r := range 2 {
		w, wo, we := ZMM(), ZMM(), ZMM()
		VMOVDQU32(Mem{Base: bs, Disp: 64 * r}, w)
		VPANDD_BCST(hiMask, w, wo)
		VPSLLD(U8(16), w, we)
		ao, ae := ZMM(), ZMM()
		VMOVUPS(Mem{Base: as, Disp: 128 * r}, ao)
		VMOVUPS(Mem{Base: as, Disp: 128 * r}, ae)
		VPERMT2PS(Mem{Base: as, Disp: 128*r + 64}, odd, ao)
		VPERMT2PS(Mem{Base: as, Disp: 128*r + 64}, even, ae)
		VMULPS(wo, ao, ao)
		VADDPS(ao, c[r], c[r])
		VMULPS(we, ae, ae)
		VADDPS(ae, c[r], c[r])
	}
	ADDQ(U32(256), as)
	ADDQ(U32(128), bs)
	DECQ(n)
	JNZ(LabelRef(name + "_loop"))
	Store(reduce16(c[0]), ReturnIndex(0))
	Store(reduce16(c[1]), ReturnIndex(1))
	VZEROUPPER()
	RET()
}

// Tiled float-weight GEMM: one weight row at a time against up to
// gemmFTile activation rows (the converted float rows, actStride bytes
// apart); nb is the number of columns. Each output is computed exactly as
// the generic dot product: F32/F16 in 64 fused lanes (four ZMM, lane i mod
// 64) reduced by reduce64, BF16 in dotBF16Pairs' two registers; then the
// cols mod 64 tail in the generic scalar order (F16/BF16: each rounded
// product added to a float64 sum; F32: rounded products of whole groups of
// four added in float32, the last cols mod 4 fused).
const gemmFTile = 6

type fType struct {
	name string
	size int // bytes per element
}

var fTypes = []fType{{"F32", 4}, {"F16", 2}, {"BF16", 2}}

type gemmf struct {
	ft  fType
	na  int
	w   reg.GPVirtual
	act strided
	acc [][]reg.VecPhysical
}

func (g *gemmf) name() string { return fmt.Sprintf("gemm%s_%d", g.ft.name, g.na) }

func (g *gemmf) gen() {
	TEXT(g.name(), NOSPLIT, rowKernelSig)
	Doc(fmt.Sprintf("%s multiplies rows weight rows of type %s with %d float activation rows of nb columns.", g.name(), g.ft.name, g.na))
	Pragma("noescape")
	bf := g.ft.name == "BF16"
	var odd, even, hiMask reg.VecVirtual
	if bf {
		odd, even, hiMask = ZMM(), ZMM(), ZMM()
		VMOVDQU32(constU32("idxOdd", 1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31), odd)
		VMOVDQU32(constU32("idxEven", 0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30), even)
		VPBROADCASTD(constU32("hiWords", 0xFFFF0000), hiMask)
	}
	r := rowsLoop(g.name())
	g.w = rowPointer(r)
	var pin pinned
	nacc := 4
	if bf {
		nacc = 2
	}
	g.acc = nil
	for range g.na {
		g.acc = append(g.acc, pin.zero(nacc))
	}
	g.act = loadStrided("act", "actStride", g.na, 1)
	cnt := loadGP("nb")
	SHRQ(U8(6), cnt)
	JZ(LabelRef(g.name() + "_reduce"))
	Label(g.name() + "_steps")
	prefetchWeights(Mem{Base: g.w, Disp: prefetchAhead}, g.na)
	if bf {
		var wo, we [2]reg.VecVirtual
		for h := range 2 {
			v := ZMM()
			VMOVDQU32(Mem{Base: g.w, Disp: 64 * h}, v)
			wo[h], we[h] = ZMM(), ZMM()
			VPANDD(hiMask, v, wo[h])
			VPSLLD(U8(16), v, we[h])
		}
		for a := range g.na {
			for h := range 2 {
				ao, ae := ZMM(), ZMM()
				VMOVUPS(g.act.at(a, 128*h), ao)
				VMOVUPS(g.act.at(a, 128*h), ae)
				VPERMT2PS(g.act.at(a, 128*h+64), odd, ao)
				VPERMT2PS(g.act.at(a, 128*h+64), even, ae)
				VMULPS(wo[h], ao, ao)
				VADDPS(ao, g.acc[a][h], g.acc[a][h])
				VMULPS(we[h], ae, ae)
				VADDPS(ae, g.acc[a][h], g.acc[a][h])
			}
		}
	} else {
		var wv [4]reg.VecVirtual
		for i := range wv {
			wv[i] = ZMM()
			if g.ft.size == 4 {
				VMOVUPS(Mem{Base: g.w, Disp: 64 * i}, wv[i])
			} else {
				VCVTPH2PS(Mem{Base: g.w, Disp: 32 * i}, wv[i])
			}
		}
		for a := range g.na {
			for i := range wv {
				VFMADD231PS(g.act.at(a, 64*i), wv[i], g.acc[a][i])
			}
		}
	}
	ADDQ(U32(64*g.ft.size), g.w)
	g.act.advance(256)
	DECQ(cnt)
	JNZ(LabelRef(g.name() + "_steps"))
	Label(g.name() + "_reduce")
	dst := loadStrided("dst", "dstStride", g.na, 4)
	LEAQ(Mem{Base: dst.base, Index: r, Scale: 4}, dst.base)
	if dst.base4 != nil {
		LEAQ(Mem{Base: dst.base4, Index: r, Scale: 4}, dst.base4)
	}
	tail := loadGP("nb")
	ANDQ(U8(63), tail)
	for a := range g.na {
		var s reg.VecVirtual
		if bf {
			c0, c1 := reduce16p(g.acc[a][0]), reduce16p(g.acc[a][1])
			s = XMM()
			VCVTSS2SD(c0, c0, s)
			VCVTSS2SD(c1, c1, c1)
			VADDSD(c1, s, s)
		} else {
			c := g.acc[a]
			VADDPS(c[2], c[0], c[0])
			VADDPS(c[3], c[1], c[1])
			VADDPS(c[1], c[0], c[0])
			s = reduce16p(c[0])
			if g.ft.name == "F16" {
				VCVTSS2SD(s, s, s)
			}
		}
		g.tail(a, tail, s)
		if g.ft.name != "F32" {
			VCVTSD2SS(s, s, s)
		}
		VMOVSS(s, dst.at(a, 0))
	}
	INCQ(r)
	loopRows(g.name(), r)
}

// tail adds the last nb mod 64 products of activation row a to s (a
// float64 sum for F16/BF16, float32 for F32); g.w and g.act point at the
// first of them.
func (g *gemmf) tail(a int, n reg.GPVirtual, s reg.VecVirtual) {
	pa, pw, i := GP64(), GP64(), GP64()
	LEAQ(g.act.at(a, 0), pa)
	MOVQ(g.w, pw)
	MOVQ(n, i)
	x := XMM()
	done := fmt.Sprintf("%s_tail%d_done", g.name(), a)
	if g.ft.name == "F32" {
		// whole groups of four: rounded products, float32 adds
		ANDQ(U8(^3&0xff), i) // i = n &^ 3 (n < 64)
		JZ(LabelRef(fmt.Sprintf("%s_tail%d_fused", g.name(), a)))
		Label(fmt.Sprintf("%s_tail%d_round", g.name(), a))
		VMOVSS(Mem{Base: pa}, x)
		VMULSS(Mem{Base: pw}, x, x)
		VADDSS(x, s, s)
		ADDQ(U8(4), pa)
		ADDQ(U8(4), pw)
		DECQ(i)
		JNZ(LabelRef(fmt.Sprintf("%s_tail%d_round", g.name(), a)))
		Label(fmt.Sprintf("%s_tail%d_fused", g.name(), a))
		MOVQ(n, i)
		ANDQ(U8(3), i)
		JZ(LabelRef(done))
		Label(fmt.Sprintf("%s_tail%d_fma", g.name(), a))
		VMOVSS(Mem{Base: pa}, x)
		VFMADD231SS(Mem{Base: pw}, x, s)
		ADDQ(U8(4), pa)
		ADDQ(U8(4), pw)
		DECQ(i)
		JNZ(LabelRef(fmt.Sprintf("%s_tail%d_fma", g.name(), a)))
		Label(done)
		return
	}
	TESTQ(i, i)
	JZ(LabelRef(done))
	loop := fmt.Sprintf("%s_tail%d", g.name(), a)
	Label(loop)
	h := GP32()
	MOVWLZX(Mem{Base: pw}, h)
	y := XMM()
	if g.ft.name == "BF16" {
		SHLL(U8(16), h)
		VMOVD(h, y)
	} else {
		VMOVD(h, y)
		VCVTPH2PS(y, y)
	}
	VMULSS(Mem{Base: pa}, y, y) // rounded float32 product
	VCVTSS2SD(y, y, y)
	VADDSD(y, s, s)
	ADDQ(U8(4), pa)
	ADDQ(U8(2), pw)
	DECQ(i)
	JNZ(LabelRef(loop))
	Label(done)
}

// reduce16p is reduce16 on a physical (pinned) register.
func reduce16p(v reg.VecPhysical) reg.VecVirtual {
	h := YMM()
	VEXTRACTF32X8(U8(1), v, h)
	VADDPS(h, v.AsY(), h)
	q := XMM()
	VEXTRACTF32X4(U8(1), h, q)
	VADDPS(q, h.AsX(), q)
	t := XMM()
	VPERMILPS(U8(0x4e), q, t)
	VADDPS(t, q, q)
	VPERMILPS(U8(0xb1), q, t)
	VADDPS(t, q, q)
	return q
}
