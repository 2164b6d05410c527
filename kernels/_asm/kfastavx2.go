package main

import (
	"fmt"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	"github.com/mmcloughlin/avo/reg"
)

// The fast K-quant kernels for AVX2 (VEX, 16 YMM registers): kfast's
// layouts, records and float work (see kfast.go), a 16-row group taken as
// two halves of 8 rows (one YMM lane per row; the half's bytes of every
// quad and per-row array sit at a fixed offset, indexed by a register).
// Without VNNI the products are VPMADDUBSW pairs (quants unsigned, the
// broadcast activation quants signed) summed in int16 over as many quads
// as stay exact, then VPMADDWD by the group's scale in both words of each
// row's dword, which adds scale·(both words) to the int32 sum exactly:
//
//	Q4_K: 8 quads (|Σ| ≤ 8·2·15·127 < 2¹⁵); Q5_K: 4 (4·2·31·127);
//	Q6_K: 2 (2·2·63·127); Q2_K, Q3_K: 4 (4·2·7·127)
//
// Q6_K's and Q3_K's offsets are subtracted once per super-block as
// 32·Σ_g sc_g·bsum_g (4· for Q3_K), from VPMADDWD of the scale pairs by the
// bsum pairs; every sum is exact, so the results are the AVX-512 kernels'
// bit for bit.
const kfTileAVX2 = 3

// kfTypesAVX2: the AVX2 kernels prefetch at every width (not measured
// without).
var kfTypesAVX2 = []kfType{
	{"Q4_K", 2304, func(g *kfast) { (*kf2)(g).q45(false) }, 1, 0},
	{"Q5_K", 2816, func(g *kfast) { (*kf2)(g).q45(true) }, 1, 0},
	{"Q6_K", 3360, func(g *kfast) { (*kf2)(g).q6() }, 1, 0},
	{"Q2_K", 1344, func(g *kfast) { (*kf2)(g).q23(false) }, 1, 0},
	{"Q3_K", 1824, func(g *kfast) { (*kf2)(g).q23(true) }, 1, 0},
}

func genKFastAVX2() {
	for _, kt := range kfTypesAVX2 {
		for a := 1; a <= kfTileAVX2; a++ {
			(*kf2)(&kfast{kt: kt, na: a}).gen()
		}
	}
}

// kf2 is kfast's state in an AVX2 kernel (fields half, acc2, sum2).
type kf2 kfast

func (g *kf2) name() string { return fmt.Sprintf("kfast%s_avx2_%d", g.kt.name, g.na) }

// at returns the half's element of a per-row array at byte off of the
// group-block whose rows are unit bytes apart (quads: 4, f16 and pairs:
// 2, bytes: 1): base + off + unit·8·half.
func (g *kf2) at(off, unit int) Mem {
	return Mem{Base: g.w, Index: g.half, Scale: uint8(unit), Disp: off}
}

func (g *kf2) gen() {
	name := g.name()
	r, group := groupKernel(name, fmt.Sprintf("%s multiplies rows fast-layout %s weight rows (groups of %d, groupBytes apart) with %d activation rows of records (AVX2).",
		name, g.kt.name, kfRows, g.na))
	g.half = GP64()
	XORQ(g.half, g.half)
	Label(name + "_rows")
	g.acc2 = make([]reg.VecVirtual, g.na)
	for a := range g.acc2 {
		g.acc2[a] = YMM()
		VXORPS(g.acc2[a], g.acc2[a], g.acc2[a])
	}
	g.act = loadStrided("act", "actStride", g.na, 1)
	g.w = GP64()
	MOVQ(group, g.w)
	cnt := loadGP("nb")
	Label(name + "_blocks")
	for d := 0; d < g.kt.block; d += 128 {
		prefetchWeights(Mem{Base: g.w, Disp: prefetchAhead + d}, g.na)
	}
	g.kt.body((*kfast)(g))
	ADDQ(U32(g.kt.block), g.w)
	g.act.advance(kfRec)
	DECQ(cnt)
	JNZ(LabelRef(name + "_blocks"))
	dst := loadStrided("dst", "dstStride", g.na, 4)
	LEAQ(Mem{Base: dst.base, Index: r, Scale: 4}, dst.base)
	for a := range g.na {
		VMOVUPS(g.acc2[a], dst.at(a, 0))
	}
	// Next half; after the second, the next group.
	ADDQ(U8(8), r)
	XORQ(U8(8), g.half)
	JNZ(LabelRef(name + "_next"))
	gb := loadGP("groupBytes")
	ADDQ(gb, group)
	Label(name + "_next")
	loopRows(name, r)
}

// bcast returns activation row a's 4 bytes at record byte off, in every
// dword.
func (g *kf2) bcast(a, off int) reg.VecVirtual {
	y := YMM()
	VPBROADCASTD(g.act.at(a, off), y)
	return y
}

