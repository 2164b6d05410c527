package main

import (
	"fmt"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	"github.com/mmcloughlin/avo/reg"
)

// AVX2 versions of the 32-element block GEMM kernels, for CPUs without
// AVX-512 (VEX encoding, 16 YMM registers). One weight row at a time, one
// YMM of eight int32 lanes per activation row and block, made the way
// ggml's AVX2 kernels make them: VPMADDUBSW (unsigned × signed byte pairs
// into int16) then VPMADDWD by ones (pairs into int32), so lane k again
// sums elements 4k..4k+3. Products never saturate: Q4 nibbles are at most
// 15, and Q8_0 multiplies |w| by y with w's sign. Q4_0's −8 offset comes
// from the records' correction (bias 8); Q8_0 needs none (records with
// bias 0).
//
// In tiles of more than two activation rows, Q4_1's Σ m·s is accumulated
// for all of them at once, one lane each: types with mins have no
// correction, and their records carry in its place the s of the block for
// the record's row and the 7 after it (recSAhead, written by
// actRows.sAhead), so a tile reads the s of its rows with one load.
// Narrower tiles keep one scalar FMA per row, which costs them less.
const (
	gemm32TileAVX2 = 8
	recSAhead      = recCorr
)

func genGemm32AVX2() {
	for _, bt := range blockTypes {
		for a := 1; a <= gemm32TileAVX2; a++ {
			g := &gemm32v{bt: bt, na: a}
			g.gen()
		}
	}
}

// gemm32v emits one AVX2 kernel, one weight row at a time: on a
// memory-bound one-token product, rows read side by side were slower than
// one sequential stream (Q8_0 by a third).
type gemm32v struct {
	bt   blockType
	na   int
	w    reg.GPVirtual // current block of the current row
	act  strided
	acc  []reg.VecVirtual // (na) YMM lanes
	summ reg.VecVirtual   // Q4_1, vecSumm: Σ m·s of activation row a in lane a
	sums []reg.VecVirtual // (na) Q4_1, !vecSumm: Σ m·s in lane 0 of an XMM
}

// vecSumm reports whether the kernel accumulates Σ m·s of all its
// activation rows in one register.
func (g *gemm32v) vecSumm() bool { return g.bt.min && g.na > 2 }

func (g *gemm32v) name() string { return fmt.Sprintf("gemm%s_avx2_%d", g.bt.name, g.na) }

func (g *gemm32v) gen() {
	TEXT(g.name(), NOSPLIT, rowKernelSig)
	Doc(fmt.Sprintf("%s multiplies rows weight rows of type %s with %d activation rows of records (AVX2).", g.name(), g.bt.name, g.na))
	Pragma("noescape")
	r := rowsLoop(g.name())
	g.w = GP64()
	rb := GP64()
	Load(Param("rowBytes"), rb)
	IMULQ(r, rb)
	Load(Param("w"), g.w)
	ADDQ(rb, g.w)
	g.acc, g.sums = nil, nil
	for range g.na {
		a := YMM()
		VXORPS(a, a, a)
		g.acc = append(g.acc, a)
		if g.bt.min && !g.vecSumm() {
			x := XMM()
			VXORPS(x, x, x)
			g.sums = append(g.sums, x)
		}
	}
	if g.vecSumm() {
		g.summ = YMM()
		VXORPS(g.summ, g.summ, g.summ)
	}
	g.act = loadStrided("act", "actStride", g.na, 1)
	cnt := loadGP("nb")
	Label(g.name() + "_blocks")
	prefetchWeights(Mem{Base: g.w, Disp: prefetchAhead}, g.na)
	g.block()
	ADDQ(U32(g.bt.size), g.w)
	g.act.advance(gemm32Rec)
	DECQ(cnt)
	JNZ(LabelRef(g.name() + "_blocks"))
	g.store(r)
	INCQ(r)
	loopRows(g.name(), r)
}

