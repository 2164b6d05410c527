package main

import (
	"fmt"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	"github.com/mmcloughlin/avo/reg"
)

// GEMM kernels for the 32-element block types (Q4_0, Q4_1, Q8_0) against
// activations quantized to Q8_0/Q8_1.
//
// A call computes dst[a][r] for a < A activation rows (A = 1..gemm32Tile,
// one function each) and every weight row r < rows, four weight rows at a
// time. A ZMM register holds one 128-bit chunk per weight row: the "lo"
// register takes elements 0..15 of a block (generic lanes 0..3: dword k sums
// elements 4k..4k+3, exactly as VPDPBUSD groups bytes), the "hi" register
// elements 16..31 (lanes 4..7). Per block and activation row,
//
//	lanes = Σ u8(w)·s8(y) (+ bias correction)      exact int32
//	acc   = fma(dw·da, float(lanes), acc)            per lane, dw·da exact
//	summs = fma(mw, s, summs)                        Q4_1 only, mw·s exact
//
// and at the end dst = ((l0+l4)+(l2+l6))+((l1+l5)+(l3+l7)) [+ summs], the
// generic reference's order.
//
// Activation records (gemm32Rec bytes each, one per block; rows of nb
// records actStride bytes apart) are prepared in Go:
//
//	0  qs   [32]int8
//	32 corr [8]int32   −bias·(sum of the 4 quants of each dword): signed
//	                   weights are re-biased to unsigned bytes for VPDPBUSD
//	64 d    float32
//	68 s    float32    (Q8_1)
const (
	recQS     = 0
	recCorr   = 32
	recD      = 64
	recS      = 68
	gemm32Rec = 72
	// gemm32Tile is the widest activation tile.
	gemm32Tile = 8
	// gemm32TileMin is the widest tile of the types with mins (Q4_1).
	gemm32TileMin = 7
	// prefetchAhead is how far ahead of the current block each weight row
	// is prefetched, in bytes: decode streams weights from memory, and the
	// out-of-order window alone does not cover its latency.
	prefetchAhead = 4096
	// streamTile is the widest kernel that streams its weights (bound by
	// memory: on Zen 4 the Q4_0 kernel computes a line as fast as memory
	// brings it from about 6 tokens on) and prefetches into L2.
	streamTile = 4
)

// prefetchWeights emits the hint for the weight memory m of a kernel of
// tokens activation rows: into L2 (PREFETCHT1) for the kernels that
// stream weights, since hints into L1 wait on its few miss buffers
// (Zen 4, default model tg128 230 → 270 tok/s, TinyLlama tg64 47 → 58);
// into L1 (PREFETCHT0) for the wide kernels, which compute on every line
// while it is fresh (TinyLlama pp512 289 → 307 tok/s with T0).
func prefetchWeights(m Mem, tokens int) {
	if tokens <= streamTile {
		PREFETCHT1(m)
		return
	}
	PREFETCHT0(m)
}

// blockType describes a 32-element weight block.
type blockType struct {
	name  string
	size  int  // bytes per block
	qs    int  // offset of the quants
	nib   bool // 4-bit quants: element j low nibble of qs[j], j+16 high nibble
	min   bool // Q4_1: second f16 m at offset 2, result += Σ m·s
	xor80 bool // signed 8-bit quants, re-biased to unsigned by xor 0x80
}

var blockTypes = []blockType{
	{name: "Q4_0", size: 18, qs: 2, nib: true},
	{name: "Q4_1", size: 20, qs: 4, nib: true, min: true},
	{name: "Q8_0", size: 34, qs: 2, xor80: true},
}

// tile is the widest activation tile of a type: Q4_1's third accumulator
// per activation row (Σ m·s) leaves registers for fewer rows.
func (bt blockType) tile() int {
	if bt.min {
		return gemm32TileMin
	}
	return gemm32Tile
}

func genGemm32() {
	for _, packed := range []bool{false, true} {
		for _, bt := range blockTypes {
			for a := 1; a <= bt.tile(); a++ {
				g := &gemm32{tile4: tile4{na: a, min: bt.min}, bt: bt, packed: packed}
				g.gen()
			}
		}
	}
}

// Packed weights (the "p" kernels) interleave groups of four rows, block by
// block, so that a block of four rows is one contiguous record of 4·size
// bytes, read with one or two ZMM loads and one scale load:
//
//	0       hdr [4][qs]byte   each row's block header (d, or d and m), rows 0..3
//	4·qs    quants            nibble types: [4][16]byte, row i at 16i;
//	                          Q8_0: [4][16]byte of bytes 0..15, then of 16..31
//
// A group of nb blocks takes nb·4·size bytes; rowBytes is that group
// stride, and rows past the last are zero (their results are discarded).
// The kernels must be called on groups: the first row a multiple of four.

// packedSize is the size of one block of four packed rows.
func (bt blockType) packedSize() int { return 4 * bt.size }

// gemm32 emits one kernel.
type gemm32 struct {
	tile4
	bt     blockType
	packed bool // weights in packed four-row groups
}

