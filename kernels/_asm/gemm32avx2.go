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

// gemm32v emits one AVX2 kernel: nr weight rows at a time (rowsPerPass),
// so that a one-token kernel still has several independent FMA chains.
type gemm32v struct {
	bt   blockType
	na   int
	nr   int             // weight rows per pass
	p    []reg.GPVirtual // (nr) row pointers; rows past the last repeat row r
	off  reg.GPVirtual   // byte offset of the current block in a row
	act  strided
	acc  [][]reg.VecVirtual // (nr, na) YMM lanes
	summ []reg.VecVirtual   // (nr) Q4_1, vecSumm: Σ m·s of activation row a in lane a
	sums [][]reg.VecVirtual // (nr, na) Q4_1, !vecSumm: Σ m·s in lane 0 of an XMM
}

// vecSumm reports whether the kernel accumulates Σ m·s across activation
// rows in one register per weight row.
func (g *gemm32v) vecSumm() bool { return g.bt.min && g.na > 2 }

// rowsPerPass is how many weight rows a kernel of na activation rows takes
// at once: enough independent accumulators to hide the FMA latency, few
// enough to stay within 16 registers.
func rowsPerPass(na int) int { return max(1, 4/na) }

func (g *gemm32v) name() string { return fmt.Sprintf("gemm%s_avx2_%d", g.bt.name, g.na) }

func (g *gemm32v) gen() {
	g.nr = rowsPerPass(g.na)
	TEXT(g.name(), NOSPLIT, "func(w *byte, rowBytes, rows int, act *byte, actStride int, nb int, dst *float32, dstStride int)")
	Doc(fmt.Sprintf("%s multiplies rows weight rows of type %s with %d activation rows of records (AVX2).", g.name(), g.bt.name, g.na))
	Pragma("noescape")
	r := GP64()
	XORQ(r, r)
	Label(g.name() + "_rows")
	g.rowPointers(r)
	g.acc, g.summ, g.sums = make([][]reg.VecVirtual, g.nr), make([]reg.VecVirtual, g.nr), make([][]reg.VecVirtual, g.nr)
	for i := range g.nr {
		for range g.na {
			a := YMM()
			VXORPS(a, a, a)
			g.acc[i] = append(g.acc[i], a)
			if g.bt.min && !g.vecSumm() {
				x := XMM()
				VXORPS(x, x, x)
				g.sums[i] = append(g.sums[i], x)
			}
		}
		if g.vecSumm() {
			g.summ[i] = YMM()
			VXORPS(g.summ[i], g.summ[i], g.summ[i])
		}
	}
	g.act = loadStrided("act", "actStride", g.na, 1)
	g.off = GP64()
	XORQ(g.off, g.off)
	cnt := loadGP("nb")
	Label(g.name() + "_blocks")
	for i := range g.nr {
		PREFETCHT0(g.wmem(i, prefetchAhead))
	}
	for i := range g.nr {
		g.block(i)
	}
	ADDQ(U32(g.bt.size), g.off)
	g.act.advance(gemm32Rec)
	DECQ(cnt)
	JNZ(LabelRef(g.name() + "_blocks"))
	g.store(r)
	ADDQ(U8(g.nr), r)
	rows := loadGP("rows")
	CMPQ(r, rows)
	JL(LabelRef(g.name() + "_rows"))
	VZEROUPPER()
	RET()
}

// rowPointers sets p[i] to weight row r+i, or to row r when r+i is past
// the last row (its results are computed and not stored).
func (g *gemm32v) rowPointers(r reg.GPVirtual) {
	w, rb, left := loadGP("w"), loadGP("rowBytes"), loadGP("rows")
	SUBQ(r, left)
	g.p = make([]reg.GPVirtual, g.nr)
	g.p[0] = GP64()
	MOVQ(rb, g.p[0])
	IMULQ(r, g.p[0])
	ADDQ(w, g.p[0])
	for i := 1; i < g.nr; i++ {
		g.p[i] = GP64()
		LEAQ(Mem{Base: g.p[i-1], Index: rb, Scale: 1}, g.p[i])
		CMPQ(left, U8(i))
		CMOVQLE(g.p[0], g.p[i])
	}
}

// wmem addresses byte disp of the current block of pass row i.
func (g *gemm32v) wmem(i, disp int) Mem {
	return Mem{Base: g.p[i], Index: g.off, Scale: 1, Disp: disp}
}

// block adds one block of pass row i for every activation row.
func (g *gemm32v) block(i int) {
	wv, wabs := YMM(), YMM()
	if g.bt.nib {
		x, h := XMM(), XMM()
		VMOVDQU(g.wmem(i, g.bt.qs), x)
		VPSRLW(U8(4), x, h)
		VINSERTI128(U8(1), h, x.AsY(), wv)
		VPAND(constU32("nib0F_avx2", 0x0F0F0F0F, 0x0F0F0F0F, 0x0F0F0F0F, 0x0F0F0F0F,
			0x0F0F0F0F, 0x0F0F0F0F, 0x0F0F0F0F, 0x0F0F0F0F), wv, wv)
	} else {
		VMOVDQU(g.wmem(i, g.bt.qs), wv)
		VPABSB(wv, wabs)
	}
	// Scales: [d, m] of the block as float32 in an XMM; dw broadcast.
	sx, dw := XMM(), YMM()
	VMOVD(g.wmem(i, 0), sx)
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
		VFMADD231PS(g.act.at(0, recSAhead), mw, g.summ[i]) // lane a: m·s of row a
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
		VFMADD231PS(p, dd, g.acc[i][a])
		if g.bt.min && !g.vecSumm() {
			VFMADD231SS(g.act.at(a, recS), m, g.sums[i][a])
		}
	}
}

// store reduces and writes dst[a·dstStride + r + i] for every activation
// row and every pass row i that exists.
func (g *gemm32v) store(r reg.GPVirtual) {
	dst := loadStrided("dst", "dstStride", g.na, 4)
	LEAQ(Mem{Base: dst.base, Index: r, Scale: 4}, dst.base)
	if dst.base4 != nil {
		LEAQ(Mem{Base: dst.base4, Index: r, Scale: 4}, dst.base4)
	}
	for i := range g.nr {
		if i > 0 {
			left := loadGP("rows")
			SUBQ(r, left)
			CMPQ(left, U8(i))
			JLE(LabelRef(fmt.Sprintf("%s_stored", g.name())))
		}
		for a := range g.na {
			t, u := XMM(), XMM()
			VEXTRACTF128(U8(1), g.acc[i][a], t)
			VADDPS(t, g.acc[i][a].AsX(), t) // l0+l4, l1+l5, l2+l6, l3+l7
			VPERMILPS(U8(0x4e), t, u)
			VADDPS(u, t, t)
			VPERMILPS(U8(0xb1), t, u)
			VADDPS(u, t, t)
			switch {
			case g.vecSumm():
				VADDSS(g.lane(g.summ[i], a), t, t)
			case g.bt.min:
				VADDSS(g.sums[i][a], t, t)
			}
			VMOVSS(t, dst.at(a, 4*i))
		}
	}
	Label(fmt.Sprintf("%s_stored", g.name()))
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
