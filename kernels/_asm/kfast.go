package main

import (
	"fmt"

	. "github.com/mmcloughlin/avo/build"
	"github.com/mmcloughlin/avo/ir"
	. "github.com/mmcloughlin/avo/operand"
	"github.com/mmcloughlin/avo/reg"
)

// Fast-arithmetic GEMM kernels for the K-quants (AVX-512 VNNI): one ZMM
// lane per weight row, 16 rows per group (the interleaved layouts of
// kernels/kfast_layout.go), up to kfTile activation rows per call. Per
// (row, token) and super-block the kernels compute, as
// kernels/kfast_generic.go,
//
//	isum = Σ_g sc_g · t_g     t_g = Σ_{e∈g} q_e·y_e, exact int32
//	acc  = fma(float(isum), f16(d)·d_a, acc)
//	acc  = fma(float(msum), −(f16(dmin)·d_a), acc)     with minimums
//
// A quad (64 bytes: 4 quant bytes of each of the 16 rows) meets 4
// broadcast activation quants in one VPDPBUSD, adding 4 products to every
// row's t_g; a group's t_g then takes its scale with VPMULLD. Quants are
// fed unsigned: Q6_K's and Q3_K's offsets (−32, −4) are folded in by
// starting t_g at −32·bsum_g or −4·bsum_g (from the activation record),
// so t_g is the signed sum. The minimum sums are VPDPWSSD of the
// minimum pairs by broadcast activation-sum pairs. Activation records
// (kfRec bytes per super-block):
//
//	0   qs  [256]int8
//	256 n32 [16]int32   −32·bsum_g
//	320 n4  [16]int32   −4·bsum_g
//	384 bs  [16]int16   bsum_g
//	416 q8s [8]int16    sums of 32
//	432 d   float32
const (
	kfRecN32 = 256
	kfRecN4  = 320
	kfRecBS  = 384
	kfRecQ8S = 416
	kfRecD   = 432
	kfRec    = 448
	kfTile   = 4
	kfRows   = 16
)

// kfType is one K-quant's fast kernel: its group-block size and body, the
// narrowest tile that prefetches its weights, and the byte mask the
// AVX-512 body keeps in a register (kfast.mask).
type kfType struct {
	name   string
	block  int
	body   func(g *kfast)
	pfFrom int
	mask   uint32
}

// The kernels of few tokens read a group's bytes front to back (kfast.q45,
// Q6_K's layout) and leave the streaming to the hardware prefetcher:
// with PREFETCHT1 hints 4 KiB ahead, one-token matmuls read 43–64% of the
// read bandwidth on Zen 4 (at ~60 GB/s), against 64–92% without them
// (BenchmarkDecodeKQuant, docs/benchmarks.md). The wider tiles, which
// compute longer on every line, keep the hints for Q4_K and Q5_K (4
// tokens: 72–75% with them, 52–56% without); Q6_K is faster without them
// at every width. Q2_K and Q3_K were not measured and keep them.
var kfTypes = []kfType{
	{"Q4_K", 2304, func(g *kfast) { g.q45(false) }, 3, 0x0F0F0F0F},
	{"Q5_K", 2816, func(g *kfast) { g.q45(true) }, 3, 0x0F0F0F0F},
	{"Q6_K", 3360, (*kfast).q6, kfTile + 1, 0x3F3F3F3F},
	{"Q2_K", 1344, func(g *kfast) { g.q23(false) }, 1, 0x0F0F0F0F},
	{"Q3_K", 1824, func(g *kfast) { g.q23(true) }, 1, 0x0F0F0F0F},
}

func genKFast() {
	for _, kt := range kfTypes {
		for a := 1; a <= kfTile; a++ {
			(&kfast{kt: kt, na: a}).gen()
		}
	}
	for _, kt := range kfTypes {
		for a, gf := range kfGFNI[kt.name] {
			(&kfast{kt: kt, na: a + 1, gf: gf}).gen()
		}
	}
}

// kfast emits one kernel of na activation rows.
type kfast struct {
	kt   kfType
	na   int
	w    reg.GPVirtual // the current group-block
	act  strided
	acc  []reg.VecPhysical // (na) float accumulators, one lane per row
	isum []reg.VecVirtual  // (na) the super-block's integer sums
	mask reg.VecVirtual    // kt.mask: the low nibble (Q6_K: the 6-bit quant) of every byte
	// gf: which high bits the kernel moves with VGF2P8AFFINEQB rather
	// than shifts and masks (kfast_gfni.go).
	gf gfMode

	// AVX2 (kfastavx2.go): the half-group index (0 or 8 rows), the YMM
	// accumulators and integer sums.
	half       reg.GPVirtual
	acc2, sum2 []reg.VecVirtual
}

