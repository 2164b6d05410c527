package main

import (
	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	"github.com/mmcloughlin/avo/reg"
)

// tile4 is what the 32-element block kernels (gemm32, gemm5) share: four
// weight rows per ZMM register, one 128-bit chunk each, "lo" holding
// elements 0..15 of a block (generic lanes 0..3) and "hi" elements 16..31
// (lanes 4..7), and na activation rows of gemm32 records, each with two
// accumulators (and a third for the types with mins). The kernels differ
// only in how they load lo, hi and the scales.
type tile4 struct {
	na  int  // activation rows
	min bool // weights with mins (Q4_1, Q5_1): result += Σ m·s

	p    [4]reg.GPVirtual // weight row pointers
	off  reg.GPVirtual    // byte offset of the current block in a row
	act  strided          // current activation record of row 0, stride
	lo   reg.VecVirtual   // weight quants of elements 0..15, four rows
	hi   reg.VecVirtual   // elements 16..31
	dw   reg.VecVirtual   // weight scales [d0×4, d1×4, d2×4, d3×4]
	mw   reg.VecVirtual   // mins [m0 m1 m2 m3] in the low XMM
	acc  [][2]reg.VecPhysical
	summ []reg.VecPhysical
}

// rowPointers sets p[i] to weight row r+i, or to row r when r+i is past
// the last row (its results are computed and discarded).
func (g *tile4) rowPointers(r reg.GPVirtual) {
	w, rb, left := GP64(), GP64(), GP64()
	Load(Param("w"), w)
	Load(Param("rowBytes"), rb)
	Load(Param("rows"), left)
	SUBQ(r, left)
	g.p[0] = GP64()
	MOVQ(rb, g.p[0])
	IMULQ(r, g.p[0])
	ADDQ(w, g.p[0])
	for i := 1; i < 4; i++ {
		g.p[i] = GP64()
		LEAQ(Mem{Base: g.p[i-1], Index: rb, Scale: 1}, g.p[i])
		CMPQ(left, U8(i))
		CMOVQLE(g.p[0], g.p[i])
	}
}

func (g *tile4) zeroAcc() {
	g.acc = make([][2]reg.VecPhysical, g.na)
	g.summ = nil
	var pin pinned
	for a := range g.na {
		z := pin.zero(2)
		g.acc[a] = [2]reg.VecPhysical{z[0], z[1]}
		if g.min {
			g.summ = append(g.summ, pin.zero(1)[0])
		}
	}
}

// loadScales sets dw (and mw) from the first dword of each row's block,
// two halves [d, m or quants]: s = [d0 m0 d1 m1 d2 m2 d3 m3] as float32.
func (g *tile4) loadScales() {
	x := XMM()
	VMOVD(g.wmem(0, 0), x)
	for i := 1; i < 4; i++ {
		VPINSRD(U8(i), g.wmem(i, 0), x, x)
	}
	s := ZMM()
	VCVTPH2PS(x, s.AsY())
	idx := ZMM()
	VMOVDQU32(constU32("permDW", 0, 0, 0, 0, 2, 2, 2, 2, 4, 4, 4, 4, 6, 6, 6, 6), idx)
	g.dw = ZMM()
	VPERMPS(s, idx, g.dw)
	if g.min {
		VMOVDQU32(constU32("permMW", 1, 3, 5, 7, 1, 3, 5, 7, 1, 3, 5, 7, 1, 3, 5, 7), idx)
		g.mw = ZMM()
		VPERMPS(s, idx, g.mw)
	}
}

// wmem addresses byte disp of the current block of weight row i.
func (g *tile4) wmem(i, disp int) Mem {
	return Mem{Base: g.p[i], Index: g.off, Scale: 1, Disp: disp}
}

// accumulate adds the current block of activation row a.
func (g *tile4) accumulate(a int) {
	il, ih := ZMM(), ZMM()
	for h, i := range []reg.VecVirtual{il, ih} {
		if g.min {
			zero(i)
		} else {
			VBROADCASTI32X4(g.act.at(a, recCorr+16*h), i)
		}
	}
	y := ZMM()
	VBROADCASTI32X4(g.act.at(a, recQS), y)
	vpdpbusd(y, g.lo, il)
	y = ZMM()
	VBROADCASTI32X4(g.act.at(a, recQS+16), y)
	vpdpbusd(y, g.hi, ih)
	VCVTDQ2PS(il, il)
	VCVTDQ2PS(ih, ih)
	dd := ZMM()
	VMULPS_BCST(g.act.at(a, recD), g.dw, dd) // dw·da, exact
	VFMADD231PS(il, dd, g.acc[a][0])
	VFMADD231PS(ih, dd, g.acc[a][1])
	if g.min {
		VFMADD231PS_BCST(g.act.at(a, recS), g.mw.AsX(), g.summ[a].AsX())
	}
}

// store reduces each activation row's lanes and writes the (up to four)
// valid rows of results.
func (g *tile4) store(r reg.GPVirtual) {
	k := K()
	left, bits := GP64(), GP64()
	Load(Param("rows"), left)
	SUBQ(r, left)
	MOVQ(U32(4), bits)
	CMPQ(left, U8(4))
	CMOVQGT(bits, left) // rows left, at most 4
	MOVQ(U32(0xF), bits)
	BZHIQ(left, bits, bits) // (1<<left)−1
	KMOVW(bits.As32(), k)
	dst := loadStrided("dst", "dstStride", g.na, 4)
	LEAQ(Mem{Base: dst.base, Index: r, Scale: 4}, dst.base)
	if dst.base4 != nil {
		LEAQ(Mem{Base: dst.base4, Index: r, Scale: 4}, dst.base4)
	}
	idx := ZMM()
	VMOVDQU32(constU32("permSum", 0, 4, 8, 12, 0, 4, 8, 12, 0, 4, 8, 12, 0, 4, 8, 12), idx)
	for a := range g.na {
		t, u := ZMM(), ZMM()
		VADDPS(g.acc[a][1], g.acc[a][0], t) // l0+l4, l1+l5, l2+l6, l3+l7
		VPERMILPS(U8(0x4E), t, u)
		VADDPS(u, t, t) // (l0+l4)+(l2+l6), (l1+l5)+(l3+l7)
		VPERMILPS(U8(0xB1), t, u)
		VADDPS(u, t, t)
		VPERMPS(t, idx, t)
		if g.min {
			VADDPS(g.summ[a].AsX(), t.AsX(), t.AsX())
		}
		VMOVUPS(t.AsX(), k, dst.at(a, 0))
	}
}

// splitNibbles sets lo to the low nibble of each byte of q and hi to the
// high nibble.
func (g *tile4) splitNibbles(q reg.VecVirtual) {
	mask := constU32("nib0F", 0x0F0F0F0F)
	VPSRLW(U8(4), q, g.hi)
	VPANDD_BCST(mask, q, g.lo)
	VPANDD_BCST(mask, g.hi, g.hi)
}
