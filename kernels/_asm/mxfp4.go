package main

import (
	"fmt"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	"github.com/mmcloughlin/avo/reg"
)

// Native kernels of MXFP4's fast arithmetic (kernels/mxfp4.go): per block
// and (row, token), a lane being one weight row,
//
//	isum = Σ_block w·y                 exact int32, w the doubled E2M1
//	                                   value (gguf.KValuesMXFP4, |w| ≤ 12)
//	acc  = fma(float(isum), d·da, acc)  d = E8M0Half(e) = 2^(e−128), exact
//
// the generic reference's order (dotMXFP4FGeneric). Weights come in
// groups of 8 rows, block by block, one group-block of 136 bytes (17 per
// row and block, as stored in the file):
//
//	0  s      [8]int8          row r's e − 128 (e xor 0x80)
//	8  chunks [4][8][4]byte    chunk c, lane r: bytes 4c..4c+3 of row r's
//	                           nibbles (low: elements 4c..4c+3, high:
//	                           16+4c..16+4c+3), as Q4_0's fast layout
//
// A nibble becomes its value by a byte shuffle (VPSHUFB) on a 16-entry
// table, as llama.cpp's MXFP4 kernels do (VPERMB on a repeated one in the
// AVX512_VBMI kernels, gemmFMXFP4_vbmi_n). The scale is built exactly for
// every e, subnormal 2^−128 and 2^−127 included: VSCALEFPS(1, s) on
// AVX-512, integer exponent arithmetic on AVX2.
//
// AVX-512 VNNI (gemmFMXFP4_n, gemmq's passes: ZMM over pairs of groups,
// YMM over one group and for one or two tokens): the table gives w + 128
// (116..140) as unsigned bytes for VPDPBUSD against the broadcast
// activation quads, the record's −128·Σy (Q8_0's records) starting each
// block's sum, so that it is exactly Σ w·y.
//
// AVX2 (gemmFMXFP4_avx2_n): the table gives w as signed bytes; VPMADDUBSW
// of |w| by sign(w)·y (Q8_0's sign trick) gives pairs |·| ≤ 2·12·127,
// summed over the block's eight half-chunks in int16 (|Σ| ≤ 24384 < 2¹⁵:
// exact), then VPMADDWD by ones. The record's correction is unused.
const mxfp4Block = fastGroup * 17 // bytes per group-block

// mxfp4Values are the 16 doubled E2M1 values, byte j of the table.
var mxfp4Values = [16]int8{0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12}

// mxfp4Table returns the shuffle table, value + bias per byte, repeated
// in every 128-bit lane of a ZMM register.
func mxfp4Table(name string, bias int) Mem {
	var words [16]uint32
	for i := range words {
		for k := range 4 {
			v := uint32(uint8(int(mxfp4Values[(4*i+k)%16]) + bias))
			words[i] |= v << (8 * k)
		}
	}
	return constU32(name, words[:]...)
}

func genMXFP4() {
	for _, vbmi := range []bool{false, true} {
		for a := 1; a <= fastTile; a++ {
			(&gemmM{na: a, vbmi: vbmi}).gen()
		}
	}
	for a := 1; a <= fastTileAVX2; a++ {
		(&gemmM2{na: a}).gen()
	}
}

// gemmM emits one AVX-512 kernel of na activation rows: gemmQ's passes.
// With vbmi, the YMM passes (one or two tokens, and an odd last group)
// look the values up by VPERMB (AVX512_VBMI), which indexes its table with
// the low 5 bits of each byte: on a table repeating the 16 values, the
// nibbles need no masking, two instructions fewer per chunk (one-token
// matmuls from L2 about 14% faster on Zen 4).
type gemmM struct {
	na   int
	vbmi bool
	wide bool
	acc  []reg.VecPhysical
	sum  []reg.VecPhysical
	sum2 reg.VecPhysical // one token: the high nibbles' sum (see block)
	act  strided
	p    reg.GPVirtual
	gb   reg.GPVirtual
	gb3  reg.GPVirtual  // 3·groupBytes: from p, the next pair's second group
	tbl  reg.VecVirtual // the shuffle table (w + 128)
	one  reg.VecVirtual // 1.0 in every lane
	m0F  reg.VecVirtual // 0x0F in every byte
}

