package main

import (
	"fmt"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	"github.com/mmcloughlin/avo/reg"
)

// The fast arithmetic's kernels for AVX2 (VEX, 16 YMM registers): gemmq's
// layouts, records and float work (see gemmq.go), with the integer sums
// of gemmr's AVX2 kernels (Q4_0's are gemmr's):
//
//	4-bit: VPMADDUBSW(u4 nibbles, y) pairs summed over the block in int16
//	       (|Σ| ≤ 8·2·15·127 < 2¹⁵), then VPMADDWD by ones
//	5-bit: per chunk, VPMADDUBSW of both halves added in int16 (|Σ| ≤
//	       2·2·31·127 < 2¹⁵), VPMADDWD by ones, VPADDD
//	8-bit: per chunk, VPMADDUBSW(|q|, sign(q)·y) (|pair| ≤ 2·128·127 <
//	       2¹⁵), VPMADDWD by ones, VPADDD; the record's correction is
//	       unused (no re-biasing)
//
// every sum exact, so the results are the AVX-512 kernels' bit for bit.
const fastTileAVX2 = 6

func genGemmQAVX2() {
	for _, t := range fastTypes[1:] { // Q4_0: gemmr
		for a := 1; a <= fastTileAVX2; a++ {
			(&gemmQ2{t: t, na: a}).gen()
		}
	}
}

// gemmQ2 emits one AVX2 kernel of na activation rows.
type gemmQ2 struct {
	t   fastType
	na  int
	acc []reg.VecVirtual
	sum []reg.VecVirtual
	act strided
	p   reg.GPVirtual
}

func (g *gemmQ2) name() string { return fmt.Sprintf("gemmF%s_avx2_%d", g.t.name, g.na) }

func (g *gemmQ2) gen() {
	name := g.name()
	r, group := groupKernel(name, fmt.Sprintf("%s multiplies rows %s weight rows in the fast layout (groups of 8, groupBytes apart; rows a multiple of 8) with %d activation rows of fast records (AVX2).",
		name, g.t.name, g.na))
	Label(name + "_rows")
	g.acc = make([]reg.VecVirtual, g.na)
	for a := range g.acc {
		g.acc[a] = YMM()
		VXORPS(g.acc[a], g.acc[a], g.acc[a])
	}
	g.act = loadStrided("act", "actStride", g.na, 1)
	g.p = GP64()
	cnt := GP64()
	MOVQ(group, g.p)
	Load(Param("nb"), cnt)
	Label(name + "_blocks")
	for d := 0; d < g.t.groupBlock(); d += 64 {
		prefetchWeights(Mem{Base: g.p, Disp: prefetchAhead + d}, g.na)
	}
	switch {
	case g.t.q8:
		g.sums8()
	case g.t.q5:
		g.sums5()
	default:
		g.sums4()
	}
	g.float()
	ADDQ(U32(g.t.groupBlock()), g.p)
	g.act.advance(fastRec)
	DECQ(cnt)
	JNZ(LabelRef(name + "_blocks"))
	storeAcc(r, g.acc)
	nextGroup(name, r, group, fastGroup)
}

func ones16() Mem {
	return constU32("ones16_8", 0x00010001, 0x00010001, 0x00010001, 0x00010001, 0x00010001, 0x00010001, 0x00010001, 0x00010001)
}

// nibbles2 loads chunk c's low and high nibbles.
func (g *gemmQ2) nibbles2(c int) (lo, hi reg.VecVirtual) {
	mask := constU32("nib0F_8", 0x0F0F0F0F, 0x0F0F0F0F, 0x0F0F0F0F, 0x0F0F0F0F, 0x0F0F0F0F, 0x0F0F0F0F, 0x0F0F0F0F, 0x0F0F0F0F)
	lo, hi = YMM(), YMM()
	VMOVDQU(Mem{Base: g.p, Disp: g.t.chunks() + 32*c}, hi)
	VPAND(mask, hi, lo)
	VPSRLW(U8(4), hi, hi)
	VPAND(mask, hi, hi)
	return lo, hi
}

