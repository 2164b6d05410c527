package main

import (
	"math"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	"github.com/mmcloughlin/avo/reg"
)

// AVX2 versions of the float vector kernels, for CPUs without AVX-512
// (VEX encodings only, at most 16 YMM registers, no mask registers).
// Elementwise kernels (exact in any width) take whole 8-element blocks and
// leave the tails to the Go wrappers; the dot products take whole
// 64-element steps and keep the AVX-512 kernels' lanes (64 FMA lanes in
// eight YMM registers; the BF16 pairs in four) and reductions, so their
// results are the same bits.

func genVecAVX2() {
	genAxpyV("axpyF32AVX2", vLoadF32)
	genAxpyV("axpyF16AVX2", vLoadF16)
	genAxpyV("axpyBF16AVX2", vLoadBF16)
	genMadF16V()
	genScaleF16V()
	genBinaryV("scaleF32AVX2")
	genBinaryV("addAVX2")
	genBinaryV("mulAVX2")
	genRMSScaleV()
	genDotLanesV("dotF32LanesAVX2", vLoadF32)
	genDotLanesV("dotF16LanesAVX2", vLoadF16)
	genDotBF16PairsV()
	genReduceLanesV()
	genSiLUV("siluAVX2", false)
	genSiLUV("swiGLUAVX2", true)
	genSoftmaxExpV()
}

// vLoad loads 8 elements at m as float32 into a YMM.
type vLoad struct {
	size int
	typ  string
	load func(m Mem, y reg.VecVirtual)
}

var (
	vLoadF32  = vLoad{4, "*float32", func(m Mem, y reg.VecVirtual) { VMOVUPS(m, y) }}
	vLoadF16  = vLoad{2, "*uint16", func(m Mem, y reg.VecVirtual) { VCVTPH2PS(m, y) }}
	vLoadBF16 = vLoad{2, "*uint16", func(m Mem, y reg.VecVirtual) {
		VPMOVZXWD(m, y)
		VPSLLD(U8(16), y, y)
	}}
)

// loop8 runs body over n/8 whole 8-element blocks, advancing the streams.
func loop8(name string, n reg.GPVirtual, ss []stream, body func()) {
	SHRQ(U8(3), n)
	JZ(LabelRef(name + "_end"))
	Label(name + "_loop")
	body()
	for _, s := range ss {
		ADDQ(U32(8*s.size), s.p)
	}
	DECQ(n)
	JNZ(LabelRef(name + "_loop"))
	Label(name + "_end")
	VZEROUPPER()
	RET()
}

// bcastArgV broadcasts a float32 argument to 8 lanes.
func bcastArgV(name string) reg.VecVirtual {
	x := XMM()
	Load(Param(name), x)
	y := YMM()
	VBROADCASTSS(x, y)
	return y
}

func genAxpyV(name string, x vLoad) {
	TEXT(name, NOSPLIT, "func(dst *float32, a float32, x "+x.typ+", n int)")
	Doc(name + " computes dst[i] = fma(a, x[i], dst[i]) for i < n &^ 7.")
	Pragma("noescape")
	d, xs := loadStream("dst", 4), loadStream("x", x.size)
	n := loadGP("n")
	a := bcastArgV("a")
	loop8(name, n, []stream{d, xs}, func() {
		v, acc := YMM(), YMM()
		x.load(xs.mem(), v)
		VMOVUPS(d.mem(), acc)
		VFMADD231PS(v, a, acc)
		VMOVUPS(acc, d.mem())
	})
}

func genMadF16V() {
	name := "madF16AVX2"
	TEXT(name, NOSPLIT, "func(acc *uint16, a float32, x *uint16, n int)")
	Doc(name + " computes acc[i] = f16(fma(x[i], a, acc[i])) for i < n &^ 7.")
	Pragma("noescape")
	c, xs := loadStream("acc", 2), loadStream("x", 2)
	n := loadGP("n")
	a := bcastArgV("a")
	loop8(name, n, []stream{c, xs}, func() {
		v, acc := YMM(), YMM()
		VCVTPH2PS(xs.mem(), v)
		VCVTPH2PS(c.mem(), acc)
		VFMADD231PS(v, a, acc)
		VCVTPS2PH(U8(0), acc, c.mem())
	})
}