func (g *gemmM) name() string {
	if g.vbmi {
		return fmt.Sprintf("gemmFMXFP4_vbmi_%d", g.na)
	}
	return fmt.Sprintf("gemmFMXFP4_%d", g.na)
}

// streams reports whether the kernel reads one group at a time and leaves
// the prefetching to the hardware (see gemmQ). The wider kernels hint the
// next pair of groups into L2 block by block, as gemmQ's: a mixture of
// experts' decode step multiplies each expert's weights, from memory, by
// its few tokens. On gpt-oss-20b's expert shape (2880 × 2880, one thread,
// CPU time, weights from memory, Zen 4) against 4 KiB hints ahead of each
// group (into L1 from 5 tokens on) and streams of one token, the weight
// bytes per CPU second went at 2 tokens 17 → 26, at 4 tokens 15 → 20 and
// at 8 tokens 9.8 → 11 GB/s (BenchmarkMXFP4Decode's shape).
func (g *gemmM) streams() bool { return g.na <= 2 }

func (g *gemmM) gen() {
	name := g.name()
	isa := "AVX-512 VNNI"
	if g.vbmi {
		isa += ", VBMI"
	}
	r, group := groupKernel(name, fmt.Sprintf("%s multiplies rows MXFP4 weight rows in the fast layout (groups of 8, groupBytes apart; rows a multiple of 8) with %d activation rows of fast records (%s).",
		name, g.na, isa))
	g.gb = loadGP("groupBytes")
	if !g.streams() {
		g.gb3 = GP64()
		LEAQ(Mem{Base: g.gb, Index: g.gb, Scale: 2}, g.gb3)
	}
	groupPasses(name, r, group, g.streams(), g.pass)
}

// pass emits one pass over a pair of groups (wide) or one group, from row
// r and the group at group, and advances both.
func (g *gemmM) pass(wide bool, r, group reg.GPVirtual) {
	g.wide = wide
	phys, tag := ymmPhysical, "_g"
	if wide {
		phys, tag = zmmPhysical, "_p"
	}
	g.acc, g.sum = make([]reg.VecPhysical, g.na), make([]reg.VecPhysical, g.na)
	for a := range g.na {
		g.acc[a], g.sum[a] = phys[31-a], phys[31-fastTile-a]
		zero(g.acc[a])
	}
	g.sum2 = phys[31-2*fastTile]
	g.tbl, g.one = g.vec(), g.vec()
	VMOVDQU32(mxfp4Table("mxfp4u", 128), g.tbl)
	VBROADCASTSS(constU32("one", 0x3f800000), g.one)
	if !g.permb() {
		g.m0F = g.vec()
		VPBROADCASTD(constU32("nib0F", 0x0F0F0F0F), g.m0F)
	}
	g.act = loadStrided("act", "actStride", g.na, 1)
	g.p = GP64()
	cnt := GP64()
	MOVQ(group, g.p)
	Load(Param("nb"), cnt)
	Label(g.name() + tag + "_blocks")
	for d := 0; d < mxfp4Block && wide; d += 64 {
		PREFETCHT1(Mem{Base: g.p, Index: g.gb, Scale: 2, Disp: d}) // the same block of the next pair
		PREFETCHT1(Mem{Base: g.p, Index: g.gb3, Scale: 1, Disp: d})
	}
	g.block()
	ADDQ(U32(mxfp4Block), g.p)
	g.act.advance(fastRec)
	DECQ(cnt)
	JNZ(LabelRef(g.name() + tag + "_blocks"))
	storeAcc(r, g.acc)
	ADDQ(g.gb, group)
	ADDQ(U8(fastGroup), r)
	if wide {
		ADDQ(g.gb, group)
		ADDQ(U8(fastGroup), r)
	}
}

