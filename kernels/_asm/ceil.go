package main

import (
	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	"github.com/mmcloughlin/avo/reg"
)

// Ceiling kernels for `pagoda bench ceilings`: memory read bandwidth and
// the peak rate of float32 FMA and int8 dot-product instructions, each with
// enough independent chains to hide the instructions' latency.

func genCeil() {
	for _, w := range []ceilWidth{zmmCeil, ymmCeil} {
		genReadBW(w)
	}
	genPeak(zmmCeil, "peakFMAAVX512", func(src, acc reg.VecVirtual) { VFMADD231PS(src, src, acc) })
	genPeak(zmmCeil, "peakDotAVX512", func(src, acc reg.VecVirtual) { vpdpbusd(src, src, acc) })
	genPeak(ymmCeil, "peakFMAAVX2", func(src, acc reg.VecVirtual) { VFMADD231PS(src, src, acc) })
	// AVX2 has no int8 dot product: the multiplying instruction of its
	// int8 kernels, VPMADDUBSW (32 byte pairs into int16 pair sums), is
	// the peak (an upper bound: the kernels also need its adds).
	genPeak(ymmCeil, "peakDotAVX2", func(src, acc reg.VecVirtual) { VPMADDUBSW(src, acc, acc) })
}

// ceilWidth is the register width the probes of one ISA use: AVX-512's
// ZMM (32 registers, EVEX) or AVX2's YMM (16 registers, VEX), with as many
// accumulators as fit and enough instructions per round that a round is
// 16 registers of 64 bytes either way.
type ceilWidth struct {
	isa   string
	bytes int
	acc   int
	vec   func() reg.VecVirtual
	zero  func(reg.VecVirtual)
	xor   func(a, b, dst Op)
}

var (
	zmmCeil = ceilWidth{"AVX512", 64, 16, ZMM, func(z reg.VecVirtual) { zero(z) }, func(a, b, d Op) { VPXORQ(a, b, d) }}
	ymmCeil = ceilWidth{"AVX2", 32, 8, YMM, func(y reg.VecVirtual) { VPXOR(y, y, y) }, func(a, b, d Op) { VPXOR(a, b, d) }}
)

// genReadBW: XOR of every 64-bit word of p[:n] (n a positive multiple of
// 512), read with 8 independent streams.
func genReadBW(w ceilWidth) {
	name := "readBW" + w.isa
	TEXT(name, NOSPLIT, "func(p *byte, n int) uint64")
	Doc(name + " returns the XOR of the 64-bit words of p[:n], n a positive multiple of 512: a memory read bandwidth probe.")
	Pragma("noescape")
	p, n := loadGP("p"), loadGP("n")
	SHRQ(U8(9), n)
	acc := make([]reg.VecVirtual, 8)
	for i := range acc {
		acc[i] = w.vec()
		w.zero(acc[i])
	}
	Label(name + "_loop")
	for i := range 512 / w.bytes {
		w.xor(Mem{Base: p, Disp: w.bytes * i}, acc[i%8], acc[i%8])
	}
	ADDQ(U32(512), p)
	DECQ(n)
	JNZ(LabelRef(name + "_loop"))
	for i := 1; i < 8; i++ {
		w.xor(acc[i], acc[0], acc[0])
	}
	y := acc[0]
	if w.bytes == 64 {
		y = YMM()
		VEXTRACTI64X4(U8(1), acc[0], y)
		VPXORQ(y, acc[0].AsY(), y)
	}
	x := XMM()
	VEXTRACTI128(U8(1), y, x)
	VPXOR(x, y.AsX(), x)
	r := GP64()
	VPEXTRQ(U8(1), x, r)
	s := GP64()
	VMOVQ(x, s)
	XORQ(s, r)
	Store(r, ReturnIndex(0))
	VZEROUPPER()
	RET()
}

// genPeak: iters rounds of the work of 16 512-bit instructions on w.acc
// independent accumulators; returns lane 0 of their XOR so the work is
// kept.
func genPeak(w ceilWidth, name string, op func(src, acc reg.VecVirtual)) {
	TEXT(name, NOSPLIT, "func(iters int) uint32")
	Doc(name + " runs iters rounds of the work of 16 independent 512-bit instructions (a throughput probe).")
	n := loadGP("iters")
	src := w.vec()
	VPBROADCASTD(constU32("peakSrc", 0x3f800001), src)
	acc := make([]reg.VecVirtual, w.acc)
	for i := range acc {
		acc[i] = w.vec()
		w.zero(acc[i])
	}
	Label(name + "_loop")
	for i := range 16 * 64 / w.bytes {
		op(src, acc[i%len(acc)])
	}
	DECQ(n)
	JNZ(LabelRef(name + "_loop"))
	for i := 1; i < len(acc); i++ {
		w.xor(acc[i], acc[0], acc[0])
	}
	r := GP32()
	VMOVD(acc[0].AsX(), r)
	Store(r, ReturnIndex(0))
	VZEROUPPER()
	RET()
}