func (g *kfast) name() string {
	if g.gf != gfNone {
		return fmt.Sprintf("kfast%s_gfni_%d", g.kt.name, g.na)
	}
	return fmt.Sprintf("kfast%s_%d", g.kt.name, g.na)
}

// streams reports whether the kernel leaves the prefetching to the
// hardware (see kfTypes).
func (g *kfast) streams() bool { return g.na < g.kt.pfFrom }

// q6Quad is the offset of Q6_K's quad (i, k, p) in its group-block
// (kernels/kfast_layout.go): chunk i, quad k, part p.
func q6Quad(i, k, p int) int { return 288 + 64*(12*i+3*k+p) }

// q6Groups are the groups of Q6_K's chunk i: those of parts 0–2 and that
// of the quants spread over their top bits.
func q6Groups(i int) [4]int { return [4]int{3 * i, 3*i + 1, 3*i + 2, 12 + i} }

func (g *kfast) gen() {
	name := g.name()
	r, group := groupKernel(name, fmt.Sprintf("%s multiplies rows fast-layout %s weight rows (groups of %d, groupBytes apart) with %d activation rows of records.",
		name, g.kt.name, kfRows, g.na))
	Label(name + "_rows")
	var pin pinned
	g.acc = pin.zero(g.na)
	g.act = loadStrided("act", "actStride", g.na, 1)
	g.w = GP64()
	MOVQ(group, g.w)
	cnt := loadGP("nb")
	g.mask = ZMM()
	VPBROADCASTD(constU32(fmt.Sprintf("kf%02X", g.kt.mask&0xFF), g.kt.mask), g.mask)
	Label(name + "_blocks")
	if !g.streams() {
		for d := 0; d < g.kt.block; d += 64 {
			prefetchWeights(Mem{Base: g.w, Disp: prefetchAhead + d}, g.na)
		}
	}
	g.kt.body(g)
	ADDQ(U32(g.kt.block), g.w)
	g.act.advance(kfRec)
	DECQ(cnt)
	JNZ(LabelRef(name + "_blocks"))
	storeAcc(r, g.acc)
	nextGroup(name, r, group, kfRows)
}

// vnniBcst emits a VNNI instruction whose first source is a broadcast
// 32-bit memory operand: acc[i] op= f(src[i], m).
func vnniBcst(op string, m Mem, src, acc Op) {
	Instruction(&ir.Instruction{
		Opcode:   op,
		Suffixes: []string{"BCST"},
		Operands: []Op{m, src, acc},
		Inputs:   []Op{m, src, acc},
		Outputs:  []Op{acc},
		ISA:      []string{"AVX512VNNI"},
	})
}

// quad loads the quad at byte off of the group-block.
func (g *kfast) quad(off int) reg.VecVirtual {
	v := ZMM()
	VMOVDQU64(Mem{Base: g.w, Disp: off}, v)
	return v
}

// sums starts one t per activation row: zero, or the int32 at byte off of
// each row's record (broadcast) when off ≥ 0.
func (g *kfast) sums(off int) []reg.VecVirtual {
	t := make([]reg.VecVirtual, g.na)
	for a := range t {
		t[a] = ZMM()
		if off < 0 {
			zero(t[a])
		} else {
			VPBROADCASTD(g.act.at(a, off), t[a])
		}
	}
	return t
}

// dots adds quad q times the broadcast activation quants at record byte
// off to t (one VPDPBUSD per activation row).
func (g *kfast) dots(q reg.VecVirtual, off int, t []reg.VecVirtual) {
	for a := range g.na {
		vnniBcst("VPDPBUSD", g.act.at(a, off), q, t[a])
	}
}

// scale multiplies each t by the group's scales sc (one dword per row)
// and adds it to the integer sums (the first group sets them).
func (g *kfast) scale(sc reg.VecVirtual, t []reg.VecVirtual) {
	for a := range g.na {
		VPMULLD(sc, t[a], t[a])
		if g.isum[a] == nil {
			g.isum[a] = t[a]
			continue
		}
		VPADDD(t[a], g.isum[a], g.isum[a])
	}
}