// sums4: Q4_1, int16 sums over the block, then one VPMADDWD.
func (g *gemmQ2) sums4() {
	g.sum = make([]reg.VecVirtual, g.na)
	for c := range 4 {
		lo, hi := g.nibbles2(c)
		for a := range g.na {
			for h, w := range []reg.VecVirtual{lo, hi} {
				y := YMM()
				VPBROADCASTD(g.act.at(a, 16*h+4*c), y)
				if c == 0 && h == 0 {
					g.sum[a] = YMM()
					VPMADDUBSW(y, w, g.sum[a])
					continue
				}
				VPMADDUBSW(y, w, y)
				VPADDW(y, g.sum[a], g.sum[a])
			}
		}
	}
	for _, s := range g.sum {
		VPMADDWD(ones16(), s, s)
	}
}

// startSums sets each token's int32 sum to its record's correction (bias
// types) or zero.
func (g *gemmQ2) startSums() {
	g.sum = make([]reg.VecVirtual, g.na)
	for a := range g.sum {
		g.sum[a] = YMM()
		if g.t.bias && !g.t.q8 {
			VPBROADCASTD(g.act.at(a, fastRecX), g.sum[a])
		} else {
			VPXOR(g.sum[a], g.sum[a], g.sum[a])
		}
	}
}

// sums5: Q5_0, Q5_1, the high bits ORed in from the qhLanes words.
func (g *gemmQ2) sums5() {
	g.startSums()
	for c := range 4 {
		lo, hi := g.nibbles2(c)
		for h, v := range []reg.VecVirtual{lo, hi} {
			i, t := c+4*h, YMM()
			VMOVDQU(Mem{Base: g.p, Disp: 8 * g.t.hdr}, t)
			switch {
			case i < 4:
				VPSLLD(U8(4-i), t, t)
			case i > 4:
				VPSRLD(U8(i-4), t, t)
			}
			VPAND(constU32("byte10_8", 0x10101010, 0x10101010, 0x10101010, 0x10101010, 0x10101010, 0x10101010, 0x10101010, 0x10101010), t, t)
			VPOR(t, v, v)
		}
		for a := range g.na {
			y, t := YMM(), YMM()
			VPBROADCASTD(g.act.at(a, 4*c), y)
			VPMADDUBSW(y, lo, t)
			VPBROADCASTD(g.act.at(a, 16+4*c), y)
			VPMADDUBSW(y, hi, y)
			VPADDW(y, t, t)
			VPMADDWD(ones16(), t, t)
			VPADDD(t, g.sum[a], g.sum[a])
		}
	}
}

// sums8: Q8_0 with the sign trick.
func (g *gemmQ2) sums8() {
	g.startSums()
	for c := range 8 {
		w, aw := YMM(), YMM()
		VMOVDQU(Mem{Base: g.p, Disp: g.t.chunks() + 32*c}, w)
		VPABSB(w, aw)
		for a := range g.na {
			y := YMM()
			VPBROADCASTD(g.act.at(a, 4*c), y)
			VPSIGNB(w, y, y)
			VPMADDUBSW(y, aw, y)
			VPMADDWD(ones16(), y, y)
			VPADDD(y, g.sum[a], g.sum[a])
		}
	}
}

// float adds every token's block: acc = fma(float(sum), dw·da, acc), then
// for the types with a minimum acc = fma(mw, s, acc).
func (g *gemmQ2) float() {
	dw := YMM()
	VCVTPH2PS(Mem{Base: g.p}, dw)
	for a, s := range g.sum {
		dd := YMM()
		VCVTDQ2PS(s, s)
		VBROADCASTSS(g.act.at(a, fastRecD), dd)
		VMULPS(dw, dd, dd) // dw·da, exact
		VFMADD231PS(s, dd, g.acc[a])
	}
	if !g.t.min() {
		return
	}
	mw := YMM()
	VCVTPH2PS(Mem{Base: g.p, Disp: 16}, mw)
	for a := range g.na {
		s := YMM()
		VBROADCASTSS(g.act.at(a, fastRecX), s)
		VFMADD231PS(mw, s, g.acc[a]) // mw·s
	}
}
