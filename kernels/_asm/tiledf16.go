package main

import (
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
	genTiledValuesF16(tiledZMM, 1)
	genTiledValuesF16(tiledZMM, 2)
}

func genTiledF16AVX2() {
	genTiledScoresF16YMM()
	genTiledValuesF16(tiledYMM, 1)
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
	b := r.b[p/4]
	switch p % 4 {
	case 1:
		return Mem{Base: b, Index: r.rs, Scale: 1, Disp: disp}
	case 2:
		return Mem{Base: b, Index: r.rs, Scale: 2, Disp: disp}
	case 3:
		return Mem{Base: b, Index: r.rs3, Scale: 1, Disp: disp}
	}
	return Mem{Base: b, Disp: disp}
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
	acc := make([]reg.VecVirtual, 16)
	qz := ZMM()
	VMOVUPS(Mem{Base: q}, qz)
	for p := range 16 {
		i := tiledAccFor(p)
		acc[i] = ZMM()
		k := ZMM()
		VCVTPH2PS(rows.at(p, 0), k)
		VMULPS(k, qz, acc[i])
	}
	DECQ(m)
	JZ(LabelRef(name + "_reduce"))
	Label(name + "_chunk")
	ADDQ(U8(64), q)
	rows.advance(32)
	VMOVUPS(Mem{Base: q}, qz)
	for p := range 16 {
		k := ZMM()
		VCVTPH2PS(rows.at(p, 0), k)
		VFMADD231PS(k, qz, acc[tiledAccFor(p)])
	}
	DECQ(m)
	JNZ(LabelRef(name + "_chunk"))
	Label(name + "_reduce")
	reduceScores(acc, sc, run, out, n)
	ADDQ(U8(64), out)
	ADDQ(U8(8), bases)
	SUBQ(U8(16), n)
	DECQ(nb)
	JNZ(LabelRef(name + "_block"))
	Store(hmax(run), ReturnIndex(0))
	VZEROUPPER()
	RET()
}