func (g *gemm32) name() string {
	if g.packed {
		return fmt.Sprintf("gemm%sp_%d", g.bt.name, g.na)
	}
	return fmt.Sprintf("gemm%s_%d", g.bt.name, g.na)
}

func (g *gemm32) gen() {
	TEXT(g.name(), NOSPLIT, rowKernelSig)
	layout := ""
	if g.packed {
		layout = " packed"
	}
	Doc(fmt.Sprintf("%s multiplies rows%s weight rows of type %s with %d activation rows of records.",
		g.name(), layout, g.bt.name, g.na))
	Pragma("noescape")
	r := rowsLoop(g.name())
	g.rowPointers(r)
	g.zeroAcc()
	g.act = loadStrided("act", "actStride", g.na, 1)
	g.off = GP64()
	XORQ(g.off, g.off)
	cnt := GP64()
	Load(Param("nb"), cnt)
	Label(g.name() + "_blocks")
	step := g.bt.size
	if g.packed {
		step = g.bt.packedSize()
		for d := 0; d < step; d += 64 {
			prefetchWeights(g.wmem(0, prefetchAhead+d), g.na)
		}
		g.loadPacked()
	} else {
		for i := range 4 {
			prefetchWeights(g.wmem(i, prefetchAhead), g.na)
		}
		g.loadWeights()
	}
	for a := range g.na {
		g.accumulate(a)
	}
	ADDQ(U32(step), g.off)
	g.act.advance(gemm32Rec)
	DECQ(cnt)
	JNZ(LabelRef(g.name() + "_blocks"))
	g.store(r)
	ADDQ(U8(4), r)
	loopRows(g.name(), r)
}

// rowPointers sets p[i] to weight row r+i, or to row r when r+i is past
// the last row (its results are computed and discarded).
func (g *gemm32) rowPointers(r reg.GPVirtual) {
	if g.packed {
		// p[0] = w + (r/4)·rowBytes: the group of rows r..r+3.
		w, rb := GP64(), GP64()
		Load(Param("w"), w)
		Load(Param("rowBytes"), rb)
		g.p[0] = GP64()
		MOVQ(r, g.p[0])
		SHRQ(U8(2), g.p[0])
		IMULQ(rb, g.p[0])
		ADDQ(w, g.p[0])
		return
	}
	g.tile4.rowPointers(r)
}

// loadWeights fills lo, hi (unsigned bytes, four rows) and the scales.
func (g *gemm32) loadWeights() {
	g.lo, g.hi = ZMM(), ZMM()
	if g.bt.nib {
		q := ZMM()
		VMOVDQU(g.wmem(0, g.bt.qs), q.AsX())
		for i := 1; i < 4; i++ {
			VINSERTI32X4(U8(i), g.wmem(i, g.bt.qs), q, q)
		}
		g.splitNibbles(q)
	} else {
		for h, z := range []reg.VecVirtual{g.lo, g.hi} {
			VMOVDQU(g.wmem(0, g.bt.qs+16*h), z.AsX())
			for i := 1; i < 4; i++ {
				VINSERTI32X4(U8(i), g.wmem(i, g.bt.qs+16*h), z, z)
			}
			if g.bt.xor80 {
				VPXORD_BCST(constU32("byte80", 0x80808080), z, z)
			}
		}
	}
	g.loadScales()
}

// loadPacked is loadWeights for a packed group: one load per 64 quants,
// one scale conversion.
func (g *gemm32) loadPacked() {
	g.lo, g.hi = ZMM(), ZMM()
	hdr := 4 * g.bt.qs
	if g.bt.nib {
		q := ZMM()
		VMOVDQU64(g.wmem(0, hdr), q)
		g.splitNibbles(q)
	} else {
		for h, z := range []reg.VecVirtual{g.lo, g.hi} {
			VMOVDQU64(g.wmem(0, hdr+64*h), z)
			VPXORD_BCST(constU32("byte80", 0x80808080), z, z)
		}
	}
	s := ZMM()
	idx := ZMM()
	g.dw = ZMM()
	if g.min {
		// [d0 m0 d1 m1 d2 m2 d3 m3], as loadWeights.
		VCVTPH2PS(g.wmem(0, 0), s.AsY())
		VMOVDQU32(constU32("permDW", 0, 0, 0, 0, 2, 2, 2, 2, 4, 4, 4, 4, 6, 6, 6, 6), idx)
		VPERMPS(s, idx, g.dw)
		VMOVDQU32(constU32("permMW", 1, 3, 5, 7, 1, 3, 5, 7, 1, 3, 5, 7, 1, 3, 5, 7), idx)
		g.mw = ZMM()
		VPERMPS(s, idx, g.mw)
		return
	}
	VCVTPH2PS(g.wmem(0, 0), s.AsX()) // [d0 d1 d2 d3]
	VMOVDQU32(constU32("permD4", 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3), idx)
	VPERMPS(s, idx, g.dw)
}
