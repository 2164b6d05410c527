package main

import (
	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	"github.com/mmcloughlin/avo/reg"
)

// GEMM kernels for Q2_K and Q3_K against Q8_K activations: gemmk kernels
// (see gemmk.go) with the loaders below, one weight row at a time, up to gemmKTile
// activation rows per call, a ZMM holding 64 elements (steps c = 0..3) as
// unsigned bytes, element e in int32 lane (e mod 32)/4 as VPDPBUSD groups
// them. Both types have sixteen 16-element groups: dword i of step c takes
// the scale of group 4c + i/4. Per step and activation row,
//
//	t  = VPDPBUSD(0, q, y)            Q2_K: q = 0..3
//	t  = VPDPBUSD(0, q+4, y) − 4·Σy   Q3_K: q+4 = low bits | hmask bit<<2
//	L += VPDPWSSD(t, [scale, 0])      |t| < 2¹⁵: L += scale·t, exact
//
// (4·Σy is VPDPBUSD of the bytes 4 with y.) The float work follows the
// generic order: Q2_K adds fma(−(da·dmin), mn[2m]·bs[2m] + mn[2m+1]·bs[2m+1],
// acc[m]) first, then both add fma(dw·da, lanes, acc); dst = hsum8(acc).

var k23Types = []kType{{"Q2_K", 84}, {"Q3_K", 110}}

func genKQ23() {
	for _, kt := range k23Types {
		for a := 1; a <= gemmKTile; a++ {
			g := &gemmk{kt: kt, na: a}
			g.gen()
		}
	}
}

// lowBits sets q[c] to the 2-bit quants of step c: elements 128k+32j+l =
// (qs[32k+l] >> 2j) & 3 for the quants at byte off, ORing in hi[c] when set.
func (g *gemmk) lowBits(off int, hi []reg.VecVirtual) {
	m03 := constU32("byte03", 0x03030303)
	for k := range 2 {
		v, t := YMM(), YMM()
		VMOVDQU(Mem{Base: g.w, Disp: off + 32*k}, v)
		VPSRLW(U8(2), v, t)
		both := ZMM()
		VINSERTI64X4(U8(1), t, v.AsZ(), both) // [v, v>>2]: j = 0, 1
		for h := range 2 {                    // step 2k+h: j = 2h, 2h+1
			c := 2*k + h
			g.q[c] = ZMM()
			if h == 0 {
				VPANDD_BCST(m03, both, g.q[c])
			} else {
				VPSRLW(U8(4), both, g.q[c])
				VPANDD_BCST(m03, g.q[c], g.q[c])
			}
			if hi != nil {
				VPORD(hi[c], g.q[c], g.q[c])
			}
		}
	}
}

// q3High returns, per step c, 4 where bit 2c (first half) or 2c+1 (second
// half) of hmask[l] is set.
func (g *gemmk) q3High() []reg.VecVirtual {
	hm, h := YMM(), YMM()
	VMOVDQU(Mem{Base: g.w}, hm)
	VPSRLW(U8(1), hm, h)
	both := ZMM()
	VINSERTI64X4(U8(1), h, hm.AsZ(), both)
	out := make([]reg.VecVirtual, 4)
	for c := range 4 {
		out[c] = ZMM()
		switch { // bit 2c to bit 2
		case c == 0:
			VPSLLW(U8(2), both, out[c])
		case c == 1:
			VMOVDQA64(both, out[c])
		default:
			VPSRLW(U8(2*c-2), both, out[c])
		}
		VPANDD_BCST(constU32("byte04", 0x04040404), out[c], out[c])
	}
	return out
}