// high returns (lo & 0x0F) | (n bits of qh from bit from, at bit to): a
// quant with its high bits, moved by one VGF2P8AFFINEQB with gfni,
// otherwise by a shift and a mask.
func (g *kfast) high(lo, qh reg.VecVirtual, gfni bool, from, to, n int) reg.VecVirtual {
	if gfni {
		return g.or0F(lo, gfMove(qh, gfBits(from, to, n)))
	}
	return g.merge(lo, shifted(qh, to-from), uint32(((1<<n)-1)<<to)*0x01010101)
}

// merge returns (lo & 0x0F) | (hi & mask): a quant with its high bits,
// hi already shifted into place.
func (g *kfast) merge(lo, hi reg.VecVirtual, mask uint32) reg.VecVirtual {
	VPANDD_BCST(constU32(fmt.Sprintf("kfbits%08x", mask), mask), hi, hi)
	return g.or0F(lo, hi)
}

// or0F returns (lo & 0x0F) | hi, in hi.
func (g *kfast) or0F(lo, hi reg.VecVirtual) reg.VecVirtual {
	VPTERNLOGD(U8(0xF8), g.mask, lo, hi) // hi | (lo & 0x0F)
	return hi
}

// shifted returns v shifted left by s bits (right by −s) in 16-bit words:
// with the byte masks applied after it, bits never cross into a field.
func shifted(v reg.VecVirtual, s int) reg.VecVirtual {
	out := ZMM()
	switch {
	case s > 0:
		VPSLLW(U8(s), v, out)
	case s < 0:
		VPSRLW(U8(-s), v, out)
	default:
		VMOVDQA64(v, out)
	}
	return out
}

// q45 is the Q4_K (Q5_K with fifth) super-block: chunk c's quad k holds
// sub-block 2c in its low nibbles and 2c+1 in its high ones. Q4_K's high
// nibbles are only masked, not shifted, and their sums, 16 times the
// sub-block's, divided by 16 before the scale (one shift per sub-block
// rather than one per quad: the one-token kernel 79 → 90 GB/s from L2 on
// Zen 4, BenchmarkDecodeCompute), their mask in a register (as a
// broadcast memory operand it cost the one-token kernel 10 points of the
// read bandwidth, BenchmarkDecodeKQuant). Q5_K's
// streaming kernels load the 8 qh quads (before the qs quads in the
// group-block) first and keep them, so that the block is read in order.
// The scales are unpacked from the file's packing once per super-block
// (scales6), the minimums at its end (mins6).
func (g *kfast) q45(fifth bool) {
	qs := 256
	if fifth {
		qs = 768
	}
	g.isum = make([]reg.VecVirtual, g.na)
	var qhs []reg.VecVirtual
	if fifth && g.streams() {
		for k := range 8 {
			qhs = append(qhs, g.quad(256+64*k))
		}
	}
	var mF0 reg.VecVirtual
	if !fifth {
		mF0 = ZMM()
		VPBROADCASTD(constU32("kfF0", 0xF0F0F0F0), mF0)
	}
	m3F := ZMM()
	VPBROADCASTD(constU32("kf3F", 0x3F3F3F3F), m3F)
	sc := g.scales6(m3F)
	mFF := ZMM()
	VPBROADCASTD(constU32("kfFF", 0xFF), mFF)
	for c := range 4 {
		tl, th := g.sums(-1), g.sums(-1)
		for k := range 8 {
			p := g.quad(qs + 64*(8*c+k))
			lo, hi := ZMM(), ZMM()
			if fifth {
				var qh reg.VecVirtual
				if qhs != nil {
					qh = qhs[k]
				} else {
					qh = g.quad(256 + 64*k)
				}
				VPSRLW(U8(4), p, hi)
				// bit 2c (2c+1) of qh to bit 4
				lo = g.high(p, qh, g.gf != gfNone, 2*c, 4, 1)
				hi = g.high(hi, qh, g.gf == gfBoth, 2*c+1, 4, 1)
			} else {
				VPANDD(g.mask, p, lo)
				VPANDD(mF0, p, hi) // 16 times the quants
			}
			g.dots(lo, 64*c+4*k, tl)
			g.dots(hi, 64*c+32+4*k, th)
		}
		if !fifth {
			for _, t := range th {
				VPSRAD(U8(4), t, t) // exact: 16·Σ q·y
			}
		}
		// Scales 2c and 2c+1: pair c%2 of sc[c/2], one word per row.
		w := zxPair(VPMOVZXWD, sc[c/2], c%2)
		sl := ZMM()
		VPANDD(mFF, w, sl)
		VPSRLD(U8(8), w, w)
		g.scale(sl, tl)
		g.scale(w, th)
	}
	mn := g.mins6(m3F)
	msum := g.sums(-1)
	for i := range 4 {
		pw := zxPair(VPMOVZXBW, mn[i/2], i%2)
		for a := range g.na {
			vnniBcst("VPDPWSSD", g.act.at(a, kfRecQ8S+4*i), pw, msum[a])
		}
	}
	g.finish(0, 32, msum)
}

