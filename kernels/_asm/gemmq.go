package main

import (
	"fmt"

	. "github.com/mmcloughlin/avo/build"
	"github.com/mmcloughlin/avo/ir"
	. "github.com/mmcloughlin/avo/operand"
	"github.com/mmcloughlin/avo/reg"
)

// GEMM kernels of the fast arithmetic (kernels/fast.go) for the 32-element
// block types, AVX-512 VNNI on YMM registers (EVEX: 32 of them). A lane is
// one weight row; per block and (row, token):
//
//	isum = Σ_block u(q)·y (+ −bias·Σy)      VPDPBUSD, exact int32
//	acc  = fma(float(isum), dw·da, acc)       dw·da exact
//	acc  = fma(mw, s, acc)                    types with a minimum
//
// the generic reference's order (fast_generic.go). Weights come in groups
// of 8 rows, block by block, one group-block of gb bytes each:
//
//	0        d   [8]f16
//	16       m   [8]f16                 types with a minimum
//	8·hdr    qh  [8]uint32              5-bit types: qhLanes words
//	chunks   [4][8][4]byte              chunk c, lane r: bytes 4c..4c+3 of
//	                                    row r's nibbles (low: elements
//	                                    4c..4c+3, high: 16+4c..16+4c+3)
//	                                    Q8_0: [8][8][4] signed bytes
//
// The weights go to VPDPBUSD as unsigned bytes: nibbles as they are, 5-bit
// values nibble | high bit << 4, Q8_0 bytes xor 0x80 (q+128); Q4_0's −8,
// Q5_0's −16 and Q8_0's +128 come in exactly through the records' −bias·Σy,
// which starts each block's sum.
//
// Activation records (fastRec bytes per block):
//
//	0  qs  [32]int8
//	32 x   int32 −bias·Σqs, or float32 s = d·Σqs (types with a minimum)
//	36 d   float32
const (
	fastRecX  = 32
	fastRecD  = 36
	fastRec   = 40
	fastTile  = 8 // widest activation tile of the AVX-512 kernels
	fastGroup = 8 // rows per group
)

// fastType describes one type's group-block layout.
type fastType struct {
	name string
	hdr  int  // bytes of f16 fields per row: 2 (d) or 4 (d, m)
	q5   bool // 32 bytes of qhLanes words after the fields
	q8   bool // eight chunks of signed bytes
	bias bool // records carry −bias·Σy (else s, for the minimum)
	// stream is the widest tile that streams (see gemmQ): 2, or 3 for
	// Q8_0, whose twice as many bytes per weight keep three tokens bound
	// by memory (SmolLM2's steps of 3 rows: 4.58 ms of CPU with paired
	// passes, 4.47 streaming).
	stream int
}

func (t fastType) min() bool { return t.hdr == 4 }

// chunks returns the offset of the quants in a group-block.
func (t fastType) chunks() int {
	if t.q5 {
		return 8*t.hdr + 32
	}
	return 8 * t.hdr
}

// groupBlock returns the bytes of one group-block.
func (t fastType) groupBlock() int {
	if t.q8 {
		return t.chunks() + 8*32
	}
	return t.chunks() + 4*32
}

var fastTypes = []fastType{
	{name: "Q4_0", hdr: 2, bias: true, stream: 2},
	{name: "Q4_1", hdr: 4, stream: 2},
	{name: "Q5_0", hdr: 2, q5: true, bias: true, stream: 2},
	{name: "Q5_1", hdr: 4, q5: true, stream: 2},
	{name: "Q8_0", hdr: 2, q8: true, bias: true, stream: 3},
}

func genGemmQ() {
	for _, t := range fastTypes {
		for a := 1; a <= fastTile; a++ {
			(&gemmQ{t: t, na: a}).gen()
		}
	}
}

// vpdpbusdBcst emits VPDPBUSD with the signed source a broadcast dword.
func vpdpbusdBcst(signed Mem, unsigned, acc Op) {
	Instruction(&ir.Instruction{
		Opcode:   "VPDPBUSD.BCST",
		Operands: []Op{signed, unsigned, acc},
		Inputs:   []Op{signed, unsigned, acc},
		Outputs:  []Op{acc},
		ISA:      []string{"AVX512VNNI"},
	})
}

var ymmPhysical = []reg.VecPhysical{
	reg.Y0, reg.Y1, reg.Y2, reg.Y3, reg.Y4, reg.Y5, reg.Y6, reg.Y7,
	reg.Y8, reg.Y9, reg.Y10, reg.Y11, reg.Y12, reg.Y13, reg.Y14, reg.Y15,
	reg.Y16, reg.Y17, reg.Y18, reg.Y19, reg.Y20, reg.Y21, reg.Y22, reg.Y23,
	reg.Y24, reg.Y25, reg.Y26, reg.Y27, reg.Y28, reg.Y29, reg.Y30, reg.Y31,
}

