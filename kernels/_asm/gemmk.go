package main

import (
	"fmt"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	"github.com/mmcloughlin/avo/reg"
)

// GEMM kernels for the K-quants (Q4_K, Q5_K, Q6_K) against activations
// quantized to Q8_K, one weight row at a time and up to gemmKTile
// activation rows per call.
//
// The generic contract puts element e of a super-block in int32 lane
// (e mod 32)/4: exactly VPDPBUSD's grouping of four consecutive bytes. A
// ZMM holds 64 elements (two 32-element chunks) as bytes; per 64 elements
// and activation row,
//
//	t  = VPDPBUSD(0, q, y)        Σ of 4 products: |t| < 2¹⁵, so t's low word
//	L += VPDPWSSD(t, [scale, 0])  is t itself: L += scale·t, exact
//
// then the super-block's lanes are the two halves of L added (int32,
// exact), and the float work follows the generic order. Activation records
// (gemmKRec bytes per super-block) are prepared in Go:
//
//	0   qs   [256]int8
//	256 q8s  [8]int16    sums of 32 quants (pairs of bsums)
//	272 bs   [16]int16   sums of 16 quants (Q8_K's bsums)
//	304 d    float32
const (
	krecQS   = 0
	krecQ8S  = 256
	krecBS   = 272
	krecD    = 304
	gemmKRec = 308
	// gemmKTile is the widest activation tile.
	gemmKTile = 6
)

// kType describes a K-quant weight block.
type kType struct {
	name string
	size int // bytes per super-block
}

var kTypes = []kType{{"Q4_K", 144}, {"Q5_K", 176}, {"Q6_K", 210}}

func genGemmK() {
	for _, kt := range kTypes {
		for a := 1; a <= gemmKTile; a++ {
			g := &gemmk{kt: kt, na: a}
			g.gen()
		}
	}
}

// gemmk emits one kernel.
type gemmk struct {
	kt  kType
	na  int
	w   reg.GPVirtual // current super-block of the current row
	act strided
	q   [4]reg.VecVirtual // weight quants of the four 64-element steps
	s   [4]reg.VecVirtual // their scales, [scale, 0] per dword
	c4  reg.VecVirtual    // Q3_K: bytes 4
	dw  reg.VecVirtual    // d of the weight block (lane 0)
	dm  reg.VecVirtual    // dmin (lane 0), Q2_K, Q4_K and Q5_K
	mn  reg.VecVirtual    // 8 mins as int16 (Q4_K, Q5_K); 16 mins (Q2_K) or scales (Q6_K) as int16
	acc []reg.VecPhysical // (na) YMM float lanes
	am  []reg.VecPhysical // (na) Q4_K: 4 float lanes of minimum terms; Q5_K: lane 0
}

func (g *gemmk) name() string { return fmt.Sprintf("gemm%s_%d", g.kt.name, g.na) }

func (g *gemmk) gen() {
	TEXT(g.name(), NOSPLIT, rowKernelSig)
	Doc(fmt.Sprintf("%s multiplies rows weight rows of type %s with %d activation rows of Q8_K records.", g.name(), g.kt.name, g.na))
	Pragma("noescape")
	r := rowsLoop(g.name())
	g.w = rowPointer(r)
	var pin pinned
	g.acc, g.am = nil, nil
	for range g.na {
		g.acc = append(g.acc, pin.zero(1)[0])
		if g.kt.name == "Q4_K" || g.kt.name == "Q5_K" {
			g.am = append(g.am, pin.zero(1)[0])
		}
	}
	g.act = loadStrided("act", "actStride", g.na, 1)
	cnt := loadGP("nb")
	if g.kt.name == "Q3_K" {
		g.c4 = ZMM()
		VPBROADCASTD(constU32("byte04", 0x04040404), g.c4)
	}
	Label(g.name() + "_blocks")
	prefetchWeights(Mem{Base: g.w, Disp: prefetchAhead}, g.na)
	g.loadWeights()
	for a := range g.na {
		g.accumulate(a)
	}
	ADDQ(U32(g.kt.size), g.w)
	g.act.advance(gemmKRec)
	DECQ(cnt)
	JNZ(LabelRef(g.name() + "_blocks"))
	g.store(r)
	INCQ(r)
	loopRows(g.name(), r)
}

