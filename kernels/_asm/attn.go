package main

import (
	"fmt"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	"github.com/mmcloughlin/avo/reg"
)

// Attention kernels over an F16 cache (ggml's unfused path): all the
// scores of a (token, head) in one call, the probabilities' scaling and
// rounding, and the value accumulation into 64 lanes by position. Cache
// rows are found through an offset per position.

func genAttn() {
	genScoresF16(attnZMM)
	genScaleRoundF16()
	genValuesF16(attnZMM)
	genValuesF16Reg(4)
	genValuesF16Reg(8)
}

// attnWidth is what the AVX-512 and AVX2 attention kernels differ in: the
// register width, and how the 64 score lanes (4 ZMM or 8 YMM registers,
// lane l in register l/(64/regs)) are reduced as reduce64.
type attnWidth struct {
	isa    string
	lanes  int // float32 lanes per register
	vec    func() reg.VecVirtual
	zero   func(reg.VecVirtual)
	reduce func(acc []reg.VecVirtual) reg.VecVirtual
}

var (
	attnZMM = attnWidth{"AVX512", 16, ZMM, func(z reg.VecVirtual) { zero(z) }, func(acc []reg.VecVirtual) reg.VecVirtual {
		VADDPS(acc[2], acc[0], acc[0])
		VADDPS(acc[3], acc[1], acc[1])
		VADDPS(acc[1], acc[0], acc[0])
		return reduce16(acc[0])
	}}
	// attnYMM: ZMM register z of reduce64 is the YMM pair (2z, 2z+1).
	attnYMM = attnWidth{"AVX2", 8, YMM, func(y reg.VecVirtual) { VXORPS(y, y, y) }, func(acc []reg.VecVirtual) reg.VecVirtual {
		for i := range 4 {
			VADDPS(acc[i+4], acc[i], acc[i])
		}
		VADDPS(acc[2], acc[0], acc[0])
		VADDPS(acc[3], acc[1], acc[1])
		return reduce16V(acc[0], acc[1])
	}}
)

// genScoresF16: out[p] = float32(dotF16(q, K[offs[p]:][:hd]))·scale for
// p < n, hd a positive multiple of 64: the 64-lane fused dot product with
// its reduce64, as dotF16Generic without a tail.
func genScoresF16(w attnWidth) {
	name := "scoresF16" + w.isa
	TEXT(name, NOSPLIT, "func(q *float32, k *uint16, offs *int, n, hd int, scale float32, out *float32)")
	Doc(name + " sets out[p] = dot(q, k[offs[p]:][:hd])·scale for p < n, hd a positive multiple of 64.")
	Pragma("noescape")
	q, k, offs, n, hd, out := loadGP("q"), loadGP("k"), loadGP("offs"), loadGP("n"), loadGP("hd"), loadGP("out")
	sx := XMM()
	Load(Param("scale"), sx)
	TESTQ(n, n)
	JZ(LabelRef(name + "_done"))
	SHRQ(U8(6), hd) // 64-element steps
	Label(name + "_pos")
	row := GP64()
	MOVQ(Mem{Base: offs}, row)
	LEAQ(Mem{Base: k, Index: row, Scale: 2}, row)
	qp, steps := GP64(), GP64()
	MOVQ(q, qp)
	MOVQ(hd, steps)
	acc := make([]reg.VecVirtual, 64/w.lanes)
	for i := range acc {
		acc[i] = w.vec()
		w.zero(acc[i])
	}
	Label(name + "_step")
	for i, a := range acc {
		y := w.vec()
		VCVTPH2PS(Mem{Base: row, Disp: 2 * w.lanes * i}, y)
		VFMADD231PS(Mem{Base: qp, Disp: 4 * w.lanes * i}, y, a)
	}
	ADDQ(U32(256), qp)
	ADDQ(U32(128), row)
	DECQ(steps)
	JNZ(LabelRef(name + "_step"))
	s := w.reduce(acc)
	VMULSS(sx, s, s)
	VMOVSS(s, Mem{Base: out})
	ADDQ(U8(8), offs)
	ADDQ(U8(4), out)
	DECQ(n)
	JNZ(LabelRef(name + "_pos"))
	Label(name + "_done")
	VZEROUPPER()
	RET()
}