func genScaleF16V() {
	name := "scaleF16AVX2"
	TEXT(name, NOSPLIT, "func(acc *uint16, a float32, n int)")
	Doc(name + " computes acc[i] = f16(acc[i]·a) for i < n &^ 7.")
	Pragma("noescape")
	c := loadStream("acc", 2)
	n := loadGP("n")
	a := bcastArgV("a")
	loop8(name, n, []stream{c}, func() {
		v := YMM()
		VCVTPH2PS(c.mem(), v)
		VMULPS(a, v, v)
		VCVTPS2PH(U8(0), v, c.mem())
	})
}

func genBinaryV(name string) {
	vector := name != "scaleF32AVX2"
	sig := "func(dst *float32, a float32, n int)"
	if vector {
		sig = "func(dst, x *float32, n int)"
	}
	TEXT(name, NOSPLIT, sig)
	Doc(name + " is the elementwise " + map[string]string{
		"scaleF32AVX2": "dst[i] *= a", "addAVX2": "dst[i] += x[i]", "mulAVX2": "dst[i] *= x[i]"}[name] + " for i < n &^ 7.")
	Pragma("noescape")
	d := loadStream("dst", 4)
	ss := []stream{d}
	var xs stream
	var a reg.VecVirtual
	if vector {
		xs = loadStream("x", 4)
		ss = append(ss, xs)
	}
	n := loadGP("n")
	if !vector {
		a = bcastArgV("a")
	}
	loop8(name, n, ss, func() {
		v := YMM()
		VMOVUPS(d.mem(), v)
		switch name {
		case "scaleF32AVX2":
			VMULPS(a, v, v)
		case "addAVX2":
			VADDPS(xs.mem(), v, v)
		case "mulAVX2":
			VMULPS(xs.mem(), v, v)
		}
		VMOVUPS(v, d.mem())
	})
}

func genRMSScaleV() {
	name := "rmsScaleAVX2"
	TEXT(name, NOSPLIT, "func(dst, x, w *float32, n int, scale float32)")
	Doc(name + " computes dst[i] = (x[i]·scale)·w[i] for i < n &^ 7.")
	Pragma("noescape")
	d, xs, ws := loadStream("dst", 4), loadStream("x", 4), loadStream("w", 4)
	n := loadGP("n")
	s := bcastArgV("scale")
	loop8(name, n, []stream{d, xs, ws}, func() {
		v := YMM()
		VMULPS(xs.mem(), s, v)
		VMULPS(ws.mem(), v, v)
		VMOVUPS(v, d.mem())
	})
}

// reduce16V sums lo (lanes 0..7) and hi (lanes 8..15) as the generic
// reduce16; the result is lane 0 of the returned XMM.
func reduce16V(lo, hi reg.VecVirtual) reg.VecVirtual {
	h := YMM()
	VADDPS(hi, lo, h) // h[i] = v[i] + v[i+8]
	q := XMM()
	VEXTRACTF128(U8(1), h, q)
	VADDPS(q, h.AsX(), q) // q[i] = h[i] + h[i+4]
	t := XMM()
	VPERMILPS(U8(0x4e), q, t)
	VADDPS(t, q, q)
	VPERMILPS(U8(0xb1), q, t)
	VADDPS(t, q, q)
	return q
}

