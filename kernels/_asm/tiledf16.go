package main

import (
	"fmt"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	"github.com/mmcloughlin/avo/reg"
)

// AttnTiled's kernels on the F16 cache rows in place (AVX-512): the same
// arithmetic as tiledScoresAVX512 and tiledValues(2)AVX512 on the same
// values (F16 to float32 is exact), each row converted as it is read
// instead of a whole block converted into the block layout first. A task
// of few rows (a decode step's query heads of one KV head) reads each
// converted element once or twice, so converting in the products costs
// less than storing the block and reading it back.
//
// Block i of a call is 16 cache rows of hd halves, one after another (the
// KV layout keeps a head's rows of a cache block together; a cache block of
// a multiple of 16 positions holds whole blocks) from element bases[i] of
// the cache; position p of the block at bases[i] + p·hd. Rows past the
// valid positions are read (they lie in the same cache block) but never
// count: their scores are not part of the maximum, and the values read
// only valid positions.

func genTiledF16() {
	genTiledScoresF16()
	genTiledValues(tiledZMM, 1, true)
	genTiledValues(tiledZMM, 2, true)
	genTiledValues(tiledZMM, 3, true)
	genTiledValues(tiledZMM, 4, true)
	for _, hd := range scoresNHeads {
		for rows := 2; rows <= 4; rows++ {
			genTiledScoresF16N(rows, hd)
		}
	}
}

// scoresNHeads are the head dimensions of genTiledScoresF16N's kernels.
var scoresNHeads = []int{64, 128, 256}

// genTiledScoresF16N: tiledScoresF16AVX512 for rows query rows (2–4; one
// KV head's query heads in a decode) of a head dimension hd at once, four
// positions at a time: each F16 K row is converted once for every query
// row, the accumulator of (row r, position p) being tiledAccFor(4r+p), so
// that reduce16x16 leaves row r's four scores in 128-bit lane r (the
// rows past rows are zero and unused). Every score takes the same
// products, fused in the same order, and the same reduction as in
// tiledScoresF16AVX512, so the same bits.
func genTiledScoresF16N(rows, hd int) {
	name := fmt.Sprintf("tiledScores%dF16AVX512x%d", rows, hd)
	TEXT(name, NOSPLIT, "func(out *float32, ostride int, q *float32, src *uint16, bases *int, scale float32, n, nb int, mx *float32)")
	Doc(fmt.Sprintf("%s is tiledScoresF16AVX512 of %d query rows of %d elements at q (row r at q[r·%d:]) over the same nb ≥ 1 blocks: row r's scores at out[r·ostride:], its largest valid score (−∞ for n ≤ 0) at mx[r].", name, rows, hd, hd))
	Pragma("noescape")
	out, os := loadGP("out"), loadGP("ostride")
	SHLQ(U8(2), os) // bytes
	os3 := GP64()
	LEAQ(Mem{Base: os, Index: os, Scale: 2}, os3)
	q, bases, n, nb := loadGP("q"), loadGP("bases"), loadGP("n"), loadGP("nb")
	sc := bcastArg("scale")
	run := ZMM() // the largest valid score so far, lane 4r+p: row r's positions p mod 4
	VBROADCASTSS(constU32("tiledNegInf", 0xFF800000), run)
	Label(name + "_block")
	kr := GP64()
	MOVQ(Mem{Base: bases}, kr)
	src := loadGP("src")
	LEAQ(Mem{Base: src, Index: kr, Scale: 2}, kr)
	grp := GP64()
	MOVQ(U32(4), grp)
	Label(name + "_group")
	acc := make([]reg.VecVirtual, 16)
	for m := range hd / 16 {
		for p := range 4 {
			k := ZMM()
			VCVTPH2PS(Mem{Base: kr, Disp: 2*hd*p + 32*m}, k)
			for r := range rows {
				i, qm := tiledAccFor(4*r+p), Mem{Base: q, Disp: 4 * (r*hd + 16*m)}
				if m == 0 {
					acc[i] = ZMM()
					VMULPS(qm, k, acc[i])
				} else {
					VFMADD231PS(qm, k, acc[i])
				}
			}
		}
	}
	for r := rows; r < 4; r++ {
		for p := range 4 {
			i := tiledAccFor(4*r + p)
			acc[i] = ZMM()
			VXORPS(acc[i], acc[i], acc[i])
		}
	}
	g := reduce16x16(acc)
	VMULPS(sc, g, g)
	for r := range rows {
		dst := []Mem{{Base: out}, {Base: out, Index: os, Scale: 1}, {Base: out, Index: os, Scale: 2}, {Base: out, Index: os3, Scale: 1}}[r]
		VEXTRACTF32X4(U8(r), g, dst)
	}
	// the lanes of valid positions (min(n, 4) of each row's four, none if
	// n ≤ 0) join the running maximum
	rem, lim := GP64(), GP64()
	MOVQ(n, rem)
	MOVQ(U32(4), lim)
	CMPQ(rem, lim)
	CMOVQGT(lim, rem)
	XORQ(lim, lim)
	CMPQ(rem, lim)
	CMOVQLT(lim, rem)
	bits := GP64()
	MOVQ(U32(0xF), bits)
	BZHIQ(rem, bits, bits)
	IMUL3Q(U32(0x1111&(1<<(4*rows)-1)), bits, bits)
	k := K()
	KMOVW(bits.As32(), k)
	VMAXPS(g, run, k, run)
	ADDQ(U8(16), out)
	ADDQ(U32(8*hd), kr)
	SUBQ(U8(4), n)
	DECQ(grp)
	JNZ(LabelRef(name + "_group"))
	ADDQ(U8(8), bases)
	DECQ(nb)
	JNZ(LabelRef(name + "_block"))
	mx := loadGP("mx")
	for r := range rows {
		x, u := XMM(), XMM()
		VEXTRACTF32X4(U8(r), run, x)
		VPERMILPS(U8(0x4e), x, u)
		VMAXPS(u, x, x)
		VPERMILPS(U8(0xb1), x, u)
		VMAXPS(u, x, x)
		VMOVSS(x, Mem{Base: mx, Disp: 4 * r})
	}
	VZEROUPPER()
	RET()
}