// permb reports whether the pass looks the values up by VPERMB: in the
// YMM passes of the vbmi kernels (in ZMM passes the lane-crossing VPERMB
// measured 2–3% slower than VPSHUFB at 8 tokens on Zen 4).
func (g *gemmM) permb() bool { return g.vbmi && !g.wide }

// vec returns a new vector register of the pass's width.
func (g *gemmM) vec() reg.VecVirtual {
	if g.wide {
		return ZMM()
	}
	return YMM()
}

// load loads the 32 bytes at disp of the group-block (and, in a wide pass,
// those of the next group into the upper half) into v.
func (g *gemmM) load(disp int, v reg.VecVirtual) {
	if !g.wide {
		VMOVDQU32(Mem{Base: g.p, Disp: disp}, v)
		return
	}
	VMOVDQU32(Mem{Base: g.p, Disp: disp}, v.AsY())
	VINSERTI64X4(U8(1), Mem{Base: g.p, Index: g.gb, Scale: 1, Disp: disp}, v, v)
}

// scales returns the rows' d = 2^s (the next group's in the upper half of
// a wide pass), exact for every s: VSCALEFPS(1, float(s)).
func (g *gemmM) scales() reg.VecVirtual {
	d := g.vec()
	if g.wide {
		x := XMM()
		VMOVQ(Mem{Base: g.p}, x)
		VPINSRQ(U8(1), Mem{Base: g.p, Index: g.gb, Scale: 1}, x, x)
		VPMOVSXBD(x, d)
	} else {
		VPMOVSXBD(Mem{Base: g.p}, d)
	}
	VCVTDQ2PS(d, d)
	VSCALEFPS(d, g.one, d)
	return d
}

// block emits one group-block: the integer sums, then the float work.
// With one token, the low and high nibbles' products go to two sums
// added at the end (exact): two chains of four VPDPBUSD instead of one of
// eight (one-token matmuls from L2 about 5% faster on Zen 4).
func (g *gemmM) block() {
	for a, s := range g.sum {
		VPBROADCASTD(g.act.at(a, fastRecX), s) // −128·Σy
	}
	hiSum := g.sum
	if g.na == 1 {
		zero(g.sum2)
		hiSum = []reg.VecPhysical{g.sum2}
	}
	for c := range 4 {
		lo, hi := g.vec(), g.vec()
		if g.permb() {
			g.load(fastGroup+32*c, lo)
			VPSRLW(U8(4), lo, hi)
			VPERMB(g.tbl, lo, lo) // w + 128
			VPERMB(g.tbl, hi, hi)
		} else {
			g.load(fastGroup+32*c, hi)
			VPANDD(g.m0F, hi, lo)
			VPSRLW(U8(4), hi, hi)
			VPANDD(g.m0F, hi, hi)
			VPSHUFB(lo, g.tbl, lo) // w + 128
			VPSHUFB(hi, g.tbl, hi)
		}
		for a := range g.na {
			vpdpbusdBcst(g.act.at(a, 4*c), lo, g.sum[a])
			vpdpbusdBcst(g.act.at(a, 16+4*c), hi, hiSum[a])
		}
	}
	if g.na == 1 {
		VPADDD(g.sum2, g.sum[0], g.sum[0])
	}
	dw := g.scales()
	for a, s := range g.sum {
		dd := g.vec()
		VCVTDQ2PS(s, s)
		VMULPS_BCST(g.act.at(a, fastRecD), dw, dd) // d·da, one rounding
		VFMADD231PS(s, dd, g.acc[a])
	}
}

