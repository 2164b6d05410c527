package main

import (
	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
)

// genTiledBlockQ8: AttnTiled's block conversion of a Q8_0 KV cache (the
// kernels package's attention_q8.go): the rows at element offsets offs[p]
// (p < n ≤ 16), each hd elements (a positive multiple of 32) stored as
// ggml's block_q8_0 (an f16 scale d, then 32 int8 quants; element offset e
// at byte e/32·34 of src), converted to d·q (exact in float32) into the
// tiled block layout (element 16m+l of position p at float (16m+p)·16+l),
// positions n..15 zero: what tiledBlockF16 does for an F16 cache, so the
// scores and values kernels that follow are the F16 cache's.
func genTiledBlockQ8(w tiledISA) {
	name := "tiledBlockQ8" + w.name
	TEXT(name, NOSPLIT, "func(dst *float32, src *byte, offs *int, n, hd int)")
	Doc(name + " converts the Q8_0 rows at element offsets offs[p] of src (p < n ≤ 16, hd a positive multiple of 32; ggml's 34-byte block_q8_0 of 32 elements) into d·q in dst in the tiled block layout, zeroing positions n..15.")
	Pragma("noescape")
	dst, src, offs, n, hd := loadGP("dst"), loadGP("src"), loadGP("offs"), loadGP("n"), loadGP("hd")
	SHRQ(U8(5), hd) // blocks of 32
	z := w.vec()
	VXORPS(z, z, z)
	p := GP64()
	XORQ(p, p)
	Label(name + "_pos")
	dp, m := GP64(), GP64()
	MOVQ(p, dp)
	SHLQ(U8(6), dp)
	ADDQ(dst, dp)
	MOVQ(hd, m)
	CMPQ(p, n)
	JGE(LabelRef(name + "_zero"))
	sp := GP64()
	MOVQ(Mem{Base: offs, Index: p, Scale: 8}, sp)
	SHRQ(U8(5), sp)
	IMUL3Q(U8(34), sp, sp)
	ADDQ(src, sp)
	Label(name + "_block")
	d := w.vec()
	if w.lanes == 16 {
		h := YMM()
		VPBROADCASTW(Mem{Base: sp}, h)
		VCVTPH2PS(h, d)
	} else {
		h := XMM()
		VPBROADCASTW(Mem{Base: sp}, h)
		VCVTPH2PS(h, d)
	}
	for i := 0; i < 32; i += w.lanes {
		x := w.vec()
		VPMOVSXBD(Mem{Base: sp, Disp: 2 + i}, x)
		VCVTDQ2PS(x, x)
		VMULPS(d, x, x)
		// element i of the block: chunk i/16, lane i%16
		VMOVUPS(x, Mem{Base: dp, Disp: 1024*(i/16) + 4*(i%16)})
	}
	ADDQ(U8(34), sp)
	ADDQ(U32(2048), dp)
	DECQ(m)
	JNZ(LabelRef(name + "_block"))
	JMP(LabelRef(name + "_next"))
	Label(name + "_zero")
	for c := range 2 {
		for i := 0; i < 16; i += w.lanes {
			VMOVUPS(z, Mem{Base: dp, Disp: 1024*c + 4*i})
		}
	}
	ADDQ(U32(2048), dp)
	DECQ(m)
	JNZ(LabelRef(name + "_zero"))
	Label(name + "_next")
	INCQ(p)
	CMPQ(p, U8(16))
	JL(LabelRef(name + "_pos"))
	VZEROUPPER()
	RET()
}
