package main

import (
	"fmt"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	"github.com/mmcloughlin/avo/reg"
)

// GEMM kernels for the 5-bit 32-element block types (Q5_0, Q5_1) against
// activations quantized to Q8_0/Q8_1, in gemm32's layout (see gemm32.go):
// four weight rows per ZMM, one 128-bit chunk each, "lo" holding elements
// 0..15 (generic lanes 0..3) and "hi" elements 16..31 (lanes 4..7).
//
// The weights go to VPDPBUSD as the unsigned 5-bit values nibble | bit<<4
// (0..31): Q5_0's −16 offset comes in through the records' corrections
// (bias 16), Q5_1 has none. The fifth bits of the four rows' qh words are
// gathered into two 64-bit masks (bit 16i+j: row i, element j resp. j+16)
// and added as 16 under the mask. Per block and activation row,
//
//	lanes = Σ u5(w)·s8(y) (+ bias correction)      exact int32
//	acc   = fma(dw·da, float(lanes), acc)            per lane, dw·da exact
//	summs = fma(mw, s, summs)                        Q5_1 only, mw·s exact
//
// and dst = ((l0+l4)+(l2+l6))+((l1+l5)+(l3+l7)) [+ summs], the generic order.

// block5Type describes a 5-bit weight block.
type block5Type struct {
	name string
	size int  // bytes per block
	qh   int  // offset of the fifth bits (uint32)
	qs   int  // offset of the nibbles
	min  bool // Q5_1: m at offset 2, result += Σ m·s
}

var block5Types = []block5Type{
	{name: "Q5_0", size: 22, qh: 2, qs: 6},
	{name: "Q5_1", size: 24, qh: 4, qs: 8, min: true},
}

func (bt block5Type) tile() int {
	if bt.min {
		return gemm32TileMin
	}
	return gemm32Tile
}

func genGemm5() {
	for _, bt := range block5Types {
		for a := 1; a <= bt.tile(); a++ {
			g := &gemm5{tile4: tile4{na: a, min: bt.min}, bt: bt}
			g.gen()
		}
	}
}

// gemm5 emits one kernel.
type gemm5 struct {
	tile4
	bt  block5Type
	c10 reg.VecVirtual // bytes 0x10
}

func (g *gemm5) name() string { return fmt.Sprintf("gemm%s_%d", g.bt.name, g.na) }

func (g *gemm5) gen() {
	TEXT(g.name(), NOSPLIT, rowKernelSig)
	Doc(fmt.Sprintf("%s multiplies rows weight rows of type %s with %d activation rows of records.",
		g.name(), g.bt.name, g.na))
	Pragma("noescape")
	r := rowsLoop(g.name())
	g.rowPointers(r)
	g.zeroAcc()
	g.act = loadStrided("act", "actStride", g.na, 1)
	g.off = GP64()
	XORQ(g.off, g.off)
	cnt := GP64()
	Load(Param("nb"), cnt)
	g.c10 = ZMM()
	VPBROADCASTD(constU32("byte10", 0x10101010), g.c10)
	Label(g.name() + "_blocks")
	for i := range 4 {
		prefetchWeights(g.wmem(i, prefetchAhead), g.na)
	}
	g.loadWeights()
	for a := range g.na {
		g.accumulate(a)
	}
	ADDQ(U32(g.bt.size), g.off)
	g.act.advance(gemm32Rec)
	DECQ(cnt)
	JNZ(LabelRef(g.name() + "_blocks"))
	g.store(r)
	ADDQ(U8(4), r)
	loopRows(g.name(), r)
}

// loadWeights fills lo, hi (unsigned 5-bit bytes, four rows) and the scales.
func (g *gemm5) loadWeights() {
	g.lo, g.hi = ZMM(), ZMM()
	q := ZMM()
	VMOVDQU(g.wmem(0, g.bt.qs), q.AsX())
	for i := 1; i < 4; i++ {
		VINSERTI32X4(U8(i), g.wmem(i, g.bt.qs), q, q)
	}
	g.splitNibbles(q)
	// Fifth bits: x = [qh0 qh1 qh2 qh3]; shuffled to the low halves of
	// the four words in the low qword, the high halves in the high qword.
	x := XMM()
	VMOVD(g.wmem(0, g.bt.qh), x)
	for i := 1; i < 4; i++ {
		VPINSRD(U8(i), g.wmem(i, g.bt.qh), x, x)
	}
	VPSHUFB(constU32("shufQH", 0x05040100, 0x0d0c0908, 0x07060302, 0x0f0e0b0a), x, x)
	b := GP64()
	klo, khi := K(), K()
	VMOVQ(x, b)
	KMOVQ(b, klo)
	VPEXTRQ(U8(1), x, b)
	KMOVQ(b, khi)
	VPADDB(g.c10, g.lo, klo, g.lo)
	VPADDB(g.c10, g.hi, khi, g.hi)
	g.loadScales()
}