// genScaleRoundF16: x[i] = f16(x[i]·a) as float32, any n.
func genScaleRoundF16() {
	name := "scaleRoundF16AVX512"
	TEXT(name, NOSPLIT, "func(x *float32, n int, a float32)")
	Doc(name + " sets x[i] to x[i]·a rounded to half precision (nearest even), for i < n.")
	Pragma("noescape")
	xs := loadStream("x", 4)
	n := loadGP("n")
	a := bcastArg("a")
	loop16(name, n, []stream{xs}, func(k reg.Register) {
		v := ZMM()
		loadF32.load(xs.mem(), k, v)
		VMULPS(a, v, v)
		h := YMM()
		VCVTPS2PH(U8(0), v, h)
		VCVTPH2PS(h, v)
		storeF32(v, k, xs.mem())
	})
}

// genValuesF16: for p < n with w[p] ≠ 0, lanes[(p mod 64)·hd + d] =
// fma(w[p], v[offs[p]+d], lanes[...]) for d < hd (AVX-512: any hd ≥ 1;
// AVX2: hd a positive multiple of 8).
func genValuesF16(aw attnWidth) {
	name := "valuesF16" + aw.isa
	TEXT(name, NOSPLIT, "func(lanes *float32, w *float32, v *uint16, offs *int, n, hd int)")
	Doc(name + " adds w[p]·V[offs[p]] into lane p mod 64 of lanes (64 rows of hd) for p < n, skipping zero weights.")
	Pragma("noescape")
	lanes, w, v, offs, n, hd := loadGP("lanes"), loadGP("w"), loadGP("v"), loadGP("offs"), loadGP("n"), loadGP("hd")
	TESTQ(n, n)
	JZ(LabelRef(name + "_done"))
	var k reg.Register
	if aw.lanes == 16 {
		k = K()
		bits, rem := GP64(), GP64()
		MOVQ(hd, rem)
		ANDQ(U8(15), rem)
		MOVQ(U32(0xFFFF), bits)
		BZHIQ(rem, bits, bits) // mask of the hd mod 16 tail
		KMOVW(bits.As32(), k)
	}
	p := GP64()
	XORQ(p, p)
	zx := XMM()
	VXORPS(zx, zx, zx)
	Label(name + "_pos")
	wx := XMM()
	VMOVSS(Mem{Base: w, Index: p, Scale: 4}, wx)
	VUCOMISS(zx, wx)
	JNE(LabelRef(name + "_add"))
	JP(LabelRef(name + "_add")) // NaN weights are not zero
	JMP(LabelRef(name + "_next"))
	Label(name + "_add")
	if aw.lanes == 16 {
		valuesRow(name, lanes, v, offs, p, hd, wx, k)
	} else {
		valuesRowV(name, lanes, v, offs, p, hd, wx)
	}
	Label(name + "_next")
	INCQ(p)
	CMPQ(p, n)
	JL(LabelRef(name + "_pos"))
	Label(name + "_done")
	VZEROUPPER()
	RET()
}