// f16At loads the half at byte disp of the block as float32 in lane 0.
func (g *gemmk) f16At(disp int) reg.VecVirtual {
	h := GP32()
	MOVWLZX(Mem{Base: g.w, Disp: disp}, h)
	x := XMM()
	VMOVD(h, x)
	VCVTPH2PS(x, x)
	return x
}

func (g *gemmk) loadWeights() {
	switch g.kt.name {
	case "Q4_K", "Q5_K":
		g.dw, g.dm = g.f16At(0), g.f16At(2)
		g.scales6()
		if g.kt.name == "Q4_K" {
			g.nibbles(16, nil)
		} else {
			g.nibbles(48, g.q5High())
		}
	case "Q6_K":
		g.dw = g.f16At(208)
		g.q6Weights()
		g.q6Scales()
	case "Q2_K":
		g.dw, g.dm = g.f16At(80), g.f16At(82)
		g.lowBits(16, nil)
		g.q2Scales()
	case "Q3_K":
		g.dw = g.f16At(108)
		g.lowBits(32, g.q3High())
		g.q3Scales()
	}
}

// scales6 unpacks the 6-bit scales and mins (bytes 4..15) as ggml's utmp:
// the step scale vectors from scales, and mn = mins as eight int16.
func (g *gemmk) scales6() {
	u0, u1, u2, u3, t := GP32(), GP32(), GP32(), GP32(), GP32()
	MOVL(Mem{Base: g.w, Disp: 4}, u0)
	MOVL(Mem{Base: g.w, Disp: 8}, u1)
	MOVL(Mem{Base: g.w, Disp: 12}, u2)
	// u3 = ((u2 >> 4) & 0x0f0f0f0f) | (((u1 >> 6) & 0x03030303) << 4)
	MOVL(u2, u3)
	SHRL(U8(4), u3)
	ANDL(U32(0x0f0f0f0f), u3)
	MOVL(u1, t)
	SHRL(U8(6), t)
	ANDL(U32(0x03030303), t)
	SHLL(U8(4), t)
	ORL(t, u3)
	// mins low = u1 & 0x3f3f3f3f; u1 = (u2 & 0x0f0f0f0f) | (((u0 >> 6) & 0x03030303) << 4)
	m := GP32()
	MOVL(u1, m)
	ANDL(U32(0x3f3f3f3f), m)
	ANDL(U32(0x0f0f0f0f), u2)
	MOVL(u0, t)
	SHRL(U8(6), t)
	ANDL(U32(0x03030303), t)
	SHLL(U8(4), t)
	ORL(t, u2)
	ANDL(U32(0x3f3f3f3f), u0)
	sc, mn := XMM(), XMM()
	VMOVD(u0, sc)
	VPINSRD(U8(1), u2, sc, sc) // scales 0..7 as bytes
	VMOVD(m, mn)
	VPINSRD(U8(1), u3, mn, mn) // mins 0..7 as bytes
	g.mn = XMM()
	VPMOVZXBW(mn, g.mn)
	scd := ZMM()
	VPMOVZXBD(sc, scd.AsY()) // [scale, 0] dwords
	g.stepScales(scd, "permK32", func(c, i int) uint32 { return uint32(2*c + i/8) })
}

// stepScales fills g.s[c] = scd permuted so dword i of step c takes scale
// idx(c, i).
func (g *gemmk) stepScales(scd reg.VecVirtual, table string, idx func(c, i int) uint32) {
	for c := range 4 {
		var vals []uint32
		for i := range 16 {
			vals = append(vals, idx(c, i))
		}
		ix := ZMM()
		VMOVDQU32(constU32(fmt.Sprintf("%s_%d", table, c), vals...), ix)
		g.s[c] = ZMM()
		VPERMD(scd, ix, g.s[c])
	}
}