// block adds one block of the current row for every activation row.
func (g *gemm32v) block() {
	wv, wabs := YMM(), YMM()
	if g.bt.nib {
		x, h := XMM(), XMM()
		VMOVDQU(Mem{Base: g.w, Disp: g.bt.qs}, x)
		VPSRLW(U8(4), x, h)
		VINSERTI128(U8(1), h, x.AsY(), wv)
		VPAND(constU32("nib0F_avx2", 0x0F0F0F0F, 0x0F0F0F0F, 0x0F0F0F0F, 0x0F0F0F0F,
			0x0F0F0F0F, 0x0F0F0F0F, 0x0F0F0F0F, 0x0F0F0F0F), wv, wv)
	} else {
		VMOVDQU(Mem{Base: g.w, Disp: g.bt.qs}, wv)
		VPABSB(wv, wabs)
	}
	// Scales: [d, m] of the block as float32 in an XMM; dw broadcast.
	sx, dw := XMM(), YMM()
	VMOVD(Mem{Base: g.w}, sx)
	VCVTPH2PS(sx, sx)
	VBROADCASTSS(sx, dw)
	var m reg.VecVirtual
	if g.bt.min {
		m = XMM()
		VMOVSHDUP(sx, m) // m in lane 0
	}
	if g.vecSumm() {
		mw := YMM()
		VBROADCASTSS(m, mw)
		VFMADD231PS(g.act.at(0, recSAhead), mw, g.summ) // lane a: m·s of row a
	}
	ones := constU32("ones16_avx2", 0x00010001, 0x00010001, 0x00010001, 0x00010001,
		0x00010001, 0x00010001, 0x00010001, 0x00010001)
	for a := range g.na {
		y, p := YMM(), YMM()
		VMOVDQU(g.act.at(a, recQS), y)
		if g.bt.nib {
			VPMADDUBSW(y, wv, p) // nibble · y pairs
		} else {
			VPSIGNB(wv, y, y)
			VPMADDUBSW(y, wabs, p) // |w| · sign(w)·y pairs
		}
		VPMADDWD(ones, p, p)
		if !g.bt.min && g.bt.nib {
			VPADDD(g.act.at(a, recCorr), p, p) // −8·Σy per dword
		}
		VCVTDQ2PS(p, p)
		dd := YMM()
		VBROADCASTSS(g.act.at(a, recD), dd)
		VMULPS(dw, dd, dd) // dw·da, exact
		VFMADD231PS(p, dd, g.acc[a])
		if g.bt.min && !g.vecSumm() {
			VFMADD231SS(g.act.at(a, recS), m, g.sums[a])
		}
	}
}

// store reduces and writes dst[a·dstStride + r] for every activation row.
func (g *gemm32v) store(r reg.GPVirtual) {
	dst := loadStrided("dst", "dstStride", g.na, 4)
	LEAQ(Mem{Base: dst.base, Index: r, Scale: 4}, dst.base)
	if dst.base4 != nil {
		LEAQ(Mem{Base: dst.base4, Index: r, Scale: 4}, dst.base4)
	}
	for a := range g.na {
		t, u := XMM(), XMM()
		VEXTRACTF128(U8(1), g.acc[a], t)
		VADDPS(t, g.acc[a].AsX(), t) // l0+l4, l1+l5, l2+l6, l3+l7
		VPERMILPS(U8(0x4e), t, u)
		VADDPS(u, t, t)
		VPERMILPS(U8(0xb1), t, u)
		VADDPS(u, t, t)
		switch {
		case g.vecSumm():
			VADDSS(g.lane(g.summ, a), t, t)
		case g.bt.min:
			VADDSS(g.sums[a], t, t)
		}
		VMOVSS(t, dst.at(a, 0))
	}
}

// lane returns an XMM whose lane 0 is lane a of v.
func (g *gemm32v) lane(v reg.VecVirtual, a int) reg.VecVirtual {
	x := XMM()
	if a < 4 {
		VPERMILPS(U8(a*0x55), v.AsX(), x)
		return x
	}
	VEXTRACTF128(U8(1), v, x)
	VPERMILPS(U8((a-4)*0x55), x, x)
	return x
}
