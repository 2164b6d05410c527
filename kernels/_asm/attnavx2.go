package main

import (
	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	"github.com/mmcloughlin/avo/reg"
)

// AVX2 versions of the attention kernels over an F16 cache (attn.go), for
// CPUs without AVX-512: the same arithmetic, eight lanes per register.

func genAttnAVX2() {
	genScoresF16V()
	genScaleRoundF16V()
	genValuesF16V()
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

// genScoresF16V is genScoresF16 with the 64 lanes in eight YMM registers
// (lane 8i+j in register i), reduced as reduce64: ZMM register z of the
// AVX-512 kernel is the YMM pair (2z, 2z+1).
func genScoresF16V() {
	name := "scoresF16AVX2"
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
	acc := make([]reg.VecVirtual, 8)
	for i := range acc {
		acc[i] = YMM()
		VXORPS(acc[i], acc[i], acc[i])
	}
	Label(name + "_step")
	for i, a := range acc {
		y := YMM()
		VCVTPH2PS(Mem{Base: row, Disp: 16 * i}, y)
		VFMADD231PS(Mem{Base: qp, Disp: 32 * i}, y, a)
	}
	ADDQ(U32(256), qp)
	ADDQ(U32(128), row)
	DECQ(steps)
	JNZ(LabelRef(name + "_step"))
	// z0 += z2, z1 += z3, z0 += z1 on the pairs, then reduce16.
	for i := range 4 {
		VADDPS(acc[i+4], acc[i], acc[i])
	}
	VADDPS(acc[2], acc[0], acc[0])
	VADDPS(acc[3], acc[1], acc[1])
	s := reduce16V(acc[0], acc[1])
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

// genValuesF16V: for p < n with w[p] ≠ 0, lanes[(p mod 64)·hd + d] =
// fma(w[p], v[offs[p]+d], lanes[...]) for d < hd, hd a positive multiple
// of 8 (genValuesF16's arithmetic).
func genValuesF16V() {
	name := "valuesF16AVX2"
	TEXT(name, NOSPLIT, "func(lanes *float32, w *float32, v *uint16, offs *int, n, hd int)")
	Doc(name + " adds w[p]·V[offs[p]] into lane p mod 64 of lanes (64 rows of hd, a multiple of 8) for p < n, skipping zero weights.")
	Pragma("noescape")
	lanes, w, v, offs, n, hd := loadGP("lanes"), loadGP("w"), loadGP("v"), loadGP("offs"), loadGP("n"), loadGP("hd")
	TESTQ(n, n)
	JZ(LabelRef(name + "_done"))
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
	Label(name + "_next")
	INCQ(p)
	CMPQ(p, n)
	JL(LabelRef(name + "_pos"))
	Label(name + "_done")
	VZEROUPPER()
	RET()
}