// gemmM2 emits one AVX2 kernel of na activation rows (gemmQ2's loop).
type gemmM2 struct {
	na  int
	acc []reg.VecVirtual
	act strided
	p   reg.GPVirtual
}

func (g *gemmM2) name() string { return fmt.Sprintf("gemmFMXFP4_avx2_%d", g.na) }

func (g *gemmM2) gen() {
	name := g.name()
	r, group := groupKernel(name, fmt.Sprintf("%s multiplies rows MXFP4 weight rows in the fast layout (groups of 8, groupBytes apart; rows a multiple of 8) with %d activation rows of fast records (AVX2).",
		name, g.na))
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
	for d := 0; d < mxfp4Block; d += 64 {
		prefetchWeights(Mem{Base: g.p, Disp: prefetchAhead + d}, g.na)
	}
	sum := g.sums()
	dw := g.scales()
	for a, s := range sum {
		dd := YMM()
		VPMADDWD(ones16(), s, s)
		VCVTDQ2PS(s, s)
		VBROADCASTSS(g.act.at(a, fastRecD), dd)
		VMULPS(dw, dd, dd) // d·da, one rounding
		VFMADD231PS(s, dd, g.acc[a])
	}
	ADDQ(U32(mxfp4Block), g.p)
	g.act.advance(fastRec)
	DECQ(cnt)
	JNZ(LabelRef(name + "_blocks"))
	storeAcc(r, g.acc)
	nextGroup(name, r, group, fastGroup)
}

// sums returns each token's int16 pair sums of the block: per half-chunk
// (low nibbles, then high), w by the table, then VPMADDUBSW(|w|,
// sign(w)·y). Each half-chunk is loaded anew, so that the table, two
// weight registers and one activation register are all the block needs
// besides the accumulators and sums.
func (g *gemmM2) sums() []reg.VecVirtual {
	mask := constU32("nib0F_8", 0x0F0F0F0F, 0x0F0F0F0F, 0x0F0F0F0F, 0x0F0F0F0F, 0x0F0F0F0F, 0x0F0F0F0F, 0x0F0F0F0F, 0x0F0F0F0F)
	tbl := YMM()
	VMOVDQU(mxfp4Table("mxfp4s", 0), tbl)
	sum := make([]reg.VecVirtual, g.na)
	for c := range 4 {
		for h := range 2 {
			w, aw := YMM(), YMM()
			VMOVDQU(Mem{Base: g.p, Disp: fastGroup + 32*c}, w)
			if h == 1 {
				VPSRLW(U8(4), w, w)
			}
			VPAND(mask, w, w)
			VPSHUFB(w, tbl, w)
			VPABSB(w, aw)
			for a := range g.na {
				y := YMM()
				VPBROADCASTD(g.act.at(a, 16*h+4*c), y)
				VPSIGNB(w, y, y)
				if c == 0 && h == 0 {
					sum[a] = YMM()
					VPMADDUBSW(y, aw, sum[a])
					continue
				}
				VPMADDUBSW(y, aw, y)
				VPADDW(y, sum[a], sum[a])
			}
		}
	}
	return sum
}

// scales returns the rows' d = 2^s, exact for every s in −128..127: the
// bits of max((s+127)<<23, (s+129)<<21) as signed integers. The first is
// 2^s for s ≥ −126 and negative or zero below; the second is the
// subnormal 2^s for s = −128, −127 and below the first above.
func (g *gemmM2) scales() reg.VecVirtual {
	s, d := YMM(), YMM()
	VPMOVSXBD(Mem{Base: g.p}, s)
	VPADDD(constU32("i127_8", 127, 127, 127, 127, 127, 127, 127, 127), s, d)
	VPSLLD(U8(23), d, d)
	VPADDD(constU32("i129_8", 129, 129, 129, 129, 129, 129, 129, 129), s, s)
	VPSLLD(U8(21), s, s)
	VPMAXSD(s, d, d)
	return d
}
