package main

import (
	"fmt"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	"github.com/mmcloughlin/avo/reg"
)

// Float vector kernels: elementwise updates (exact in any width), ggml's
// AVX-512 exp/SiLU polynomial on 16-lane blocks, and the 64-lane dot
// products with their fixed reductions. Elementwise kernels take any n
// (the tail is masked); block kernels take whole blocks only and leave the
// tails to the Go wrappers, which use the generic scalar code.

func genVec() {
	genAxpy("axpyF32AVX512", loadF32)
	genAxpy("axpyF16AVX512", loadF16)
	genAxpy("axpyBF16AVX512", loadBF16)
	genMadF16()
	genScaleF16()
	genToF16()
	genBinary("scaleF32AVX512", false)
	genBinary("addAVX512", true)
	genBinary("mulAVX512", true)
	genRMSScale()
	genSiLU("siluAVX512", false)
	genSiLU("swiGLUAVX512", true)
	genSoftmaxExp()
	genDotLanes("dotF32LanesAVX512", loadF32)
	genDotLanes("dotF16LanesAVX512", loadF16)
	genDotLanes("dotBF16LanesAVX512", loadBF16)
	genReduceLanes()
}

// elemLoad loads 16 elements at m into a ZMM of float32, masked by k (nil
// for all 16); size is the element size in bytes.
type elemLoad struct {
	size int
	typ  string // Go pointer type of the elements
	load func(m Mem, k reg.Register, z reg.VecVirtual)
}

var (
	loadF32 = elemLoad{4, "*float32", func(m Mem, k reg.Register, z reg.VecVirtual) {
		if k == nil {
			VMOVUPS(m, z)
		} else {
			VMOVUPS_Z(m, k, z)
		}
	}}
	loadF16 = elemLoad{2, "*uint16", func(m Mem, k reg.Register, z reg.VecVirtual) {
		if k == nil {
			VCVTPH2PS(m, z)
		} else {
			VCVTPH2PS_Z(m, k, z)
		}
	}}
	loadBF16 = elemLoad{2, "*uint16", func(m Mem, k reg.Register, z reg.VecVirtual) {
		if k == nil {
			VPMOVZXWD(m, z)
		} else {
			VPMOVZXWD_Z(m, k, z)
		}
		VPSLLD(U8(16), z, z)
	}}
)

// storeF32 stores z to m, masked by k unless nil.
func storeF32(z reg.VecVirtual, k reg.Register, m Mem) {
	if k == nil {
		VMOVUPS(z, m)
	} else {
		VMOVUPS(z, k, m)
	}
}

// storeF16 rounds z to half precision (nearest even) and stores it.
func storeF16(z reg.VecVirtual, k reg.Register, m Mem) {
	if k == nil {
		VCVTPS2PH(U8(0), z, m)
	} else {
		VCVTPS2PH(U8(0), z, k, m)
	}
}

// stream is a pointer argument advanced by 16 elements per step.
type stream struct {
	p    reg.GPVirtual
	size int
}

func loadStream(name string, size int) stream {
	s := stream{p: GP64(), size: size}
	Load(Param(name), s.p)
	return s
}

func (s stream) mem() Mem { return Mem{Base: s.p} }

// loop16 runs body over n elements, 16 per step, then once more with the
// remaining n mod 16 under a mask (body gets k == nil for full steps).
func loop16(name string, n reg.GPVirtual, ss []stream, body func(k reg.Register)) {
	Label(name + "_loop")
	CMPQ(n, U8(16))
	JL(LabelRef(name + "_tail"))
	body(nil)
	for _, s := range ss {
		ADDQ(U32(16*s.size), s.p)
	}
	SUBQ(U8(16), n)
	JMP(LabelRef(name + "_loop"))
	Label(name + "_tail")
	TESTQ(n, n)
	JZ(LabelRef(name + "_done"))
	k := K()
	bits := GP64()
	MOVQ(U32(0xFFFF), bits)
	BZHIQ(n, bits, bits)
	KMOVW(bits.As32(), k)
	body(k)
	Label(name + "_done")
	VZEROUPPER()
	RET()
}

// bcastArg broadcasts a float32 argument to 16 lanes.
func bcastArg(name string) reg.VecVirtual {
	x := XMM()
	Load(Param(name), x)
	z := ZMM()
	VBROADCASTSS(x, z)
	return z
}