// madd adds VPMADDUBSW(q, bcast(a, off)) to the int16 pairs t[a] (setting
// them when first).
func (g *kf2) madd(q reg.VecVirtual, off int, t []reg.VecVirtual, first bool) {
	for a := range g.na {
		y := g.bcast(a, off)
		if first {
			t[a] = YMM()
			VPMADDUBSW(y, q, t[a])
			continue
		}
		VPMADDUBSW(y, q, y)
		VPADDW(y, t[a], t[a])
	}
}

// scale adds VPMADDWD(t, scw) to the integer sums (the first sets them):
// scw holds a row's scale in both words of its dword.
func (g *kf2) scale(scw reg.VecVirtual, t []reg.VecVirtual) {
	for a := range g.na {
		VPMADDWD(scw, t[a], t[a])
		if g.sum2[a] == nil {
			g.sum2[a] = t[a]
			continue
		}
		VPADDD(t[a], g.sum2[a], g.sum2[a])
	}
}

// dupWords returns d (one scale per dword, its low word the scale) with
// the low word copied into the high one.
func dupWords(d reg.VecVirtual) reg.VecVirtual {
	s := YMM()
	VPSLLD(U8(16), d, s)
	VPBLENDW(U8(0xAA), s, d, d)
	return d
}

// scalesI8 returns the signed byte scales at off (one per row) as scale
// words.
func (g *kf2) scalesI8(off int) reg.VecVirtual {
	d := YMM()
	VPMOVSXBD(g.at(off, 1), d)
	return dupWords(d)
}

// mask returns the byte mask v in every byte of a YMM.
func mask(name string, v uint32) reg.VecVirtual {
	m := YMM()
	VPBROADCASTD(constU32(name, v), m)
	return m
}

// bits returns (lo & mlo) | (hi & mhi), in lo (VEX has no ternary logic):
// a quant's low bits with its high bits, both shifted into place.
func bits(lo, mlo, hi, mhi reg.VecVirtual) reg.VecVirtual {
	VPAND(mlo, lo, lo)
	VPAND(mhi, hi, hi)
	VPOR(hi, lo, lo)
	return lo
}

// shiftedY returns v shifted left by s bits (right by −s) in words.
func shiftedY(v reg.VecVirtual, s int) reg.VecVirtual {
	out := YMM()
	switch {
	case s > 0:
		VPSLLW(U8(s), v, out)
	case s < 0:
		VPSRLW(U8(-s), v, out)
	default:
		VMOVDQA(v, out)
	}
	return out
}

// quadY loads the half's 32 bytes of the quad at off.
func (g *kf2) quadY(off int) reg.VecVirtual {
	v := YMM()
	VMOVDQU(g.at(off, 4), v)
	return v
}

// q45: per sub-block s = 2c+h (h: low or high nibbles of chunk c), the
// int16 sums over 8 quads (Q5_K: two runs of 4), then the scale. The
// scales are unpacked from the file's packing once per super-block
// (scales6), the minimums at its end (mins6), each then spread to its
// rows' words by one VPSHUFB (spread).
func (g *kf2) q45(fifth bool) {
	qs := 256
	if fifth {
		qs = 768
	}
	g.sum2 = make([]reg.VecVirtual, g.na)
	m0F := mask("kf0F", 0x0F0F0F0F)
	sc := g.scales6(m0F)
	run := 8
	if fifth {
		run = 4
	}
	for s := range 8 {
		c, h := s/2, s%2
		// scale s: element h of pair c%2 of sc[c/2]
		scw := spread(sc[c/2], c%2, h, h)
		for k0 := 0; k0 < 8; k0 += run {
			t := make([]reg.VecVirtual, g.na)
			for k := k0; k < k0+run; k++ {
				q := g.quadY(qs + 64*(8*c+k))
				if h == 1 {
					VPSRLW(U8(4), q, q)
				}
				if fifth {
					q = bits(q, m0F, shiftedY(g.quadY(256+64*k), 4-2*c-h), mask("kf10", 0x10101010))
				} else {
					VPAND(m0F, q, q)
				}
				g.madd(q, 64*c+32*h+4*k, t, k == k0)
			}
			g.scale(scw, t)
		}
	}
	mn := g.mins6(m0F)
	msum := make([]reg.VecVirtual, g.na)
	for i := range 4 {
		// minimums 2i, 2i+1: pair i%2 of mn[i/2]
		g.pairs(spread(mn[i/2], i%2, 0, 1), kfRecQ8S+4*i, msum)
	}
	g.finish2(0, 32, msum)
}