// scales6 unpacks Q4_K's and Q5_K's scales (kernels/kfast_layout.go):
// pair p of the first vector holds scales p, p+1 of every row, of the
// second 4+2p, 5+2p.
func (g *kfast) scales6(m3F reg.VecVirtual) [2]reg.VecVirtual {
	return g.unpack6(g.quad(64), g.quad(192), 0, m3F)
}

// mins6 unpacks Q4_K's and Q5_K's minimums as scales6 the scales.
func (g *kfast) mins6(m3F reg.VecVirtual) [2]reg.VecVirtual {
	return g.unpack6(g.quad(128), g.quad(192), 4, m3F)
}

// unpack6 returns x & 0x3F and (c >> shift) & 0x0F | (x & 0xC0) >> 2,
// bytewise: from x = q[0..3] and c = q[8..11] (shift 0) the scales, from
// x = q[4..7] and c (shift 4) the minimums. The word shifts move bits
// within a byte only: their inputs are masked first, or their outputs
// after (or0F).
func (g *kfast) unpack6(x, c reg.VecVirtual, shift int, m3F reg.VecVirtual) [2]reg.VecVirtual {
	lo, t := ZMM(), ZMM()
	VPANDD(m3F, x, lo)
	VPANDND(x, m3F, t) // the top two bits of x
	VPSRLW(U8(2), t, t)
	if shift > 0 {
		VPSRLW(U8(shift), c, c)
	}
	return [2]reg.VecVirtual{lo, g.or0F(c, t)}
}

// zxPair zero-extends half h (a pair of the packed scales) of v with ext
// (VPMOVZXWD: the pair as one dword per row; VPMOVZXBW: a word each).
func zxPair(ext func(...Op), v reg.VecVirtual, h int) reg.VecVirtual {
	src := v.AsY()
	if h == 1 {
		y := YMM()
		VEXTRACTI64X4(U8(1), v, y)
		src = y
	}
	out := ZMM()
	ext(src, out)
	return out
}

// q6 is the Q6_K super-block, chunk by chunk: parts 0–2 of quad k are
// quad k of groups 3i..3i+2 once masked to 6 bits, and their top bits
// quad k of group 12+i (q6Top).
func (g *kfast) q6() {
	g.isum = make([]reg.VecVirtual, g.na)
	// The masks of q6Top, in registers where they fit (the one-token
	// kernel 3% faster than with broadcast memory operands).
	var bits [3]Op
	for p := range bits {
		m := uint32(3<<(2*p)) * 0x01010101
		bits[p] = constU32(fmt.Sprintf("kfbits%08x", m), m)
		if g.na < kfTile { // the 4-token kernel has no registers left for them
			r := ZMM()
			VPBROADCASTD(bits[p], r)
			bits[p] = r
		}
	}
	for i := range 4 {
		grps := q6Groups(i)
		var t [4][]reg.VecVirtual
		for p, grp := range grps {
			t[p] = g.sums(kfRecN32 + 4*grp)
		}
		for k := range 4 {
			var q [4]reg.VecVirtual
			for p := range 3 {
				raw := g.quad(q6Quad(i, k, p))
				q[p] = ZMM()
				VPANDD(g.mask, raw, q[p])
				q[3] = q6Top(q[3], raw, bits[p], p)
			}
			for p, grp := range grps {
				g.dots(q[p], 16*grp+4*k, t[p])
			}
		}
		for p, grp := range grps {
			sc := ZMM()
			VPMOVSXBD(Mem{Base: g.w, Disp: 32 + 16*grp}, sc)
			g.scale(sc, t[p])
		}
	}
	g.finish(0, -1, nil)
}

// q6Top adds the top bits (6, 7) of part p's raw quad, which it
// overwrites, to the quants assembled in top as their bits 2p, 2p+1
// (part 0's start them; top is then ignored): a shift in 16-bit words,
// then bits (those two bits of every byte) as a mask.
func q6Top(top, raw reg.VecVirtual, bits Op, p int) reg.VecVirtual {
	VPSRLW(U8(6-2*p), raw, raw)
	if p == 0 {
		ternlog(0xA0, bits, raw, raw) // raw & bits
		return raw
	}
	ternlog(0xF8, bits, raw, top) // top | (raw & bits)
	return top
}