func genTiledF16AVX2() {
	genTiledScoresF16YMM()
	genTiledValues(tiledYMM, 1, true)
}

// rowsOf16 addresses the 16 rows of a block from four bases (rows 0, 4, 8
// and 12), a row stride rs and 3·rs.
type rowsOf16 struct {
	b       [4]reg.GPVirtual
	rs, rs3 reg.GPVirtual
}

// newRowsOf16 allocates the registers of a block's rows of hd halves.
func newRowsOf16(hd reg.GPVirtual) rowsOf16 {
	var r rowsOf16
	r.rs, r.rs3 = GP64(), GP64()
	MOVQ(hd, r.rs)
	SHLQ(U8(1), r.rs) // bytes per row
	LEAQ(Mem{Base: r.rs, Index: r.rs, Scale: 2}, r.rs3)
	for j := range r.b {
		r.b[j] = GP64()
	}
	return r
}

// set points the rows at the block at element off of src.
func (r rowsOf16) set(src, off reg.GPVirtual) {
	LEAQ(Mem{Base: src, Index: off, Scale: 2}, r.b[0])
	for j := 1; j < 4; j++ {
		LEAQ(Mem{Base: r.b[j-1], Index: r.rs, Scale: 4}, r.b[j])
	}
}

// at addresses row p at byte disp.
func (r rowsOf16) at(p, disp int) Mem {
	return strided{base: r.b[p/4], stride: r.rs, stride3: r.rs3}.at(p%4, disp)
}