// sm returns vector v (q[4v..4v+3] of every row) of the half's packed
// scales and minimums (kernels/kfast_layout.go), its two pairs' 16 bytes
// (8 rows, 2 bytes each) mixed by quadwords: lane 0 holds rows 0–3 of
// pair 0 then of pair 1, lane 1 rows 4–7 likewise, so that row r's
// element e of pair p is byte 8p+2(r%4)+e of its row's lane, where one
// in-lane VPSHUFB (spread) can move it to the row's dword.
func (g *kf2) sm(v int) reg.VecVirtual {
	p0, p1 := YMM(), YMM()
	VBROADCASTI128(g.at(64+64*v, 2), p0)
	VBROADCASTI128(g.at(96+64*v, 2), p1)
	// quadwords: p0's low, p1's low | p0's high, p1's high
	VSHUFPD(U8(0b1100), p1, p0, p0)
	return p0
}

// scales6 unpacks the half's 6-bit scales from sm's vectors A (q[0..3])
// and C (q[8..11]): A & 0x3F is scales 0–3 (pair p: 2p, 2p+1),
// C & 0x0F | (A & 0xC0) >> 2 scales 4–7 (unpack6).
func (g *kf2) scales6(m0F reg.VecVirtual) [2]reg.VecVirtual {
	return unpack6Y(g.sm(0), g.sm(2), 0, m0F)
}

// mins6 unpacks the half's 6-bit minimums as scales6 the scales, from
// B (q[4..7]) and C: B & 0x3F is minimums 0–3, (C >> 4) & 0x0F |
// (B & 0xC0) >> 2 minimums 4–7.
func (g *kf2) mins6(m0F reg.VecVirtual) [2]reg.VecVirtual {
	return unpack6Y(g.sm(1), g.sm(2), 4, m0F)
}

// unpack6Y is kfast.unpack6 on YMM vectors (VEX has no ternary logic):
// x & 0x3F and (c >> shift) & 0x0F | (x & 0xC0) >> 2, bytewise. The word
// shift of x moves its top two bits, alone after the mask, to bits 4, 5
// of the same byte; the mask after c's drops the bits of the byte above.
func unpack6Y(x, c reg.VecVirtual, shift int, m0F reg.VecVirtual) [2]reg.VecVirtual {
	m3F := mask("kf3F", 0x3F3F3F3F)
	lo := YMM()
	VPAND(m3F, x, lo)
	VPANDN(x, m3F, x) // x & 0xC0
	VPSRLW(U8(2), x, x)
	if shift > 0 {
		VPSRLW(U8(shift), c, c)
	}
	VPAND(m0F, c, c)
	VPOR(x, c, c)
	return [2]reg.VecVirtual{lo, c}
}

// spread returns elements lo and hi of pair p of every row of the sm
// vector v zero-extended to the low and high words of the row's dword:
// spread(v, p, e, e) scale words, spread(v, p, 0, 1) a minimum pair.
func spread(v reg.VecVirtual, p, lo, hi int) reg.VecVirtual {
	var ctl [8]uint32
	for r := range ctl {
		b := uint32(8*p + 2*(r%4)) // the row's pair in its lane
		ctl[r] = b + uint32(lo) | 0x80<<8 | (b+uint32(hi))<<16 | 0x80<<24
	}
	out := YMM()
	VPSHUFB(constU32(fmt.Sprintf("kf2spread%d%d%d", p, lo, hi), ctl[:]...), v, out)
	return out
}

// pairs adds VPMADDWD(pw, broadcast int16 pair at record byte off) to
// sums (setting them when nil).
func (g *kf2) pairs(pw reg.VecVirtual, off int, sums []reg.VecVirtual) {
	for a := range g.na {
		y := g.bcast(a, off)
		VPMADDWD(pw, y, y)
		if sums[a] == nil {
			sums[a] = y
			continue
		}
		VPADDD(y, sums[a], sums[a])
	}
}

// offsets subtracts (Σ_g sc_g·bsum_g) << shift from the integer sums,
// the signed byte scales at 32 ([16][16]i8) taken in pairs.
func (g *kf2) offsets(shift int) {
	o := make([]reg.VecVirtual, g.na)
	for i := range 8 {
		a, b := XMM(), XMM()
		VMOVQ(g.at(32+32*i, 1), a)
		VMOVQ(g.at(32+32*i+16, 1), b)
		VPUNPCKLBW(b, a, a) // sc[2i][r], sc[2i+1][r] side by side
		pw := YMM()
		VPMOVSXBW(a, pw)
		g.pairs(pw, kfRecBS+4*i, o)
	}
	for a := range g.na {
		VPSLLD(U8(shift), o[a], o[a])
		VPSUBD(o[a], g.sum2[a], g.sum2[a])
	}
}