// valuesRow adds wx·V[offs[p]] into lane p mod 64, 16 values per step.
func valuesRow(name string, lanes, v, offs, p, hd reg.GPVirtual, wx reg.VecVirtual, k reg.Register) {
	dst, src, left := GP64(), GP64(), GP64()
	MOVQ(p, dst)
	ANDQ(U8(63), dst)
	IMULQ(hd, dst)
	LEAQ(Mem{Base: lanes, Index: dst, Scale: 4}, dst)
	MOVQ(Mem{Base: offs, Index: p, Scale: 8}, src)
	LEAQ(Mem{Base: v, Index: src, Scale: 2}, src)
	MOVQ(hd, left)
	wz := ZMM()
	VBROADCASTSS(wx, wz)
	Label(name + "_d")
	CMPQ(left, U8(16))
	JL(LabelRef(name + "_dtail"))
	x, acc := ZMM(), ZMM()
	VCVTPH2PS(Mem{Base: src}, x)
	VMOVUPS(Mem{Base: dst}, acc)
	VFMADD231PS(x, wz, acc)
	VMOVUPS(acc, Mem{Base: dst})
	ADDQ(U8(32), src)
	ADDQ(U8(64), dst)
	SUBQ(U8(16), left)
	JMP(LabelRef(name + "_d"))
	Label(name + "_dtail")
	TESTQ(left, left)
	JZ(LabelRef(name + "_dend"))
	x, acc = ZMM(), ZMM()
	VCVTPH2PS_Z(Mem{Base: src}, k, x)
	VMOVUPS_Z(Mem{Base: dst}, k, acc)
	VFMADD231PS(x, wz, acc)
	VMOVUPS(acc, k, Mem{Base: dst})
	Label(name + "_dend")
}

// genValuesF16Reg is genValuesF16 for hd = 16·dBlocks on lanes that start
// at zero (it sets them rather than adds to them), held in registers: the 64 lanes are taken L = 16/dBlocks at a time (L·dBlocks
// = 16 accumulators), and for each such group the positions p ≡ lane
// (mod 64) are added in increasing order, as in genValuesF16, so every
// lane sees the same fused multiply-adds in the same order. A zero weight
// leaves the lane unchanged (masked add; NaN weights are not zero).
func genValuesF16Reg(dBlocks int) {
	L := 16 / dBlocks
	hd := 16 * dBlocks
	name := fmt.Sprintf("valuesF16x%dAVX512", dBlocks)
	TEXT(name, NOSPLIT, "func(lanes *float32, w *float32, v *uint16, offs *int, n int)")
	Doc(fmt.Sprintf("%s is valuesF16AVX512 for hd = %d on zeroed lanes (it sets every lane), accumulating %d lanes at a time in registers.", name, hd, L))
	Pragma("noescape")
	lanes, w, v, offs, n := loadGP("lanes"), loadGP("w"), loadGP("v"), loadGP("offs"), loadGP("n")
	TESTQ(n, n)
	JZ(LabelRef(name + "_done"))
	zx := ZMM()
	zero(zx)
	g := GP64() // first lane of the group
	XORQ(g, g)
	Label(name + "_group")
	acc := make([][]reg.VecVirtual, L)
	row := GP64()
	IMUL3Q(U32(4*hd), g, row)
	ADDQ(lanes, row) // &lanes[g·hd]
	for l := range L {
		acc[l] = make([]reg.VecVirtual, dBlocks)
		for d := range dBlocks {
			acc[l][d] = ZMM()
			zero(acc[l][d])
		}
	}
	p := GP64()
	MOVQ(g, p)
	Label(name + "_round")
	for l := range L {
		CMPQ(p, n)
		JGE(LabelRef(name + "_store"))
		off, wb, k := GP64(), ZMM(), K()
		MOVQ(Mem{Base: offs, Index: p, Scale: 8}, off)
		LEAQ(Mem{Base: v, Index: off, Scale: 2}, off)
		VBROADCASTSS(Mem{Base: w, Index: p, Scale: 4}, wb)
		VCMPPS(U8(4), zx, wb, k) // w ≠ 0 (unordered: NaN counts)
		for d := range dBlocks {
			x := ZMM()
			VCVTPH2PS(Mem{Base: off, Disp: 32 * d}, x)
			VFMADD231PS(x, wb, k, acc[l][d])
		}
		if l < L-1 {
			INCQ(p)
		}
	}
	ADDQ(U8(64-(L-1)), p)
	JMP(LabelRef(name + "_round"))
	Label(name + "_store")
	for l := range L {
		for d := range dBlocks {
			VMOVUPS(acc[l][d], Mem{Base: row, Disp: 4 * (l*hd + 16*d)})
		}
	}
	ADDQ(U8(L), g)
	CMPQ(g, U8(64))
	JL(LabelRef(name + "_group"))
	Label(name + "_done")
	VZEROUPPER()
	RET()
}
