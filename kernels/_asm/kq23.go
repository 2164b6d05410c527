package main

import (
	"fmt"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	"github.com/mmcloughlin/avo/reg"
)

// GEMM kernels for Q2_K and Q3_K against Q8_K activations, in gemmk's
// layout (see gemmk.go): one weight row at a time, up to gemmKTile
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

type k23Type struct {
	name string
	size int
}

var k23Types = []k23Type{{"Q2_K", 84}, {"Q3_K", 110}}

func genKQ23() {
	for _, kt := range k23Types {
		for a := 1; a <= gemmKTile; a++ {
			g := &kq23{kt: kt, na: a}
			g.gen()
		}
	}
}

type kq23 struct {
	kt  k23Type
	na  int
	w   reg.GPVirtual
	act strided
	q   [4]reg.VecVirtual // unsigned quants of the four steps
	s   [4]reg.VecVirtual // their scales, [scale, 0] per dword
	c4  reg.VecVirtual    // Q3_K: bytes 4
	dw  reg.VecVirtual    // d (lane 0)
	dm  reg.VecVirtual    // Q2_K: dmin (lane 0)
	mn  reg.VecVirtual    // Q2_K: 16 mins as int16
	acc []reg.VecPhysical // (na) YMM float lanes
}

func (g *kq23) name() string { return fmt.Sprintf("gemm%s_%d", g.kt.name, g.na) }

func (g *kq23) gen() {
	TEXT(g.name(), NOSPLIT, "func(w *byte, rowBytes, rows int, act *byte, actStride int, nb int, dst *float32, dstStride int)")
	Doc(fmt.Sprintf("%s multiplies rows weight rows of type %s with %d activation rows of Q8_K records.", g.name(), g.kt.name, g.na))
	Pragma("noescape")
	r := GP64()
	XORQ(r, r)
	Label(g.name() + "_rows")
	g.w = GP64()
	rb := loadGP("rowBytes")
	IMULQ(r, rb)
	Load(Param("w"), g.w)
	ADDQ(rb, g.w)
	var pin pinned
	g.acc = nil
	for range g.na {
		g.acc = append(g.acc, pin.zero(1)[0])
	}
	g.act = loadStrided("act", "actStride", g.na, 1)
	cnt := loadGP("nb")
	if g.kt.name == "Q3_K" {
		g.c4 = ZMM()
		VPBROADCASTD(constU32("byte04", 0x04040404), g.c4)
	}
	Label(g.name() + "_blocks")
	PREFETCHT0(Mem{Base: g.w, Disp: prefetchAhead})
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
	rows := loadGP("rows")
	CMPQ(r, rows)
	JL(LabelRef(g.name() + "_rows"))
	VZEROUPPER()
	RET()
}

// f16At loads the half at byte disp of the block as float32 in lane 0.
func (g *kq23) f16At(disp int) reg.VecVirtual {
	h := GP32()
	MOVWLZX(Mem{Base: g.w, Disp: disp}, h)
	x := XMM()
	VMOVD(h, x)
	VCVTPH2PS(x, x)
	return x
}

func (g *kq23) loadWeights() {
	switch g.kt.name {
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

// lowBits sets q[c] to the 2-bit quants of step c: elements 128k+32j+l =
// (qs[32k+l] >> 2j) & 3 for the quants at byte off, ORing in hi[c] when set.
func (g *kq23) lowBits(off int, hi []reg.VecVirtual) {
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
func (g *kq23) q3High() []reg.VecVirtual {
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
func (g *kq23) q2Scales() {
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
	g.stepScales(scd)
}

// q3Scales unpacks the twelve scale bytes (96..107) as decodeQ3K: sixteen
// 6-bit values minus 32, signed.
func (g *kq23) q3Scales() {
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
	g.stepScales(scd)
}

// stepScales fills s[c] so that dword i of step c takes group 4c + i/4.
func (g *kq23) stepScales(scd reg.VecVirtual) {
	for c := range 4 {
		var vals []uint32
		for i := range 16 {
			vals = append(vals, uint32(4*c+i/4))
		}
		ix := ZMM()
		VMOVDQU32(constU32(fmt.Sprintf("permK16_%d", c), vals...), ix)
		g.s[c] = ZMM()
		VPERMD(scd, ix, g.s[c])
	}
}

// lanes returns the eight int32 lanes of activation row a's super-block.
func (g *kq23) lanes(a int) reg.VecVirtual {
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

func (g *kq23) accumulate(a int) {
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

// store writes hsum8(acc) of each activation row.
func (g *kq23) store(r reg.GPVirtual) {
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
		VMOVSS(t, dst.at(a, 0))
	}
}