// genTiledValuesF16: tiledValues(2) on blocks of F16 rows in place, 64
// elements (four chains of 16 lanes per row) at a time, then 16; with rows
// = 2 (ZMM only) each row of V is converted once for both.
func genTiledValuesF16(w tiledISA, rows int) {
	name := "tiledValuesF16" + w.name
	var acc []reg.GPVirtual
	eArgs := []string{"e"}
	if rows == 1 {
		TEXT(name, NOSPLIT, "func(acc, e *float32, src *uint16, bases *int, n, hd int)")
		Doc(name + " is tiledValues" + w.name + " over the F16 rows of blocks of 16 in place (hd a positive multiple of 16): position p's row at src[bases[p/16]+(p%16)·hd:].")
		Pragma("noescape")
		acc = []reg.GPVirtual{loadGP("acc")}
	} else {
		name = "tiledValues2F16" + w.name
		TEXT(name, NOSPLIT, "func(acc0, acc1, e0, e1 *float32, src *uint16, bases *int, n, hd int)")
		Doc(name + " is tiledValuesF16" + w.name + "(acc0, e0, src, bases, n, hd) and tiledValuesF16" + w.name + "(acc1, e1, src, bases, n, hd) at once.")
		Pragma("noescape")
		acc = []reg.GPVirtual{loadGP("acc0"), loadGP("acc1")}
		eArgs = []string{"e0", "e1"}
	}
	hd := loadGP("hd")
	rs := GP64()
	MOVQ(hd, rs)
	SHLQ(U8(1), rs) // bytes per row
	SHRQ(U8(4), hd) // chunks of 16 left
	doff := GP64()  // bytes into each row of the current chunks
	XORQ(doff, doff)
	step := func(label string, chunks int) {
		Label(name + "_" + label)
		CMPQ(hd, U8(chunks))
		JL(LabelRef(name + "_" + label + "_end"))
		regs := 16 * chunks / w.lanes
		a := make([][]reg.VecVirtual, rows) // a[row][register]
		for r := range a {
			a[r] = make([]reg.VecVirtual, regs)
			for i := range regs {
				a[r][i] = w.vec()
				VMOVUPS(Mem{Base: acc[r], Disp: 4 * w.lanes * i}, a[r][i])
			}
		}
		ep := make([]reg.GPVirtual, rows)
		for r := range rows {
			ep[r] = loadGP(eArgs[r])
		}
		bp, k := loadGP("bases"), loadGP("n")
		Label(name + "_" + label + "_block")
		vp, j := GP64(), GP64()
		Load(Param("src"), j)
		MOVQ(Mem{Base: bp}, vp)
		LEAQ(Mem{Base: j, Index: vp, Scale: 2}, vp)
		ADDQ(doff, vp)
		MOVQ(U32(16), j)
		Label(name + "_" + label + "_pos")
		wt := make([]reg.VecVirtual, rows)
		for r := range rows {
			wt[r] = w.vec()
			VBROADCASTSS(Mem{Base: ep[r]}, wt[r])
		}
		for i := range regs {
			v := w.vec()
			VCVTPH2PS(Mem{Base: vp, Disp: 2 * w.lanes * i}, v)
			for r := range rows {
				VFMADD231PS(v, wt[r], a[r][i])
			}
		}
		for r := range rows {
			ADDQ(U8(4), ep[r])
		}
		ADDQ(rs, vp)
		DECQ(k)
		JZ(LabelRef(name + "_" + label + "_store"))
		DECQ(j)
		JNZ(LabelRef(name + "_" + label + "_pos"))
		ADDQ(U8(8), bp)
		JMP(LabelRef(name + "_" + label + "_block"))
		Label(name + "_" + label + "_store")
		for r := range rows {
			for i := range regs {
				VMOVUPS(a[r][i], Mem{Base: acc[r], Disp: 4 * w.lanes * i})
			}
			ADDQ(U32(64*chunks), acc[r])
		}
		ADDQ(U32(32*chunks), doff)
		SUBQ(U8(chunks), hd)
		JMP(LabelRef(name + "_" + label))
		Label(name + "_" + label + "_end")
	}
	step("four", 4)
	step("one", 1)
	VZEROUPPER()
	RET()
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
	at := func(p, disp int) Mem {
		switch p {
		case 1:
			return Mem{Base: kp, Index: rs, Scale: 1, Disp: disp}
		case 2:
			return Mem{Base: kp, Index: rs, Scale: 2, Disp: disp}
		case 3:
			return Mem{Base: kp, Index: rs3, Scale: 1, Disp: disp}
		}
		return Mem{Base: kp, Disp: disp}
	}
	lo, hi := YMM(), YMM()
	VMOVUPS(Mem{Base: q}, lo)
	VMOVUPS(Mem{Base: q, Disp: 32}, hi)
	acc := make([]reg.VecVirtual, 8)
	for p := range 4 {
		kl, kh := YMM(), YMM()
		VCVTPH2PS(at(p, 0), kl)
		VCVTPH2PS(at(p, 16), kh)
		acc[2*p], acc[2*p+1] = YMM(), YMM()
		VMULPS(kl, lo, acc[2*p])
		VMULPS(kh, hi, acc[2*p+1])
	}
	DECQ(m)
	JZ(LabelRef(name + "_reduce"))
	Label(name + "_chunk")
	ADDQ(U8(64), q)
	ADDQ(U8(32), kp)
	VMOVUPS(Mem{Base: q}, lo)
	VMOVUPS(Mem{Base: q, Disp: 32}, hi)
	for p := range 4 {
		kl, kh := YMM(), YMM()
		VCVTPH2PS(at(p, 0), kl)
		VCVTPH2PS(at(p, 16), kh)
		VFMADD231PS(kl, lo, acc[2*p])
		VFMADD231PS(kh, hi, acc[2*p+1])
	}
	DECQ(m)
	JNZ(LabelRef(name + "_chunk"))
	Label(name + "_reduce")
	for p := range 4 {
		s := reduce16V(acc[2*p], acc[2*p+1])
		VMULSS(sx, s, s)
		VMOVSS(s, Mem{Base: out, Disp: 4 * p})
	}
	ADDQ(U8(16), out)
	LEAQ(Mem{Base: row, Index: rs, Scale: 4}, row)
	DECQ(quad)
	JNZ(LabelRef(name + "_quad"))
	// the block's valid scores (min(n, 16), none if n ≤ 0), one at a time
	rem := validInBlock(n)
	TESTQ(rem, rem)
	JZ(LabelRef(name + "_max_done"))
	Label(name + "_max")
	VMAXSS(Mem{Base: out0}, mx, mx)
	ADDQ(U8(4), out0)
	DECQ(rem)
	JNZ(LabelRef(name + "_max"))
	Label(name + "_max_done")
	ADDQ(U8(8), bases)
	SUBQ(U8(16), n)
	DECQ(nb)
	JNZ(LabelRef(name + "_block"))
	Store(mx, ReturnIndex(0))
	VZEROUPPER()
	RET()
}