// genAxpy: dst[i] = fma(a, x[i], dst[i]).
func genAxpy(name string, x elemLoad) {
	TEXT(name, NOSPLIT, "func(dst *float32, a float32, x "+x.typ+", n int)")
	Doc(name + " computes dst[i] = fma(a, x[i], dst[i]) for i < n.")
	Pragma("noescape")
	d, xs := loadStream("dst", 4), loadStream("x", x.size)
	n := loadGP("n")
	a := bcastArg("a")
	loop16(name, n, []stream{d, xs}, func(k reg.Register) {
		v, acc := ZMM(), ZMM()
		x.load(xs.mem(), k, v)
		loadF32.load(d.mem(), k, acc)
		VFMADD231PS(v, a, acc)
		storeF32(acc, k, d.mem())
	})
}

// genMadF16: acc[i] = f16(fma(x[i], a, acc[i])), acc and x half precision.
func genMadF16() {
	name := "madF16AVX512"
	TEXT(name, NOSPLIT, "func(acc *uint16, a float32, x *uint16, n int)")
	Doc(name + " computes acc[i] = f16(fma(x[i], a, acc[i])) on half-precision acc and x.")
	Pragma("noescape")
	c, xs := loadStream("acc", 2), loadStream("x", 2)
	n := loadGP("n")
	a := bcastArg("a")
	loop16(name, n, []stream{c, xs}, func(k reg.Register) {
		v, acc := ZMM(), ZMM()
		loadF16.load(xs.mem(), k, v)
		loadF16.load(c.mem(), k, acc)
		VFMADD231PS(v, a, acc)
		storeF16(acc, k, c.mem())
	})
}

// genScaleF16: acc[i] = f16(acc[i]·a).
func genScaleF16() {
	name := "scaleF16AVX512"
	TEXT(name, NOSPLIT, "func(acc *uint16, a float32, n int)")
	Doc(name + " computes acc[i] = f16(acc[i]·a) on a half-precision acc.")
	Pragma("noescape")
	c := loadStream("acc", 2)
	n := loadGP("n")
	a := bcastArg("a")
	loop16(name, n, []stream{c}, func(k reg.Register) {
		v := ZMM()
		loadF16.load(c.mem(), k, v)
		VMULPS(a, v, v)
		storeF16(v, k, c.mem())
	})
}

// genToF16: dst[i] = f16(x[i]) (nearest even), dst half precision.
func genToF16() {
	name := "toF16AVX512"
	TEXT(name, NOSPLIT, "func(dst *uint16, x *float32, n int)")
	Doc(name + " sets dst[i] = x[i] rounded to half precision (nearest even) for i < n.")
	Pragma("noescape")
	d, xs := loadStream("dst", 2), loadStream("x", 4)
	n := loadGP("n")
	loop16(name, n, []stream{d, xs}, func(k reg.Register) {
		v := ZMM()
		loadF32.load(xs.mem(), k, v)
		storeF16(v, k, d.mem())
	})
}

// genBinary: dst[i] op= x[i] (vector) or dst[i] *= a (scalar scaleF32).
func genBinary(name string, vector bool) {
	sig := "func(dst *float32, a float32, n int)"
	if vector {
		sig = "func(dst, x *float32, n int)"
	}
	TEXT(name, NOSPLIT, sig)
	Doc(fmt.Sprintf("%s is the elementwise %s.", name, map[string]string{
		"scaleF32AVX512": "dst[i] *= a", "addAVX512": "dst[i] += x[i]", "mulAVX512": "dst[i] *= x[i]"}[name]))
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
		a = bcastArg("a")
	}
	loop16(name, n, ss, func(k reg.Register) {
		v := ZMM()
		loadF32.load(d.mem(), k, v)
		switch name {
		case "scaleF32AVX512":
			VMULPS(a, v, v)
		case "addAVX512":
			u := ZMM()
			loadF32.load(xs.mem(), k, u)
			VADDPS(u, v, v)
		case "mulAVX512":
			u := ZMM()
			loadF32.load(xs.mem(), k, u)
			VMULPS(u, v, v)
		}
		storeF32(v, k, d.mem())
	})
}

