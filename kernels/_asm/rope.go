package main

import (
	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	"github.com/mmcloughlin/avo/reg"
)

// RoPE rotations of one head with the generic contract (rope.go):
// x0' = fma(x0, cos, −(x1·sin)) and x1' = fma(x0, sin, x1·cos), the inner
// products rounded to float32 — VFMSUB231PS and VFMADD231PS on the rounded
// products give exactly that.

func genRope() {
	genRopeNeoX()
	genRopeNorm()
	genRopeAVX2()
}

// genRopeNeoX rotates pairs (x0[i], x1[i]), the two halves of a NeoX head.
func genRopeNeoX() {
	name := "ropeNeoXAVX512"
	TEXT(name, NOSPLIT, "func(x0, x1, cos, sin *float32, n int)")
	Doc(name + " rotates the pairs (x0[i], x1[i]) by (cos[i], sin[i]) for i < n.")
	Pragma("noescape")
	a, b, c, s := loadStream("x0", 4), loadStream("x1", 4), loadStream("cos", 4), loadStream("sin", 4)
	n := loadGP("n")
	loop16(name, n, []stream{a, b, c, s}, func(k reg.Register) {
		x0, x1, cv, sv := ZMM(), ZMM(), ZMM(), ZMM()
		for _, p := range []struct {
			m Mem
			z reg.VecVirtual
		}{{a.mem(), x0}, {b.mem(), x1}, {c.mem(), cv}, {s.mem(), sv}} {
			loadF32.load(p.m, k, p.z)
		}
		t, u := ZMM(), ZMM()
		VMULPS(sv, x1, t)      // x1·sin
		VMULPS(cv, x1, u)      // x1·cos
		VFMSUB231PS(cv, x0, t) // x0·cos − t
		VFMADD231PS(sv, x0, u) // x0·sin + u
		storeF32(t, k, a.mem())
		storeF32(u, k, b.mem())
	})
}

// genRopeNorm rotates the interleaved pairs (v[2i], v[2i+1]): eight pairs
// per step, cos and sin spread to both lanes of their pair.
func genRopeNorm() {
	name := "ropeNormAVX512"
	TEXT(name, NOSPLIT, "func(v, cos, sin *float32, n int)")
	Doc(name + " rotates the pairs (v[2i], v[2i+1]) by (cos[i], sin[i]) for i < n.")
	Pragma("noescape")
	vs, c, s := loadStream("v", 4), loadStream("cos", 4), loadStream("sin", 4)
	n := loadGP("n")
	pairs := ZMM()
	VMOVDQU32(constU32("ropePairs", 0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7), pairs)
	odd := K()
	bits := GP64()
	MOVQ(U32(0xAAAA), bits)
	KMOVW(bits.As32(), odd)
	step := func(k16, k8 reg.Register) {
		x, cv, sv := ZMM(), ZMM(), ZMM()
		loadF32.load(vs.mem(), k16, x)
		for _, p := range []struct {
			m Mem
			z reg.VecVirtual
		}{{c.mem(), cv}, {s.mem(), sv}} {
			if k8 == nil {
				VMOVUPS(p.m, p.z.AsY())
			} else {
				VMOVUPS_Z(p.m, k8, p.z.AsY())
			}
			VPERMPS(p.z, pairs, p.z) // [c0 c0 c1 c1 …]
		}
		xs, t, u := ZMM(), ZMM(), ZMM()
		VPERMILPS(U8(0xB1), x, xs) // [x1 x0 …]
		VMULPS(sv, xs, t)          // even lanes: x1·sin
		VMULPS(cv, x, u)           // odd lanes: x1·cos
		VFMSUB231PS(cv, x, t)      // even: x0·cos − x1·sin
		VFMADD231PS(sv, xs, u)     // odd: x0·sin + x1·cos
		VMOVAPS(u, odd, t)         // odd lanes from u
		storeF32(t, k16, vs.mem())
	}
	Label(name + "_loop")
	CMPQ(n, U8(8))
	JL(LabelRef(name + "_tail"))
	step(nil, nil)
	ADDQ(U8(64), vs.p)
	ADDQ(U8(32), c.p)
	ADDQ(U8(32), s.p)
	SUBQ(U8(8), n)
	JMP(LabelRef(name + "_loop"))
	Label(name + "_tail")
	TESTQ(n, n)
	JZ(LabelRef(name + "_done"))
	k8, k16 := K(), K()
	MOVQ(U32(0xFF), bits)
	BZHIQ(n, bits, bits)
	KMOVW(bits.As32(), k8)
	SHLQ(U8(1), n)
	MOVQ(U32(0xFFFF), bits)
	BZHIQ(n, bits, bits)
	KMOVW(bits.As32(), k16)
	step(k16, k8)
	Label(name + "_done")
	VZEROUPPER()
	RET()
}