// q2Scales: bytes 0..15 hold scale (low nibble) and min (high nibble) of
// the sixteen groups.
func (g *gemmk) q2Scales() {
	b, lo := XMM(), XMM()
	VMOVDQU(Mem{Base: g.w}, b)
	m0F := constU32("nib0F", 0x0F0F0F0F)
	VPANDD_BCST(m0F, b, lo)
	VPSRLW(U8(4), b, b)
	VPANDD_BCST(m0F, b, b)
	g.mn = YMM()
	VPMOVZXBW(b, g.mn)
	scd := ZMM()
	VPMOVZXBD(lo, scd) // [scale, 0]
	g.stepScales(scd, "permK16", func(c, i int) uint32 { return uint32(4*c + i/4) })
}

// q3Scales unpacks the twelve scale bytes (96..107) as decodeQ3K: sixteen
// 6-bit values minus 32, signed.
func (g *gemmk) q3Scales() {
	a0, a1, tmp, t, u := GP32(), GP32(), GP32(), GP32(), GP32()
	MOVL(Mem{Base: g.w, Disp: 96}, a0)
	MOVL(Mem{Base: g.w, Disp: 100}, a1)
	MOVL(Mem{Base: g.w, Disp: 104}, tmp)
	x := XMM()
	// aux0 = a0&m2 | (tmp&m1)<<4
	MOVL(a0, t)
	ANDL(U32(0x0f0f0f0f), t)
	MOVL(tmp, u)
	ANDL(U32(0x03030303), u)
	SHLL(U8(4), u)
	ORL(u, t)
	VMOVD(t, x)
	// aux1 = a1&m2 | (tmp>>2&m1)<<4
	MOVL(a1, t)
	ANDL(U32(0x0f0f0f0f), t)
	MOVL(tmp, u)
	SHRL(U8(2), u)
	ANDL(U32(0x03030303), u)
	SHLL(U8(4), u)
	ORL(u, t)
	VPINSRD(U8(1), t, x, x)
	// aux2 = a0>>4&m2 | (tmp>>4&m1)<<4
	SHRL(U8(4), a0)
	ANDL(U32(0x0f0f0f0f), a0)
	MOVL(tmp, u)
	SHRL(U8(4), u)
	ANDL(U32(0x03030303), u)
	SHLL(U8(4), u)
	ORL(u, a0)
	VPINSRD(U8(2), a0, x, x)
	// aux3 = a1>>4&m2 | (tmp>>6&m1)<<4
	SHRL(U8(4), a1)
	ANDL(U32(0x0f0f0f0f), a1)
	SHRL(U8(6), tmp)
	ANDL(U32(0x03030303), tmp)
	SHLL(U8(4), tmp)
	ORL(tmp, a1)
	VPINSRD(U8(3), a1, x, x)
	VPSUBB(constU32("byte20", 0x20202020, 0x20202020, 0x20202020, 0x20202020), x, x)
	w := YMM()
	VPMOVSXBW(x, w)
	scd := ZMM()
	VPMOVZXWD(w, scd) // [scale, 0]
	g.stepScales(scd, "permK16", func(c, i int) uint32 { return uint32(4*c + i/4) })
}

// accumulate23 is accumulate for Q2_K and Q3_K.
func (g *gemmk) accumulate23(a int) {
	da := XMM()
	VMOVSS(g.act.at(a, krecD), da)
	if g.kt.name == "Q2_K" {
		// acc[m] = fma(−(da·dmin), mn[2m]·bs[2m] + mn[2m+1]·bs[2m+1], acc[m])
		p := YMM()
		VPMADDWD(g.act.at(a, krecBS), g.mn, p)
		VCVTDQ2PS(p, p)
		dm := YMM()
		VMULSS(g.dm, da, dm.AsX()) // da·dmin
		VBROADCASTSS(dm.AsX(), dm)
		VFNMADD231PS(p, dm, g.acc[a].AsY())
	}
	y := g.lanes(a)
	VCVTDQ2PS(y, y)
	d := YMM()
	VMULSS(da, g.dw, d.AsX()) // f16(dw)·da
	VBROADCASTSS(d.AsX(), d)
	VFMADD231PS(y, d, g.acc[a].AsY())
}
