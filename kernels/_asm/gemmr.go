package main

import (
	"fmt"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	"github.com/mmcloughlin/avo/reg"
)

// GEMM kernels for repacked Q4_0 weights: llama.cpp's CPU_REPACK
// arithmetic, where a lane is one weight row and every block adds its whole
// exact integer dot product once per (row, token):
//
//	acc = fma(float(Σ_block (q−8)·y), dw·da, acc)     block by block
//
// (ggml_gemv/gemm_q4_0_8x8_q8_0). With no lanes to reduce, a block costs
// one conversion and one FMA per eight rows, not one per row.
//
// AVX2 (VEX, 16 YMM registers), so that every x86-64 machine with AVX2
// runs them, AVX-512 ones included. Weights come in groups of 8 rows
// (repackRows), block by block, each group-block one record of repackBlock
// bytes:
//
//	0   d  [8]f16           the rows' scales
//	16  q  [4][8][4]byte    chunk c, lane r: bytes 4c..4c+3 of row r's
//	                        quants: low nibbles elements 4c..4c+3, high
//	                        nibbles 16+4c..16+4c+3
//
// Products are VPMADDUBSW of the nibbles (unsigned, q rather than q−8) by
// the broadcast activation quads (signed) into int16 pairs, summed over the
// block's eight quads in int16 (|Σ| ≤ 8·2·15·127 < 2¹⁵: exact), then
// VPMADDWD by ones into one int32 per row, plus the record's −8·Σy.
//
// Activation records (gemmRRec bytes per block):
//
//	0  qs   [32]int8
//	32 nsum int32     −8·Σqs
//	36 d    float32
const (
	recRSum     = 32
	recRD       = 36
	gemmRRec    = 40
	gemmRTile   = 6
	repackRows  = 8
	repackBlock = repackRows * 18
)

func genGemmR() {
	for a := 1; a <= gemmRTile; a++ {
		(&gemmR{na: a}).gen()
	}
}

// gemmR emits one kernel of na activation rows.
type gemmR struct{ na int }

func (g *gemmR) gen() {
	name := fmt.Sprintf("gemmRQ4_0_%d", g.na)
	r, group := groupKernel(name, fmt.Sprintf("%s multiplies rows repacked Q4_0 weight rows (groups of 8, groupBytes apart; rows a multiple of 8) with %d activation rows of records (AVX2).", name, g.na))
	mask := constU32("nib0F_8", 0x0F0F0F0F, 0x0F0F0F0F, 0x0F0F0F0F, 0x0F0F0F0F, 0x0F0F0F0F, 0x0F0F0F0F, 0x0F0F0F0F, 0x0F0F0F0F)
	ones := constU32("ones16_8", 0x00010001, 0x00010001, 0x00010001, 0x00010001, 0x00010001, 0x00010001, 0x00010001, 0x00010001)
	Label(name + "_rows")
	acc := make([]reg.VecVirtual, g.na)
	for a := range acc {
		acc[a] = YMM()
		VXORPS(acc[a], acc[a], acc[a])
	}
	act := loadStrided("act", "actStride", g.na, 1)
	p, cnt := GP64(), GP64()
	MOVQ(group, p)
	Load(Param("nb"), cnt)
	Label(name + "_blocks")
	for d := 0; d < repackBlock; d += 64 {
		prefetchWeights(Mem{Base: p, Disp: prefetchAhead + d}, g.na)
	}
	sum := make([]reg.VecVirtual, g.na)
	for c := range 4 {
		lo, hi := YMM(), YMM()
		VMOVDQU(Mem{Base: p, Disp: 16 + 32*c}, hi)
		VPAND(mask, hi, lo)
		VPSRLW(U8(4), hi, hi)
		VPAND(mask, hi, hi)
		for a := range g.na {
			for h, w := range []reg.VecVirtual{lo, hi} {
				y, t := YMM(), YMM()
				VPBROADCASTD(act.at(a, 16*h+4*c), y)
				if c == 0 && h == 0 {
					sum[a] = YMM()
					VPMADDUBSW(y, w, sum[a])
					continue
				}
				VPMADDUBSW(y, w, t)
				VPADDW(t, sum[a], sum[a])
			}
		}
	}
	dw := YMM()
	VCVTPH2PS(Mem{Base: p}, dw)
	for a := range g.na {
		s, n, dd := sum[a], YMM(), YMM()
		VPMADDWD(ones, s, s)
		VPBROADCASTD(act.at(a, recRSum), n)
		VPADDD(n, s, s)
		VCVTDQ2PS(s, s)
		VBROADCASTSS(act.at(a, recRD), dd)
		VMULPS(dw, dd, dd) // dw·da, exact
		VFMADD231PS(s, dd, acc[a])
	}
	ADDQ(U32(repackBlock), p)
	act.advance(gemmRRec)
	DECQ(cnt)
	JNZ(LabelRef(name + "_blocks"))
	storeAcc(r, acc)
	nextGroup(name, r, group, repackRows)
}