// q6: per chunk, quads 0–1 then 2–3 (read front to back), an int16 run
// of 2 quads per group (q6Groups); parts 0–2 masked to 6 bits, the fourth
// group's quants gathered from their top bits.
func (g *kf2) q6() {
	g.sum2 = make([]reg.VecVirtual, g.na)
	m3F := mask("kf3F", 0x3F3F3F3F)
	for i := range 4 {
		for k0 := 0; k0 < 4; k0 += 2 {
			for p, grp := range q6Groups(i) {
				scw := g.scalesI8(32 + 16*grp)
				t := make([]reg.VecVirtual, g.na)
				for k := k0; k < k0+2; k++ {
					var q reg.VecVirtual
					if p < 3 {
						q = g.quadY(q6Quad(i, k, p))
						VPAND(m3F, q, q)
					} else {
						q = g.q6Top(i, k)
					}
					g.madd(q, 16*grp+4*k, t, k == k0)
				}
				g.scale(scw, t)
			}
		}
	}
	g.offsets(5)
	g.finish2(0, -1, nil)
}

// q6Top returns the quants of chunk i's quad k of its fourth group: bits
// 6, 7 of part p's quad as their bits 2p, 2p+1.
func (g *kf2) q6Top(i, k int) reg.VecVirtual {
	var top reg.VecVirtual
	for p := range 3 {
		v := g.quadY(q6Quad(i, k, p))
		VPSRLW(U8(6-2*p), v, v)
		m := uint32(3<<(2*p)) * 0x01010101
		VPAND(mask(fmt.Sprintf("kfbits%08x", m), m), v, v)
		if top == nil {
			top = v
			continue
		}
		VPOR(v, top, top)
	}
	return top
}

// q23: group 8h+2j+kk from bits 2j of qs quads (h, k) (Q3_K: bit 4h+j of
// hm quad k as bit 2, and the −4 offset), int16 runs of 4 quads.
func (g *kf2) q23(high bool) {
	qs := 320
	if high {
		qs = 800
	}
	g.sum2 = make([]reg.VecVirtual, g.na)
	m03 := mask("kf03", 0x03030303)
	for h := range 2 {
		for j := range 4 {
			for kk := range 2 {
				grp := 8*h + 2*j + kk
				var scw reg.VecVirtual
				if high {
					scw = g.scalesI8(32 + 16*grp)
				} else {
					scw = g.scales2(grp)
				}
				t := make([]reg.VecVirtual, g.na)
				for k := 4 * kk; k < 4*kk+4; k++ {
					q := g.quadY(qs + 64*(8*h+k))
					if j > 0 {
						VPSRLW(U8(2*j), q, q)
					}
					if high {
						q = bits(q, m03, shiftedY(g.quadY(288+64*k), 2-4*h-j), mask("kf04", 0x04040404))
					} else {
						VPAND(m03, q, q)
					}
					g.madd(q, 128*h+32*j+4*k, t, k == 4*kk)
				}
				g.scale(scw, t)
			}
		}
	}
	if high {
		g.offsets(2)
		g.finish2(0, -1, nil)
		return
	}
	msum := make([]reg.VecVirtual, g.na)
	for i := range 8 {
		mn := YMM()
		VPMOVZXBW(g.at(64+32*i, 2), mn)
		VPSRLW(U8(4), mn, mn)
		g.pairs(mn, kfRecBS+4*i, msum)
	}
	g.finish2(0, 32, msum)
}

// scales2 returns Q2_K group grp's scale words: the low nibble of byte
// grp%2 of each row's scale pair.
func (g *kf2) scales2(grp int) reg.VecVirtual {
	d := YMM()
	VPMOVZXBW(g.at(64+32*(grp/2), 2), d)
	if grp%2 == 1 {
		VPSRLD(U8(16), d, d)
	}
	VPAND(mask("kfLow4", 0x0000000F), d, d)
	return dupWords(d)
}

// finish2 is kfast.finish on the half's 8 rows.
func (g *kf2) finish2(d, dmin int, msum []reg.VecVirtual) {
	dw := YMM()
	VCVTPH2PS(g.at(d, 2), dw)
	var dm reg.VecVirtual
	if dmin >= 0 {
		dm = YMM()
		VCVTPH2PS(g.at(dmin, 2), dm)
	}
	for a := range g.na {
		x := YMM()
		VBROADCASTSS(g.act.at(a, kfRecD), x)
		VMULPS(x, dw, x) // f16(d)·da
		VCVTDQ2PS(g.sum2[a], g.sum2[a])
		VFMADD231PS(g.sum2[a], x, g.acc2[a])
		if dmin >= 0 {
			m := YMM()
			VBROADCASTSS(g.act.at(a, kfRecD), m)
			VMULPS(m, dm, m)
			VCVTDQ2PS(msum[a], msum[a])
			VFNMADD231PS(msum[a], m, g.acc2[a])
		}
	}
}