// gemmQ emits one kernel of na activation rows: ZMM passes over pairs of
// groups (lanes 0..7 the first group's rows, 8..15 the next one's, which
// lies groupBytes further), then a YMM pass over the last group when the
// number of groups is odd.
//
// The kernels of one and two tokens (three for Q8_0: fastType.stream)
// make YMM passes only, group after group, without prefetch hints: the
// weights are then one stream read front to back, which the hardware
// prefetcher follows; on Zen 4 a ZMM instruction costs as much as two YMM
// ones, so the arithmetic costs the same. One-token matmuls went from
// 36–67% to 47–100% of the read bandwidth on Zen 4 (BenchmarkDecodeKQuant,
// docs/benchmarks.md).
//
// The wider kernels pass over pairs of groups, whose halved instruction
// count wins once the arithmetic outweighs the reads, and hint the pair
// after the current one into L2 (PREFETCHT1), block by block as they
// read. The two groups of a pair lie groupBytes apart, so a hint a fixed
// distance ahead of each (the gemm32 kernels' 4 KiB into L1) mostly lands
// on lines the pass reads anyway when rows are short (SmolLM2's 576
// columns: 2,880 bytes per Q4_1 group), and L1 hints on lines from memory
// wait on its few miss buffers. Against those hints and streams of up to
// four tokens, SmolLM2-135M's steps of 3, 4, 5, 8, 12 and 17 rows with
// every row's logits went from 5.15, 6.25, 8.75, 10.55, 16.0 and 21.25 to
// 4.46, 5.19, 5.94, 9.02, 13.25 and 18.9 ms of CPU on Zen 4 (model/llama
// BenchmarkSmolLM2Verify, one thread), and matmuls of 4–16 tokens on
// weights from memory computed up to 1.5× (Q4_1) and 2.5× (Q8_0) the
// multiply-adds per second (BenchmarkFastFewTokens); from about 8 tokens
// on they are bound by the arithmetic (Q4_1 ~155, Q8_0 ~170 GMAC/s per
// core).
type gemmQ struct {
	t    fastType
	na   int
	wide bool              // the current pass is over a pair of groups
	acc  []reg.VecPhysical // per token, pinned from the top down
	sum  []reg.VecPhysical // per token, the block's integer sums
	act  strided
	p    reg.GPVirtual // the current group-block
	gb   reg.GPVirtual // groupBytes
	gb3  reg.GPVirtual // 3·groupBytes: from p, the next pair's second group
}

func (g *gemmQ) name() string { return fmt.Sprintf("gemmF%s_%d", g.t.name, g.na) }

// streams reports whether the kernel reads one group at a time and leaves
// the prefetching to the hardware (see gemmQ).
func (g *gemmQ) streams() bool { return g.na <= g.t.stream }

func (g *gemmQ) gen() {
	name := g.name()
	r, group := groupKernel(name, fmt.Sprintf("%s multiplies rows %s weight rows in the fast layout (groups of 8, groupBytes apart; rows a multiple of 8) with %d activation rows of fast records (AVX-512 VNNI).",
		name, g.t.name, g.na))
	g.gb = loadGP("groupBytes")
	if !g.streams() {
		g.gb3 = GP64()
		LEAQ(Mem{Base: g.gb, Index: g.gb, Scale: 2}, g.gb3)
	}
	groupPasses(name, r, group, g.streams(), g.pass)
}

// groupPasses emits a fast kernel's loop over its rows (from r, the group
// at group, both advanced by pass): passes over pairs of groups (pass
// with wide) while two remain, then one group at a time; a kernel that
// streams takes every group alone. gemmQ and gemmM share it.
func groupPasses(name string, r, group reg.GPVirtual, streams bool, pass func(wide bool, r, group reg.GPVirtual)) {
	rows := loadGP("rows")
	if !streams {
		Label(name + "_pairs")
		end := GP64()
		LEAQ(Mem{Base: r, Disp: 2 * fastGroup}, end)
		CMPQ(end, rows)
		JG(LabelRef(name + "_tail"))
		pass(true, r, group)
		JMP(LabelRef(name + "_pairs"))
	}
	Label(name + "_tail")
	CMPQ(r, rows)
	JGE(LabelRef(name + "_done"))
	pass(false, r, group)
	if streams {
		JMP(LabelRef(name + "_tail"))
	}
	Label(name + "_done")
	VZEROUPPER()
	RET()
}