// ternlog emits VPTERNLOGD: a = f(a, b, c), f's truth table imm (bit
// 4a+2b+c), c a register or a constant broadcast from memory.
func ternlog(imm uint8, c Op, b, a reg.VecVirtual) {
	if _, ok := c.(Mem); ok {
		VPTERNLOGD_BCST(U8(imm), c, b, a)
		return
	}
	VPTERNLOGD(U8(imm), c, b, a)
}

// q23 is the Q2_K (Q3_K with high) super-block: in half h, bits 2j, 2j+1
// of qs quad (h, k) are group 8h+2j+k/4 (Q3_K: with bit 4h+j of hm quad k
// as bit 2, and t starting at −4·bsum).
func (g *kfast) q23(high bool) {
	qs, init := 320, -1
	if high {
		qs, init = 800, kfRecN4
	}
	g.isum = make([]reg.VecVirtual, g.na)
	for h := range 2 {
		for j := range 4 {
			for kk := range 2 {
				grp := 8*h + 2*j + kk
				off := init
				if high {
					off += 4 * grp
				}
				t := g.sums(off)
				for k := 4 * kk; k < 4*kk+4; k++ {
					p := shifted(g.quad(qs+64*(8*h+k)), -2*j)
					var q reg.VecVirtual
					if high {
						b := 4*h + j
						q = g.merge3(p, shifted(g.quad(288+64*k), 2-b))
					} else {
						q = p
						VPANDD_BCST(constU32("kf03", 0x03030303), p, q)
					}
					g.dots(q, 128*h+32*j+4*k, t)
				}
				g.scale(g.scales23(grp, high), t)
			}
		}
	}
	if high {
		g.finish(0, -1, nil)
		return
	}
	msum := g.sums(-1)
	for i := range 8 {
		mn := ZMM()
		VPMOVZXBW(Mem{Base: g.w, Disp: 64 + 32*i}, mn)
		VPSRLW(U8(4), mn, mn)
		for a := range g.na {
			vnniBcst("VPDPWSSD", g.act.at(a, kfRecBS+4*i), mn, msum[a])
		}
	}
	g.finish(0, 32, msum)
}

// merge3 returns (lo & 3) | (hi & 4): a Q3_K quant's low bits with its
// high bit, both already shifted into place.
func (g *kfast) merge3(lo, hi reg.VecVirtual) reg.VecVirtual {
	VPANDD_BCST(constU32("kf04", 0x04040404), hi, hi)
	VPANDD_BCST(constU32("kf03", 0x03030303), lo, lo)
	VPORD(lo, hi, hi)
	return hi
}

// scales23 returns group grp's scales, one dword per row: Q3_K's decoded
// signed bytes, or the low nibbles of Q2_K's scale-pair bytes.
func (g *kfast) scales23(grp int, q3 bool) reg.VecVirtual {
	sc := ZMM()
	if q3 {
		VPMOVSXBD(Mem{Base: g.w, Disp: 32 + 16*grp}, sc)
		return sc
	}
	VPMOVZXBW(Mem{Base: g.w, Disp: 64 + 32*(grp/2)}, sc)
	if grp%2 == 1 {
		VPSRLD(U8(16), sc, sc)
	}
	VPANDD_BCST(constU32("kfLow4", 0x0000000F), sc, sc)
	return sc
}

// finish adds the super-block to the accumulators: fma(float(isum),
// d·da, acc), then, when dmin ≥ 0, fma(float(msum), −(dmin·da), acc), the
// f16 vectors d and dmin at those byte offsets of the group-block.
func (g *kfast) finish(d, dmin int, msum []reg.VecVirtual) {
	dw := ZMM()
	VCVTPH2PS(Mem{Base: g.w, Disp: d}, dw)
	var dm reg.VecVirtual
	if dmin >= 0 {
		dm = ZMM()
		VCVTPH2PS(Mem{Base: g.w, Disp: dmin}, dm)
	}
	for a := range g.na {
		x := ZMM()
		VMULPS_BCST(g.act.at(a, kfRecD), dw, x) // f16(d)·da
		VCVTDQ2PS(g.isum[a], g.isum[a])
		VFMADD231PS(g.isum[a], x, g.acc[a])
		if dmin >= 0 {
			m := ZMM()
			VMULPS_BCST(g.act.at(a, kfRecD), dm, m)
			VCVTDQ2PS(msum[a], msum[a])
			VFNMADD231PS(msum[a], m, g.acc[a])
		}
	}
}