// nibbles sets q[c] = [low nibbles of qs[32c..32c+31], high nibbles] for
// the quants at byte off, ORing in hi[c] (Q5_K's fifth bits) when set.
func (g *gemmk) nibbles(off int, hi []reg.VecVirtual) {
	mask := constU32("nib0F", 0x0F0F0F0F)
	for c := range 4 {
		lo, h := YMM(), YMM()
		VMOVDQU(Mem{Base: g.w, Disp: off + 32*c}, lo)
		VPSRLW(U8(4), lo, h)
		g.q[c] = ZMM()
		VINSERTI64X4(U8(1), h, lo.AsZ(), g.q[c])
		VPANDD_BCST(mask, g.q[c], g.q[c])
		if hi != nil {
			VPORD(hi[c], g.q[c], g.q[c])
		}
	}
}

// q5High returns, per step c, 16 where bit 2c (low half) or 2c+1 (high
// half) of qh[l] is set: Q5_K's fifth bits, already shifted.
func (g *gemmk) q5High() []reg.VecVirtual {
	qh, h := YMM(), YMM()
	VMOVDQU(Mem{Base: g.w, Disp: 16}, qh)
	VPSRLW(U8(1), qh, h)
	both := ZMM()
	VINSERTI64X4(U8(1), h, qh.AsZ(), both) // bit 2c: low half; bit 2c+1 → 2c in the high half
	out := make([]reg.VecVirtual, 4)
	for c := range 4 {
		out[c] = ZMM()
		if c == 0 {
			VPSLLW(U8(4), both, out[c])
		} else if 2*c < 4 {
			VPSLLW(U8(4-2*c), both, out[c])
		} else {
			VPSRLW(U8(2*c-4), both, out[c])
		}
		VPANDD_BCST(constU32("byte10", 0x10101010), out[c], out[c])
	}
	return out
}

// q6Weights sets q[c] for Q6_K's unsigned 6-bit quants: in half h, step
// 2h is [ql_a&15 | (qh&3)<<4, ql_b&15 | (qh>>2&3)<<4] and step 2h+1 the
// high nibbles with qh>>4 and qh>>6, where ql_a, ql_b = ql[64h..], ql[64h+32..]
// and qh = qh[32h..].
func (g *gemmk) q6Weights() {
	m0F, m03 := constU32("nib0F", 0x0F0F0F0F), constU32("byte03", 0x03030303)
	for h := range 2 {
		ql := ZMM()
		VMOVDQU64(Mem{Base: g.w, Disp: 64 * h}, ql)
		qh, t := YMM(), YMM()
		VMOVDQU(Mem{Base: g.w, Disp: 128 + 32*h}, qh)
		VPSRLW(U8(2), qh, t)
		QH := ZMM()
		VINSERTI64X4(U8(1), t, qh.AsZ(), QH) // [qh, qh>>2]
		for k := range 2 {
			lo, hb := ZMM(), ZMM()
			if k == 0 {
				VPANDD_BCST(m0F, ql, lo)
				VPANDD_BCST(m03, QH, hb)
			} else {
				VPSRLW(U8(4), ql, lo)
				VPANDD_BCST(m0F, lo, lo)
				VPSRLW(U8(4), QH, hb)
				VPANDD_BCST(m03, hb, hb)
			}
			VPSLLW(U8(4), hb, hb)
			VPORD(hb, lo, lo)
			g.q[2*h+k] = lo
		}
	}
}

// q6Scales: sixteen int8 scales; step c's dword i takes group 4c + i/4.
// g.mn keeps them as int16 for the −32 correction.
func (g *gemmk) q6Scales() {
	b := XMM()
	VMOVDQU(Mem{Base: g.w, Disp: 192}, b)
	g.mn = YMM()
	VPMOVSXBW(b, g.mn)
	scd := ZMM()
	VPMOVZXWD(g.mn, scd) // [scale, 0]
	g.stepScales(scd, "permK16", func(c, i int) uint32 { return uint32(4*c + i/4) })
}

