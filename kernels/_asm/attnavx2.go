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