// genDotLanesV: the 64 lanes of genDotLanes in eight YMM registers (lane
// 8i+j in register i), reduced by reduce64.
func genDotLanesV(name string, b vLoad) {
	TEXT(name, NOSPLIT, "func(a *float32, b "+b.typ+", n int) float32")
	Doc(name + " returns reduce64 of the 64 fused lanes of a·b over n elements, n a positive multiple of 64.")
	Pragma("noescape")
	as, bs := loadStream("a", 4), loadStream("b", b.size)
	n := loadGP("n")
	SHRQ(U8(6), n)
	acc := make([]reg.VecVirtual, 8)
	for i := range acc {
		acc[i] = YMM()
		VXORPS(acc[i], acc[i], acc[i])
	}
	Label(name + "_loop")
	for i := range acc {
		y := YMM()
		b.load(bs.mem().Offset(8*b.size*i), y)
		VFMADD231PS(as.mem().Offset(32*i), y, acc[i])
	}
	ADDQ(U32(256), as.p)
	ADDQ(U32(64*b.size), bs.p)
	DECQ(n)
	JNZ(LabelRef(name + "_loop"))
	// r[l] = (L[l] + L[32+l]) + (L[16+l] + L[48+l])
	VADDPS(acc[4], acc[0], acc[0])
	VADDPS(acc[6], acc[2], acc[2])
	VADDPS(acc[2], acc[0], acc[0])
	VADDPS(acc[5], acc[1], acc[1])
	VADDPS(acc[7], acc[3], acc[3])
	VADDPS(acc[3], acc[1], acc[1])
	Store(reduce16V(acc[0], acc[1]), ReturnIndex(0))
	VZEROUPPER()
	RET()
}

// genDotBF16PairsV: dotBF16PairsAVX512 with each 16-lane register as two
// YMM. Within a YMM the lanes are kept in the order π = [0 1 4 5 2 3 6 7]
// (VSHUFPS's in-lane deinterleaving of the activations; the weights'
// pairs are permuted to match by VPERMQ) and put back at the end.
func genDotBF16PairsV() {
	name := "dotBF16PairsAVX2"
	TEXT(name, NOSPLIT, "func(a *float32, b *uint16, n int) (c0, c1 float32)")
	Doc(name + " returns reduce16 of the two VDPBF16PS-layout accumulators of a·b over n elements, n a positive multiple of 64.")
	Pragma("noescape")
	as, bs := loadGP("a"), loadGP("b")
	n := loadGP("n")
	SHRQ(U8(6), n)
	hi := YMM()
	VBROADCASTSS(constU32("hiWords", 0xFFFF0000), hi)
	var c [2][2]reg.VecVirtual
	for r := range c {
		for h := range c[r] {
			c[r][h] = YMM()
			VXORPS(c[r][h], c[r][h], c[r][h])
		}
	}
	Label(name + "_loop")
	for r := range 2 {
		for h := range 2 {
			e := 32*r + 16*h // first element of the half
			w, wo, we := YMM(), YMM(), YMM()
			VPERMQ(U8(0xD8), Mem{Base: bs, Disp: 2 * e}, w)
			VANDPS(hi, w, wo)
			VPSLLD(U8(16), w, we)
			a0, ao, ae := YMM(), YMM(), YMM()
			VMOVUPS(Mem{Base: as, Disp: 4 * e}, a0)
			VSHUFPS(U8(0xDD), Mem{Base: as, Disp: 4*e + 32}, a0, ao)
			VSHUFPS(U8(0x88), Mem{Base: as, Disp: 4*e + 32}, a0, ae)
			VMULPS(wo, ao, ao)
			VADDPS(ao, c[r][h], c[r][h])
			VMULPS(we, ae, ae)
			VADDPS(ae, c[r][h], c[r][h])
		}
	}
	ADDQ(U32(256), as)
	ADDQ(U32(128), bs)
	DECQ(n)
	JNZ(LabelRef(name + "_loop"))
	for r := range 2 {
		for h := range 2 {
			VPERMQ(U8(0xD8), c[r][h], c[r][h])
		}
		Store(reduce16V(c[r][0], c[r][1]), ReturnIndex(r))
	}
	VZEROUPPER()
	RET()
}