// genRMSScale: dst[i] = (x[i]·scale)·w[i], RMSNorm's second pass.
func genRMSScale() {
	name := "rmsScaleAVX512"
	TEXT(name, NOSPLIT, "func(dst, x, w *float32, n int, scale float32)")
	Doc(name + " computes dst[i] = (x[i]·scale)·w[i].")
	Pragma("noescape")
	d, xs, ws := loadStream("dst", 4), loadStream("x", 4), loadStream("w", 4)
	n := loadGP("n")
	s := bcastArg("scale")
	loop16(name, n, []stream{d, xs, ws}, func(k reg.Register) {
		v, u := ZMM(), ZMM()
		loadF32.load(xs.mem(), k, v)
		loadF32.load(ws.mem(), k, u)
		VMULPS(s, v, v)
		VMULPS(u, v, v)
		storeF32(v, k, d.mem())
	})
}

// genDotLanes: Σ over n (a positive multiple of 64) of a[i]·b[i] in 64
// lanes (lane i mod 64, fused multiply-adds in increasing i), reduced by
// reduce64: lanes (0+2)+(1+3) register-wise, then reduce16.
func genDotLanes(name string, b elemLoad) {
	TEXT(name, NOSPLIT, "func(a *float32, b "+b.typ+", n int) float32")
	Doc(name + " returns reduce64 of the 64 fused lanes of a·b over n elements, n a positive multiple of 64.")
	Pragma("noescape")
	as, bs := loadStream("a", 4), loadStream("b", b.size)
	n := loadGP("n")
	SHRQ(U8(6), n)
	acc := make([]reg.VecVirtual, 4)
	for i := range acc {
		acc[i] = ZMM()
		zero(acc[i])
	}
	Label(name + "_loop")
	for i := range acc {
		x, y := ZMM(), ZMM()
		VMOVUPS(as.mem().Offset(64*i), x)
		b.load(bs.mem().Offset(16*b.size*i), nil, y)
		VFMADD231PS(y, x, acc[i])
	}
	ADDQ(U32(256), as.p)
	ADDQ(U32(64*b.size), bs.p)
	DECQ(n)
	JNZ(LabelRef(name + "_loop"))
	VADDPS(acc[2], acc[0], acc[0])
	VADDPS(acc[3], acc[1], acc[1])
	VADDPS(acc[1], acc[0], acc[0])
	Store(reduce16(acc[0]), ReturnIndex(0))
	VZEROUPPER()
	RET()
}

// genReduceLanes: out[d] = reduce64(lanes[k·hd+d], k = 0..63), 16 values
// of d at a time (the tail masked).
func genReduceLanes() {
	name := "reduceLanesAVX512"
	TEXT(name, NOSPLIT, "func(out, lanes *float32, hd int)")
	Doc(name + " sets out[d] to reduce64 of lanes[k·hd+d], k = 0..63, for d < hd.")
	Pragma("noescape")
	o, l := loadStream("out", 4), loadStream("lanes", 4)
	n := loadGP("hd")
	stride := GP64()
	MOVQ(n, stride)
	SHLQ(U8(2), stride) // bytes between lanes
	loop16(name, n, []stream{o, l}, func(k reg.Register) {
		p := GP64()
		r := make([]reg.VecVirtual, 16)
		for li := range 16 {
			// (L[li] + L[32+li]) + (L[16+li] + L[48+li])
			v := [4]reg.VecVirtual{ZMM(), ZMM(), ZMM(), ZMM()}
			for q, kk := range []int{li, 32 + li, 16 + li, 48 + li} {
				IMUL3Q(U32(kk), stride, p)
				ADDQ(l.p, p)
				loadF32.load(Mem{Base: p}, k, v[q])
			}
			VADDPS(v[1], v[0], v[0])
			VADDPS(v[3], v[2], v[2])
			VADDPS(v[2], v[0], v[0])
			r[li] = v[0]
		}
		for i := range 8 {
			VADDPS(r[i+8], r[i], r[i]) // h
		}
		for i := range 4 {
			VADDPS(r[i+4], r[i], r[i]) // q
		}
		VADDPS(r[2], r[0], r[0])
		VADDPS(r[3], r[1], r[1])
		VADDPS(r[1], r[0], r[0])
		storeF32(r[0], k, o.mem())
	})
}