// genRopeAVX2 is genRope with eight lanes (VEX), for CPUs without
// AVX-512; the caller rotates the pairs past the last full step.
func genRopeAVX2() {
	name := "ropeNeoXAVX2"
	TEXT(name, NOSPLIT, "func(x0, x1, cos, sin *float32, n int)")
	Doc(name + " rotates the pairs (x0[i], x1[i]) by (cos[i], sin[i]) for i < n &^ 7.")
	Pragma("noescape")
	a, b, c, s := loadStream("x0", 4), loadStream("x1", 4), loadStream("cos", 4), loadStream("sin", 4)
	n := loadGP("n")
	loop8(name, n, []stream{a, b, c, s}, func() {
		x0, x1, t, u := YMM(), YMM(), YMM(), YMM()
		VMOVUPS(a.mem(), x0)
		VMOVUPS(b.mem(), x1)
		VMULPS(s.mem(), x1, t)      // x1·sin
		VMULPS(c.mem(), x1, u)      // x1·cos
		VFMSUB231PS(c.mem(), x0, t) // x0·cos − t
		VFMADD231PS(s.mem(), x0, u) // x0·sin + u
		VMOVUPS(t, a.mem())
		VMOVUPS(u, b.mem())
	})

	name = "ropeNormAVX2"
	TEXT(name, NOSPLIT, "func(v, cos, sin *float32, n int)")
	Doc(name + " rotates the pairs (v[2i], v[2i+1]) by (cos[i], sin[i]) for i < n &^ 3.")
	Pragma("noescape")
	vs := loadStream("v", 4)
	c, s = loadStream("cos", 4), loadStream("sin", 4)
	n = loadGP("n")
	pairs := YMM()
	VMOVDQU(constU32("ropePairs8", 0, 0, 1, 1, 2, 2, 3, 3), pairs)
	SHRQ(U8(2), n) // four pairs a step
	JZ(LabelRef(name + "_end"))
	Label(name + "_loop")
	x, cv, sv := YMM(), YMM(), YMM()
	VMOVUPS(vs.mem(), x)
	VMOVUPS(c.mem(), cv.AsX())
	VPERMPS(cv, pairs, cv) // [c0 c0 c1 c1 …]
	VMOVUPS(s.mem(), sv.AsX())
	VPERMPS(sv, pairs, sv)
	xs, t, u := YMM(), YMM(), YMM()
	VPERMILPS(U8(0xB1), x, xs)  // [x1 x0 …]
	VMULPS(sv, xs, t)           // even lanes: x1·sin
	VMULPS(cv, x, u)            // odd lanes: x1·cos
	VFMSUB231PS(cv, x, t)       // even: x0·cos − x1·sin
	VFMADD231PS(sv, xs, u)      // odd: x0·sin + x1·cos
	VBLENDPS(U8(0xAA), u, t, t) // odd lanes from u
	VMOVUPS(t, vs.mem())
	ADDQ(U8(32), vs.p)
	ADDQ(U8(16), c.p)
	ADDQ(U8(16), s.p)
	DECQ(n)
	JNZ(LabelRef(name + "_loop"))
	Label(name + "_end")
	VZEROUPPER()
	RET()
}