// genReduceLanesV: out[d] = reduce64(lanes[k·hd+d], k = 0..63) for d < n
// &^ 7, eight values of d at a time; hd is the row stride of lanes.
func genReduceLanesV() {
	name := "reduceLanesAVX2"
	TEXT(name, NOSPLIT, "func(out, lanes *float32, n, hd int)")
	Doc(name + " sets out[d] to reduce64 of lanes[k·hd+d], k = 0..63, for d < n &^ 7.")
	Pragma("noescape")
	o, l := loadStream("out", 4), loadStream("lanes", 4)
	n := loadGP("n")
	stride := loadGP("hd")
	SHLQ(U8(2), stride)
	loop8(name, n, []stream{o, l}, func() {
		p := GP64()
		r := make([]reg.VecVirtual, 16)
		for li := range 16 {
			// (L[li] + L[32+li]) + (L[16+li] + L[48+li])
			v := [2]reg.VecVirtual{YMM(), YMM()}
			for q, kk := range []int{li, 32 + li, 16 + li, 48 + li} {
				IMUL3Q(U32(kk), stride, p)
				ADDQ(l.p, p)
				switch q {
				case 0:
					VMOVUPS(Mem{Base: p}, v[0])
				case 1:
					VADDPS(Mem{Base: p}, v[0], v[0])
				case 2:
					VMOVUPS(Mem{Base: p}, v[1])
				case 3:
					VADDPS(Mem{Base: p}, v[1], v[1])
				}
			}
			VADDPS(v[1], v[0], v[0])
			r[li] = v[0]
			// fold as soon as a pair is complete, to stay within 16 registers
			if li >= 8 {
				VADDPS(r[li], r[li-8], r[li-8]) // h
			}
		}
		for i := range 4 {
			VADDPS(r[i+4], r[i], r[i]) // q
		}
		VADDPS(r[2], r[0], r[0])
		VADDPS(r[3], r[1], r[1])
		VADDPS(r[1], r[0], r[0])
		VMOVUPS(r[0], o.mem())
	})
}

// vec8 returns a 32-byte table of eight copies of the float32 v, usable as
// a memory operand of VEX instructions (which have no broadcasts).
func vec8(name string, v float32) Mem {
	b := math.Float32bits(v)
	return constU32(name, b, b, b, b, b, b, b, b)
}

func vec8u(name string, b uint32) Mem {
	return constU32(name, b, b, b, b, b, b, b, b)
}

// vexpV is vexp (vec_exp.go) on eight lanes. VSCALEFPS(n, j) = j·2^n
// rounded once becomes (j·2^n1)·2^n2 with n1 = trunc(n/2), n2 = n − n1:
// for |n| ≤ 192 both powers are normal floats, the first product is exact
// (j is in [0.7, 1.5)) and the second rounds once. Lanes with |n| > 192
// saturate to +Inf (n > 0) or 0 as before; NaN lanes stay NaN (j is NaN).
func vexpV(x reg.VecVirtual) reg.VecVirtual {
	z := YMM()
	VMOVUPS(vec8("expShift8", 0x1.8p23), z)
	VFMADD231PS(vec8("expLog2e8", 0x1.715476p+0), x, z) // z = x·log2e + shift
	n := YMM()
	VSUBPS(vec8("expShift8", 0x1.8p23), z, n)
	b := YMM()
	VMOVAPS(x, b)
	VFNMADD231PS(vec8("expLn2Hi8", 0x1.62e4p-1), n, b) // b = x − n·ln2hi
	VFNMADD231PS(vec8("expLn2Lo8", 0x1.7f7d1cp-20), n, b)
	u := YMM()
	VMULPS(b, b, u)
	p1, p2, j := YMM(), YMM(), YMM()
	VMOVUPS(vec8("expC48", 0x1.573e2ep-5), p1)
	VFMADD231PS(vec8("expC58", 0x1.0e4020p-7), b, p1) // c5·b + c4
	VMOVUPS(vec8("expC28", 0x1.fffdb6p-2), p2)
	VFMADD231PS(vec8("expC38", 0x1.555e66p-3), b, p2) // c3·b + c2
	VMOVUPS(vec8("one8", 1), j)
	VFMADD231PS(vec8("expC18", 0x1.ffffecp-1), b, j) // c1·b + 1
	VFMADD231PS(p1, u, p2)
	VFMADD231PS(p2, u, j)
	// scale by 2^n1 then 2^n2
	i1, in := YMM(), YMM()
	VMULPS(vec8("half8", 0.5), n, i1)
	VCVTTPS2DQ(i1, i1) // n1 = trunc(n/2)
	VCVTTPS2DQ(n, in)
	VPSUBD(i1, in, in) // n2 = n − n1
	bias := vec8u("bias127", 127)
	VPADDD(bias, i1, i1)
	VPSLLD(U8(23), i1, i1)
	VPADDD(bias, in, in)
	VPSLLD(U8(23), in, in)
	r := YMM()
	VMULPS(i1, j, r)
	VMULPS(in, r, r)
	// saturation
	an, big, pos := YMM(), YMM(), YMM()
	VANDPS(vec8u("absMask8", 0x7fffffff), n, an)
	VCMPPS(U8(0x1e), vec8("expLimit8", 192), an, big) // |n| > 192 (ordered)
	z0 := YMM()
	VXORPS(z0, z0, z0)
	VCMPPS(U8(0x1e), z0, n, pos) // n > 0
	VANDPS(vec8u("inf8", 0x7f800000), pos, pos)
	VBLENDVPS(big, pos, r, r)
	return r
}