// advance moves every row by n bytes.
func (r rowsOf16) advance(n int) {
	for _, b := range r.b {
		ADDQ(U8(n), b)
	}
}

// genTiledScoresF16: tiledScoresAVX512 on blocks of F16 rows in place.
func genTiledScoresF16() {
	name := "tiledScoresF16AVX512"
	TEXT(name, NOSPLIT, "func(out, q *float32, src *uint16, bases *int, hd int, scale float32, n, nb int) float32")
	Doc(name + " is tiledScoresAVX512 over nb ≥ 1 blocks of 16 F16 rows of hd halves (a positive multiple of 16) in place: block i's row p at src[bases[i]+p·hd:].")
	Pragma("noescape")
	out, src, bases, hd, n, nb := loadGP("out"), loadGP("src"), loadGP("bases"), loadGP("hd"), loadGP("n"), loadGP("nb")
	sc := bcastArg("scale")
	rows := newRowsOf16(hd)
	SHRQ(U8(4), hd) // chunks of 16
	run := ZMM()
	VBROADCASTSS(constU32("tiledNegInf", 0xFF800000), run)
	Label(name + "_block")
	off := GP64()
	MOVQ(Mem{Base: bases}, off)
	rows.set(src, off)
	q, m := GP64(), GP64()
	Load(Param("q"), q)
	MOVQ(hd, m)
	acc := blockChunks(name, q, m,
		func(p int) Op {
			k := ZMM()
			VCVTPH2PS(rows.at(p, 0), k)
			return k
		},
		func() { rows.advance(32) })
	endScoresBlock(name, acc, sc, run, out, n, nb, func() { ADDQ(U8(8), bases) })
}

// genTiledScoresF16YMM: tiledScoresAVX2 on blocks of F16 rows in place:
// four positions at a time, each as YMM pairs (lanes 0..7 and 8..15),
// each reduced alone.
func genTiledScoresF16YMM() {
	name := "tiledScoresF16AVX2"
	TEXT(name, NOSPLIT, "func(out, q *float32, src *uint16, bases *int, hd int, scale float32, n, nb int) float32")
	Doc(name + " is tiledScoresAVX2 over nb ≥ 1 blocks of 16 F16 rows of hd halves (a positive multiple of 16) in place: block i's row p at src[bases[i]+p·hd:].")
	Pragma("noescape")
	out, bases, n, nb := loadGP("out"), loadGP("bases"), loadGP("n"), loadGP("nb")
	sx := XMM()
	Load(Param("scale"), sx)
	rs, rs3 := loadGP("hd"), GP64()
	SHLQ(U8(1), rs) // bytes per row
	LEAQ(Mem{Base: rs, Index: rs, Scale: 2}, rs3)
	mx := XMM()
	VMOVSS(constU32("tiledNegInfV", 0xFF800000), mx)
	Label(name + "_block")
	out0, row := GP64(), GP64()
	MOVQ(out, out0)
	src := loadGP("src")
	MOVQ(Mem{Base: bases}, row)
	LEAQ(Mem{Base: src, Index: row, Scale: 2}, row)
	quad := GP64()
	MOVQ(U32(4), quad)
	Label(name + "_quad")
	q, m, kp := loadGP("q"), loadGP("hd"), GP64()
	SHRQ(U8(4), m) // chunks of 16
	MOVQ(row, kp)
	at := strided{base: kp, stride: rs, stride3: rs3}.at
	acc := quadChunks(name, q, m,
		func(p, half int) Op {
			k := YMM()
			VCVTPH2PS(at(p, 16*half), k)
			return k
		},
		func() { ADDQ(U8(32), kp) })
	Label(name + "_reduce")
	reduceQuad(acc, sx, out)
	LEAQ(Mem{Base: row, Index: rs, Scale: 4}, row)
	DECQ(quad)
	JNZ(LabelRef(name + "_quad"))
	endQuadScores(name, n, nb, out0, mx, func() { ADDQ(U8(8), bases) })
}
