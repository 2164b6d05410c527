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
	genReadBW()
	genPeak("peakFMAAVX512", func(src, acc reg.VecVirtual) { VFMADD231PS(src, src, acc) })
	genPeak("peakDotAVX512", func(src, acc reg.VecVirtual) { vpdpbusd(src, src, acc) })
	genReadBWAVX2()
	genPeakAVX2("peakFMAAVX2", func(src, acc reg.VecVirtual) { VFMADD231PS(src, src, acc) })
	// AVX2 has no int8 dot product: the multiplying instruction of its
	// int8 kernels, VPMADDUBSW (32 byte pairs into int16 pair sums), is
	// the peak (an upper bound: the kernels also need its adds).
	genPeakAVX2("peakDotAVX2", func(src, acc reg.VecVirtual) { VPMADDUBSW(src, acc, acc) })
}

// genReadBWAVX2 is genReadBW with 32-byte loads (VEX, for CPUs without
// AVX-512).
func genReadBWAVX2() {
	TEXT("readBWAVX2", NOSPLIT, "func(p *byte, n int) uint64")
	Doc("readBWAVX2 returns the XOR of the 64-bit words of p[:n], n a positive multiple of 512: a memory read bandwidth probe (AVX2).")
	Pragma("noescape")
	p, n := loadGP("p"), loadGP("n")
	SHRQ(U8(9), n)
	acc := make([]reg.VecVirtual, 8)
	for i := range acc {
		acc[i] = YMM()
		VPXOR(acc[i], acc[i], acc[i])
	}
	Label("readbw2_loop")
	for i := range 16 {
		VPXOR(Mem{Base: p, Disp: 32 * i}, acc[i%8], acc[i%8])
	}
	ADDQ(U32(512), p)
	DECQ(n)
	JNZ(LabelRef("readbw2_loop"))
	for i := 1; i < 8; i++ {
		VPXOR(acc[i], acc[0], acc[0])
	}
	x := XMM()
	VEXTRACTI128(U8(1), acc[0], x)
	VPXOR(x, acc[0].AsX(), x)
	r := GP64()
	VPEXTRQ(U8(1), x, r)
	s := GP64()
	VMOVQ(x, s)
	XORQ(s, r)
	Store(r, ReturnIndex(0))
	VZEROUPPER()
	RET()
}

// genPeakAVX2 is genPeak on YMM registers: iters rounds of 32 256-bit
// instructions (the work of 16 512-bit ones) on 8 independent accumulators.
func genPeakAVX2(name string, op func(src, acc reg.VecVirtual)) {
	TEXT(name, NOSPLIT, "func(iters int) uint32")
	Doc(name + " runs iters rounds of 32 independent-enough 256-bit instructions (a throughput probe, AVX2).")
	n := loadGP("iters")
	src := YMM()
	VPBROADCASTD(constU32("peakSrc", 0x3f800001), src)
	acc := make([]reg.VecVirtual, 8)
	for i := range acc {
		acc[i] = YMM()
		VPXOR(acc[i], acc[i], acc[i])
	}
	Label(name + "_loop")
	for i := range 32 {
		op(src, acc[i%8])
	}
	DECQ(n)
	JNZ(LabelRef(name + "_loop"))
	for i := 1; i < len(acc); i++ {
		VPXOR(acc[i], acc[0], acc[0])
	}
	r := GP32()
	VMOVD(acc[0].AsX(), r)
	Store(r, ReturnIndex(0))
	VZEROUPPER()
	RET()
}

// genReadBW: XOR of every 64-bit word of p[:n] (n a positive multiple of
// 512), read with four independent 64-byte streams.
func genReadBW() {
	TEXT("readBWAVX512", NOSPLIT, "func(p *byte, n int) uint64")
	Doc("readBWAVX512 returns the XOR of the 64-bit words of p[:n], n a positive multiple of 512: a memory read bandwidth probe.")
	Pragma("noescape")
	p, n := loadGP("p"), loadGP("n")
	SHRQ(U8(9), n)
	acc := make([]reg.VecVirtual, 8)
	for i := range acc {
		acc[i] = ZMM()
		zero(acc[i])
	}
	Label("readbw_loop")
	for i := range 8 {
		VPXORQ(Mem{Base: p, Disp: 64 * i}, acc[i], acc[i])
	}
	ADDQ(U32(512), p)
	DECQ(n)
	JNZ(LabelRef("readbw_loop"))
	for i := 1; i < 8; i++ {
		VPXORQ(acc[i], acc[0], acc[0])
	}
	y := YMM()
	VEXTRACTI64X4(U8(1), acc[0], y)
	VPXORQ(y, acc[0].AsY(), y)
	x := XMM()
	VEXTRACTI32X4(U8(1), y, x)
	VPXORQ(x, y.AsX(), x)
	r := GP64()
	VPEXTRQ(U8(1), x, r)
	s := GP64()
	VMOVQ(x, s)
	XORQ(s, r)
	Store(r, ReturnIndex(0))
	VZEROUPPER()
	RET()
}

// genPeak: iters rounds of one instruction on each of 16 independent ZMM
// accumulators; returns lane 0 of their sum so the work is kept.
func genPeak(name string, op func(src, acc reg.VecVirtual)) {
	TEXT(name, NOSPLIT, "func(iters int) uint32")
	Doc(name + " runs iters rounds of 16 independent 512-bit instructions (a throughput probe).")
	n := loadGP("iters")
	src := ZMM()
	VPBROADCASTD(constU32("peakSrc", 0x3f800001), src)
	acc := make([]reg.VecVirtual, 16)
	for i := range acc {
		acc[i] = ZMM()
		zero(acc[i])
	}
	Label(name + "_loop")
	for _, a := range acc {
		op(src, a)
	}
	DECQ(n)
	JNZ(LabelRef(name + "_loop"))
	for i := 1; i < len(acc); i++ {
		VPXORD(acc[i], acc[0], acc[0])
	}
	r := GP32()
	VMOVD(acc[0].AsX(), r)
	Store(r, ReturnIndex(0))
	VZEROUPPER()
	RET()
}