// lanes returns the eight int32 lanes of activation row a's super-block.
func (g *gemmk) lanes(a int) reg.VecVirtual {
	l := ZMM()
	zero(l)
	for c := range 4 {
		t := ZMM()
		zero(t)
		vpdpbusd(g.act.at(a, krecQS+64*c), g.q[c], t)
		if g.kt.name == "Q3_K" {
			u := ZMM()
			zero(u)
			vpdpbusd(g.act.at(a, krecQS+64*c), g.c4, u)
			VPSUBD(u, t, t)
		}
		vpdpwssd(g.s[c], t, l)
	}
	y := YMM()
	VEXTRACTI64X4(U8(1), l, y)
	VPADDD(y, l.AsY(), y)
	return y
}

func (g *gemmk) accumulate(a int) {
	if g.kt.name == "Q2_K" || g.kt.name == "Q3_K" {
		g.accumulate23(a)
		return
	}
	y := g.lanes(a)
	if g.kt.name == "Q6_K" {
		// lanes[m] −= 32·(bs[2m]·sc[2m] + bs[2m+1]·sc[2m+1])
		c := YMM()
		VPMADDWD(g.act.at(a, krecBS), g.mn, c)
		VPSLLD(U8(5), c, c)
		VPSUBD(c, y, y)
	}
	VCVTDQ2PS(y, y)
	da := XMM()
	VMOVSS(g.act.at(a, krecD), da)
	d := YMM()
	VMULSS(da, g.dw, d.AsX()) // f16(dw)·da
	VBROADCASTSS(d.AsX(), d)
	VFMADD231PS(y, d, g.acc[a].AsY())
	switch g.kt.name {
	case "Q4_K":
		// am[m] = fma(−(da·dmin), mn[2m]·q8s[2m] + mn[2m+1]·q8s[2m+1], am[m])
		p := XMM()
		VPMADDWD(g.act.at(a, krecQ8S), g.mn, p)
		VCVTDQ2PS(p, p)
		VMULSS(g.dm, da, da) // da·dmin
		VBROADCASTSS(da, da)
		VFNMADD231PS(p, da, g.am[a].AsX())
	case "Q5_K":
		p := XMM()
		VPMADDWD(g.act.at(a, krecQ8S), g.mn, p)
		hsumI32(p)
		VCVTDQ2PS(p, p)
		VMULSS(g.dm, da, da)
		VFNMADD231SS(p, da, g.am[a].AsX())
	}
}

// hsumI32 leaves the sum of the four int32 lanes of x in lane 0 (exact).
func hsumI32(x reg.VecVirtual) {
	t := XMM()
	VPSHUFD(U8(0x4e), x, t)
	VPADDD(t, x, x)
	VPSHUFD(U8(0xb1), x, t)
	VPADDD(t, x, x)
}

// store writes hsum8(acc) (+ the minimum terms) of each activation row.
func (g *gemmk) store(r reg.GPVirtual) {
	dst := loadStrided("dst", "dstStride", g.na, 4)
	LEAQ(Mem{Base: dst.base, Index: r, Scale: 4}, dst.base)
	if dst.base4 != nil {
		LEAQ(Mem{Base: dst.base4, Index: r, Scale: 4}, dst.base4)
	}
	for a := range g.na {
		t, u := XMM(), XMM()
		VEXTRACTF32X4(U8(1), g.acc[a].AsY(), t)
		VADDPS(t, g.acc[a].AsX(), t)
		VPERMILPS(U8(0x4e), t, u)
		VADDPS(u, t, t)
		VPERMILPS(U8(0xb1), t, u)
		VADDPS(u, t, t)
		switch g.kt.name {
		case "Q4_K": // + ((m0+m2)+(m1+m3))
			m, v := XMM(), XMM()
			VPERMILPS(U8(0x4e), g.am[a].AsX(), m)
			VADDPS(m, g.am[a].AsX(), m)
			VPERMILPS(U8(0xb1), m, v)
			VADDPS(v, m, m)
			VADDSS(m, t, t)
		case "Q5_K":
			VADDSS(g.am[a].AsX(), t, t)
		}
		VMOVSS(t, dst.at(a, 0))
	}
}
