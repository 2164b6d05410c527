package main

import (
	"fmt"
	"math"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	"github.com/mmcloughlin/avo/reg"
)

// ggml's AVX-512 exp polynomial (ggml_v_expf) and what is built on it:
// SiLU, SwiGLU and softmax's exponentials, with the reduce16 summation.

// f32c returns a broadcastable constant holding v.
func f32c(name string, v float32) Mem {
	return constU32(name, math.Float32bits(v))
}

// labels makes unique label names within the current function.
var labels int

func newLabel(prefix string) string {
	labels++
	return fmt.Sprintf("%s_%d", prefix, labels)
}

// vexp emits ggml_v_expf on the 16 lanes of x (see the generic vexp).
func vexp(x reg.VecVirtual) reg.VecVirtual {
	shift := f32c("expShift", 0x1.8p23)
	z := ZMM()
	VBROADCASTSS(shift, z)
	VFMADD231PS_BCST(f32c("expLog2e", 0x1.715476p+0), x, z) // z = x·log2e + shift
	n := ZMM()
	VSUBPS_BCST(shift, z, n)
	b := ZMM()
	VMOVAPS(x, b)
	VFNMADD231PS_BCST(f32c("expLn2Hi", 0x1.62e4p-1), n, b) // b = x − n·ln2hi
	VFNMADD231PS_BCST(f32c("expLn2Lo", 0x1.7f7d1cp-20), n, b)
	u := ZMM()
	VMULPS(b, b, u)
	p1, p2, j := ZMM(), ZMM(), ZMM()
	VBROADCASTSS(f32c("expC4", 0x1.573e2ep-5), p1)
	VFMADD231PS_BCST(f32c("expC5", 0x1.0e4020p-7), b, p1) // c5·b + c4
	VBROADCASTSS(f32c("expC2", 0x1.fffdb6p-2), p2)
	VFMADD231PS_BCST(f32c("expC3", 0x1.555e66p-3), b, p2) // c3·b + c2
	VBROADCASTSS(f32c("one", 1), j)
	VFMADD231PS_BCST(f32c("expC1", 0x1.ffffecp-1), b, j) // c1·b + 1
	VFMADD231PS(p1, u, p2)                               // (c5·b+c4)·u + (c3·b+c2)
	VFMADD231PS(p2, u, j)                                // ·u + (c1·b+1)
	r := ZMM()
	VSCALEFPS(n, j, r) // j·2^n, rounded once
	// |n| > 192 saturates: +Inf for n > 0, else 0.
	an := ZMM()
	VANDPS_BCST(constU32("absMask", 0x7fffffff), n, an)
	big, pos := K(), K()
	VCMPPS_BCST(U8(0x1e), f32c("expLimit", 192), an, big) // |n| > 192 (ordered)
	done := newLabel("vexp_done")
	KORTESTW(big, big)
	JZ(LabelRef(done))
	z0 := ZMM()
	zero(z0)
	VCMPPS(U8(0x1e), z0, n, pos) // n > 0
	inf, nul := K(), K()
	KANDW(big, pos, inf)
	KANDNW(big, pos, nul) // big and not pos
	VBROADCASTSS(f32c("inf", float32(math.Inf(1))), inf, r)
	VMOVAPS(z0, nul, r)
	Label(done)
	return r
}

// vsilu returns x / (1 + vexp(0 − x)).
func vsilu(x reg.VecVirtual) reg.VecVirtual {
	nx := ZMM()
	zero(nx)
	VSUBPS(x, nx, nx)
	e := vexp(nx)
	VADDPS_BCST(f32c("one", 1), e, e)
	r := ZMM()
	VDIVPS(e, x, r)
	return r
}

// genSiLU: dst = vsilu(x) or vsilu(gate)·up over whole 16-element blocks.
func genSiLU(name string, glu bool) {
	sig := "func(dst, x *float32, n int)"
	if glu {
		sig = "func(dst, x, up *float32, n int)"
	}
	TEXT(name, NOSPLIT, sig)
	Doc(name + " computes ggml's vector SiLU (times up, for SwiGLU) on n/16 whole blocks.")
	Pragma("noescape")
	d, xs := loadStream("dst", 4), loadStream("x", 4)
	ss := []stream{d, xs}
	var us stream
	if glu {
		us = loadStream("up", 4)
		ss = append(ss, us)
	}
	n := loadGP("n")
	blocks(name, n, ss, func() {
		v := ZMM()
		VMOVUPS(xs.mem(), v)
		r := vsilu(v)
		if glu {
			VMULPS(us.mem(), r, r)
		}
		VMOVUPS(r, d.mem())
	})
	VZEROUPPER()
	RET()
}

// blocks runs body over n/16 whole blocks.
func blocks(name string, n reg.GPVirtual, ss []stream, body func()) {
	SHRQ(U8(4), n)
	JZ(LabelRef(name + "_end"))
	Label(name + "_block")
	body()
	for _, s := range ss {
		ADDQ(U32(16*s.size), s.p)
	}
	DECQ(n)
	JNZ(LabelRef(name + "_block"))
	Label(name + "_end")
}

// genSoftmaxExp: x[i] = vexp(x[i] − mx) over whole blocks; returns the
// float64 sum of the blocks' reduce16 sums, in order.
func genSoftmaxExp() {
	name := "softmaxExpAVX512"
	TEXT(name, NOSPLIT, "func(x *float32, n int, mx float32) float64")
	Doc(name + " replaces n/16 whole blocks of x by vexp(x−mx) and returns Σ float64(reduce16(block)).")
	Pragma("noescape")
	xs := loadStream("x", 4)
	n := loadGP("n")
	m := bcastArg("mx")
	sum := XMM()
	zero(sum)
	blocks(name, n, []stream{xs}, func() {
		v := ZMM()
		VMOVUPS(xs.mem(), v)
		VSUBPS(m, v, v) // x − mx
		e := vexp(v)
		VMOVUPS(e, xs.mem())
		s := reduce16(e)
		VCVTSS2SD(s, s, s)
		VADDSD(s, sum, sum)
	})
	Store(sum, ReturnIndex(0))
	VZEROUPPER()
	RET()
}

// reduce16 sums the 16 lanes of v as the generic reduce16: halves, then
// quarters, then (q0+q2)+(q1+q3). The result is lane 0 of the XMM.
func reduce16(v reg.VecVirtual) reg.VecVirtual {
	h := YMM()
	VEXTRACTF32X8(U8(1), v, h)
	VADDPS(h, v.AsY(), h) // h[i] = v[i] + v[i+8]
	q := XMM()
	VEXTRACTF32X4(U8(1), h, q)
	VADDPS(q, h.AsX(), q) // q[i] = h[i] + h[i+4]
	t := XMM()
	VPERMILPS(U8(0x4e), q, t)
	VADDPS(t, q, q) // q0+q2, q1+q3
	VPERMILPS(U8(0xb1), q, t)
	VADDPS(t, q, q)
	return q
}
