package main

import (
	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	"github.com/mmcloughlin/avo/reg"
)

// AVX2 versions of the attention kernels over an F16 cache (attn.go), for
// CPUs without AVX-512: the same arithmetic, eight lanes per register.

func genAttnAVX2() {
	genScoresF16(attnYMM)
	genScaleRoundF16V()
	genValuesF16(attnYMM)
	genValuesF16x8V()
	genToF16V()
}

// genToF16V: dst[i] = f16(x[i]) (VCVTPS2PH, nearest even) for i < n &^ 7.
func genToF16V() {
	name := "toF16AVX2"
	TEXT(name, NOSPLIT, "func(dst *uint16, x *float32, n int)")
	Doc(name + " sets dst[i] to x[i] rounded to half precision (nearest even), for i < n &^ 7.")
	Pragma("noescape")
	d, xs := loadStream("dst", 2), loadStream("x", 4)
	n := loadGP("n")
	loop8(name, n, []stream{d, xs}, func() {
		v, h := YMM(), XMM()
		VMOVUPS(xs.mem(), v)
		VCVTPS2PH(U8(0), v, h)
		VMOVDQU(h, d.mem())
	})
}

// genScaleRoundF16V: x[i] = f16(x[i]·a) as float32 for i < n &^ 7 (the
// caller rounds the tail).
func genScaleRoundF16V() {
	name := "scaleRoundF16AVX2"
	TEXT(name, NOSPLIT, "func(x *float32, n int, a float32)")
	Doc(name + " sets x[i] to x[i]·a rounded to half precision (nearest even), for i < n &^ 7.")
	Pragma("noescape")
	xs := loadStream("x", 4)
	n := loadGP("n")
	a := bcastArgV("a")
	loop8(name, n, []stream{xs}, func() {
		v := YMM()
		VMULPS(xs.mem(), a, v)
		h := XMM()
		VCVTPS2PH(U8(0), v, h)
		VCVTPH2PS(h, v)
		VMOVUPS(v, xs.mem())
	})
}

// valuesRowV adds wx·V[offs[p]] into lane p mod 64, 8 values per step
// (hd a positive multiple of 8).
func valuesRowV(name string, lanes, v, offs, p, hd reg.GPVirtual, wx reg.VecVirtual) {
	dst, src, left := GP64(), GP64(), GP64()
	MOVQ(p, dst)
	ANDQ(U8(63), dst)
	IMULQ(hd, dst)
	LEAQ(Mem{Base: lanes, Index: dst, Scale: 4}, dst)
	MOVQ(Mem{Base: offs, Index: p, Scale: 8}, src)
	LEAQ(Mem{Base: v, Index: src, Scale: 2}, src)
	MOVQ(hd, left)
	SHRQ(U8(3), left)
	wy := YMM()
	VBROADCASTSS(wx, wy)
	Label(name + "_d")
	x, acc := YMM(), YMM()
	VCVTPH2PS(Mem{Base: src}, x)
	VMOVUPS(Mem{Base: dst}, acc)
	VFMADD231PS(x, wy, acc)
	VMOVUPS(acc, Mem{Base: dst})
	ADDQ(U8(16), src)
	ADDQ(U8(32), dst)
	DECQ(left)
	JNZ(LabelRef(name + "_d"))
}

// genValuesF16x8V is genValuesF16 (AVX2) for hd = 64 on lanes that start
// at zero (it sets them), one lane at a time in eight YMM registers: lane
// l takes the positions p ≡ l (mod 64) in increasing order, as the general
// kernel does, so every lane sees the same fused multiply-adds in the same
// order; zero weights are skipped (NaN weights are not zero).
func genValuesF16x8V() {
	name := "valuesF16x8AVX2"
	TEXT(name, NOSPLIT, "func(lanes *float32, w *float32, v *uint16, offs *int, n int)")
	Doc(name + " is valuesF16AVX2 for hd = 64 on zeroed lanes (it sets every lane), accumulating one lane at a time in registers.")
	Pragma("noescape")
	lanes, w, v, offs, n := loadGP("lanes"), loadGP("w"), loadGP("v"), loadGP("offs"), loadGP("n")
	zx := XMM()
	VXORPS(zx, zx, zx)
	g := GP64() // the lane
	XORQ(g, g)
	Label(name + "_lane")
	acc := make([]reg.VecVirtual, 8)
	for d := range acc {
		acc[d] = YMM()
		VXORPS(acc[d], acc[d], acc[d])
	}
	p := GP64()
	MOVQ(g, p)
	Label(name + "_pos")
	CMPQ(p, n)
	JGE(LabelRef(name + "_store"))
	wx := XMM()
	VMOVSS(Mem{Base: w, Index: p, Scale: 4}, wx)
	VUCOMISS(zx, wx)
	JNE(LabelRef(name + "_add"))
	JP(LabelRef(name + "_add")) // NaN weights are not zero
	JMP(LabelRef(name + "_next"))
	Label(name + "_add")
	off, wy := GP64(), YMM()
	MOVQ(Mem{Base: offs, Index: p, Scale: 8}, off)
	LEAQ(Mem{Base: v, Index: off, Scale: 2}, off)
	VBROADCASTSS(wx, wy)
	for d := range acc {
		x := YMM()
		VCVTPH2PS(Mem{Base: off, Disp: 16 * d}, x)
		VFMADD231PS(x, wy, acc[d])
	}
	Label(name + "_next")
	ADDQ(U8(64), p)
	JMP(LabelRef(name + "_pos"))
	Label(name + "_store")
	row := GP64()
	MOVQ(g, row)
	SHLQ(U8(8), row) // 64 floats a lane
	ADDQ(lanes, row)
	for d := range acc {
		VMOVUPS(acc[d], Mem{Base: row, Disp: 32 * d})
	}
	INCQ(g)
	CMPQ(g, U8(64))
	JL(LabelRef(name + "_lane"))
	VZEROUPPER()
	RET()
}