// genSiLUV: dst = x/(1+vexp(−x)) (times up for SwiGLU) for i < n &^ 7.
func genSiLUV(name string, glu bool) {
	sig := "func(dst, x *float32, n int)"
	if glu {
		sig = "func(dst, x, up *float32, n int)"
	}
	TEXT(name, NOSPLIT, sig)
	Doc(name + " computes ggml's vector SiLU (times up, for SwiGLU) for i < n &^ 7.")
	Pragma("noescape")
	d, xs := loadStream("dst", 4), loadStream("x", 4)
	ss := []stream{d, xs}
	var us stream
	if glu {
		us = loadStream("up", 4)
		ss = append(ss, us)
	}
	n := loadGP("n")
	loop8(name, n, ss, func() {
		x := YMM()
		VMOVUPS(xs.mem(), x)
		nx := YMM()
		VXORPS(nx, nx, nx)
		VSUBPS(x, nx, nx) // 0 − x
		e := vexpV(nx)
		VADDPS(vec8("one8", 1), e, e)
		r := YMM()
		VDIVPS(e, x, r)
		if glu {
			VMULPS(us.mem(), r, r)
		}
		VMOVUPS(r, d.mem())
	})
}

// genSoftmaxExpV: x[i] = vexp(x[i] − mx) over n/16 whole 16-element
// blocks; returns Σ float64(reduce16(block)) in block order.
func genSoftmaxExpV() {
	name := "softmaxExpAVX2"
	TEXT(name, NOSPLIT, "func(x *float32, n int, mx float32) float64")
	Doc(name + " replaces n/16 whole blocks of x by vexp(x−mx) and returns Σ float64(reduce16(block)).")
	Pragma("noescape")
	xs := loadStream("x", 4)
	n := loadGP("n")
	m := bcastArgV("mx")
	sum := XMM()
	VXORPS(sum, sum, sum)
	SHRQ(U8(4), n)
	JZ(LabelRef(name + "_end"))
	Label(name + "_block")
	var e [2]reg.VecVirtual
	for h := range 2 {
		v := YMM()
		VMOVUPS(xs.mem().Offset(32*h), v)
		VSUBPS(m, v, v)
		e[h] = vexpV(v)
		VMOVUPS(e[h], xs.mem().Offset(32*h))
	}
	s := reduce16V(e[0], e[1])
	VCVTSS2SD(s, s, s)
	VADDSD(s, sum, sum)
	ADDQ(U32(64), xs.p)
	DECQ(n)
	JNZ(LabelRef(name + "_block"))
	Label(name + "_end")
	Store(sum, ReturnIndex(0))
	VZEROUPPER()
	RET()
}