// pass emits one pass over a pair of groups (wide) or one group, from row
// r and the group at group, and advances both.
func (g *gemmQ) pass(wide bool, r, group reg.GPVirtual) {
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
	g.act = loadStrided("act", "actStride", g.na, 1)
	g.p = GP64()
	cnt := GP64()
	MOVQ(group, g.p)
	Load(Param("nb"), cnt)
	Label(g.name() + tag + "_blocks")
	for d := 0; d < g.t.groupBlock() && wide; d += 64 {
		PREFETCHT1(Mem{Base: g.p, Index: g.gb, Scale: 2, Disp: d}) // the same block of the next pair
		PREFETCHT1(Mem{Base: g.p, Index: g.gb3, Scale: 1, Disp: d})
	}
	g.block()
	ADDQ(U32(g.t.groupBlock()), g.p)
	g.act.advance(fastRec)
	DECQ(cnt)
	JNZ(LabelRef(g.name() + tag + "_blocks"))
	dst := loadStrided("dst", "dstStride", g.na, 4)
	LEAQ(Mem{Base: dst.base, Index: r, Scale: 4}, dst.base)
	if dst.base4 != nil {
		LEAQ(Mem{Base: dst.base4, Index: r, Scale: 4}, dst.base4)
	}
	for a := range g.na {
		VMOVUPS(g.acc[a], dst.at(a, 0))
	}
	ADDQ(g.gb, group)
	ADDQ(U8(fastGroup), r)
	if wide {
		ADDQ(g.gb, group)
		ADDQ(U8(fastGroup), r)
	}
}

// vec returns a new vector register of the pass's width.
func (g *gemmQ) vec() reg.VecVirtual {
	if g.wide {
		return ZMM()
	}
	return YMM()
}

// load loads the 32 bytes at disp of the group-block (and, in a wide pass,
// those of the next group into the upper half) into v.
func (g *gemmQ) load(disp int, v reg.VecVirtual) {
	if !g.wide {
		VMOVDQU32(Mem{Base: g.p, Disp: disp}, v)
		return
	}
	VMOVDQU32(Mem{Base: g.p, Disp: disp}, v.AsY())
	VINSERTI64X4(U8(1), Mem{Base: g.p, Index: g.gb, Scale: 1, Disp: disp}, v, v)
}

// halves converts the 8 f16 values at disp (16 in a wide pass, the next
// group's in the upper half) into v.
func (g *gemmQ) halves(disp int, v reg.VecVirtual) {
	if !g.wide {
		VCVTPH2PS(Mem{Base: g.p, Disp: disp}, v)
		return
	}
	h := YMM()
	VMOVDQU(Mem{Base: g.p, Disp: disp}, h.AsX())
	VINSERTI128(U8(1), Mem{Base: g.p, Index: g.gb, Scale: 1, Disp: disp}, h, h)
	VCVTPH2PS(h, v)
}

// block emits one group-block: the integer sums, then the float work.
func (g *gemmQ) block() {
	for a, s := range g.sum {
		if g.t.bias {
			VPBROADCASTD(g.act.at(a, fastRecX), s)
		} else {
			zero(s)
		}
	}
	if g.t.q8 {
		for c := range 8 {
			w := g.vec()
			g.load(g.t.chunks()+32*c, w)
			VPXORD_BCST(constU32("byte80", 0x80808080), w, w)
			for a := range g.na {
				vpdpbusdBcst(g.act.at(a, 4*c), w, g.sum[a])
			}
		}
	} else {
		var qh reg.VecVirtual
		if g.t.q5 {
			qh = g.vec()
			g.load(8*g.t.hdr, qh)
		}
		for c := range 4 {
			lo, hi := g.nibbles(c, qh)
			for a := range g.na {
				vpdpbusdBcst(g.act.at(a, 4*c), lo, g.sum[a])
				vpdpbusdBcst(g.act.at(a, 16+4*c), hi, g.sum[a])
			}
		}
	}
	dw := g.vec()
	g.halves(0, dw)
	var mw reg.VecVirtual
	if g.t.min() {
		mw = g.vec()
		g.halves(16, mw)
	}
	for a, s := range g.sum {
		dd := g.vec()
		VCVTDQ2PS(s, s)
		VMULPS_BCST(g.act.at(a, fastRecD), dw, dd) // dw·da, exact
		VFMADD231PS(s, dd, g.acc[a])
		if g.t.min() {
			VFMADD231PS_BCST(g.act.at(a, fastRecX), mw, g.acc[a]) // mw·s
		}
	}
}

// nibbles loads chunk c and returns its low and high nibbles (with the
// high bits of the 5-bit types, from their qhLanes words qh) as unsigned
// bytes.
func (g *gemmQ) nibbles(c int, qh reg.VecVirtual) (lo, hi reg.VecVirtual) {
	m0F := constU32("nib0F", 0x0F0F0F0F)
	lo, hi = g.vec(), g.vec()
	g.load(g.t.chunks()+32*c, hi)
	VPANDD_BCST(m0F, hi, lo)
	VPSRLW(U8(4), hi, hi)
	VPANDD_BCST(m0F, hi, hi)
	if g.t.q5 {
		for h, v := range []reg.VecVirtual{lo, hi} {
			i, t := c+4*h, g.vec()
			switch {
			case i < 4:
				VPSLLD(U8(4-i), qh, t)
			case i == 4:
				VMOVDQA64(qh, t)
			default:
				VPSRLD(U8(i-4), qh, t)
			}
			// v |= t & 0x10101010 (VPTERNLOGD 0xF8: A | (B & C)).
			VPTERNLOGD_BCST(U8(0xF8), constU32("byte10", 0x10101010), t, v)
		}
	}
	return lo, hi
}
