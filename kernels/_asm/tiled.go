package main

import (
	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	"github.com/mmcloughlin/avo/reg"
)

// Kernels of the fast arithmetic's attention (AttnTiled, see the kernels
// package's attention_tiled.go): a block of 16 cache positions converted
// once into the block layout (element 16m+l of position p at float
// (16m+p)·16+l), the 16 scores of a block as sixteen fused dot products
// reduced together (each as reduce16), and the weighted values of a block
// accumulated into one row. hp, the padded head dimension, is a positive
// multiple of 16.

// tiledISA is what the AVX-512 and AVX2 tiled kernels differ in.
type tiledISA struct {
	name  string
	lanes int // float32 lanes per register
	vec   func() reg.VecVirtual
}

var (
	tiledZMM = tiledISA{"AVX512", 16, ZMM}
	tiledYMM = tiledISA{"AVX2", 8, YMM}
)

func genTiled() {
	genTiledBlockF16(tiledZMM)
	genTiledScoresZMM()
	genTiledValues(tiledZMM, 1)
	genTiledValues(tiledZMM, 2)
	genTiledF16()
}

func genTiledAVX2() {
	genTiledBlockF16(tiledYMM)
	genTiledScoresYMM()
	genTiledValues(tiledYMM, 1)
	genTiledF16AVX2()
}

// genTiledBlockF16: the F16 rows at offs[p] (p < n ≤ 16, hd a positive
// multiple of 16 elements each) in the block layout, positions n..15 zero.
func genTiledBlockF16(w tiledISA) {
	name := "tiledBlockF16" + w.name
	TEXT(name, NOSPLIT, "func(dst *float32, src *uint16, offs *int, n, hd int)")
	Doc(name + " converts the F16 rows src[offs[p]:][:hd] (p < n ≤ 16, hd a positive multiple of 16) into dst in the tiled block layout, zeroing positions n..15.")
	Pragma("noescape")
	dst, src, offs, n, hd := loadGP("dst"), loadGP("src"), loadGP("offs"), loadGP("n"), loadGP("hd")
	SHRQ(U8(4), hd) // chunks of 16
	z := w.vec()
	VXORPS(z, z, z)
	p := GP64()
	XORQ(p, p)
	Label(name + "_pos")
	dp, m := GP64(), GP64()
	MOVQ(p, dp)
	SHLQ(U8(6), dp)
	ADDQ(dst, dp)
	MOVQ(hd, m)
	CMPQ(p, n)
	JGE(LabelRef(name + "_zero"))
	sp := GP64()
	MOVQ(Mem{Base: offs, Index: p, Scale: 8}, sp)
	LEAQ(Mem{Base: src, Index: sp, Scale: 2}, sp)
	Label(name + "_chunk")
	for i := 0; i < 16; i += w.lanes {
		x := w.vec()
		VCVTPH2PS(Mem{Base: sp, Disp: 2 * i}, x)
		VMOVUPS(x, Mem{Base: dp, Disp: 4 * i})
	}
	ADDQ(U8(32), sp)
	ADDQ(U32(1024), dp)
	DECQ(m)
	JNZ(LabelRef(name + "_chunk"))
	JMP(LabelRef(name + "_next"))
	Label(name + "_zero")
	for i := 0; i < 16; i += w.lanes {
		VMOVUPS(z, Mem{Base: dp, Disp: 4 * i})
	}
	ADDQ(U32(1024), dp)
	DECQ(m)
	JNZ(LabelRef(name + "_zero"))
	Label(name + "_next")
	INCQ(p)
	CMPQ(p, U8(16))
	JL(LabelRef(name + "_pos"))
	VZEROUPPER()
	RET()
}

// tiledAccFor is the accumulator register of position p in the AVX-512
// scores kernel: the transposing reduction leaves accumulator 4j+k in
// lane 4k+j, so position p is kept in 4·(p mod 4) + p/4.
func tiledAccFor(p int) int { return 4*(p%4) + p/4 }

// genTiledScoresZMM: out[p] = reduce16(lane_p)·scale for the 16 positions
// of a block, one ZMM accumulator per position (lane l of position p takes
// q[16m+l]·k_p[16m+l], the first as a product, then fused in m order),
// reduced all together by a transposing tree whose every lane adds as
// reduce16: (v[i] + v[i+8]), then + (i+4), then (q0+q2) + (q1+q3).
func genTiledScoresZMM() {
	name := "tiledScoresAVX512"
	out, q0, kb, hp, n, nb := tiledScoresHead(name)
	sc := bcastArg("scale")
	SHRQ(U8(4), hp)
	run := ZMM() // the largest valid score so far, lane by lane
	VBROADCASTSS(constU32("tiledNegInf", 0xFF800000), run)
	Label(name + "_block")
	q, m := GP64(), GP64()
	MOVQ(q0, q)
	MOVQ(hp, m)
	acc := make([]reg.VecVirtual, 16)
	qz := ZMM()
	VMOVUPS(Mem{Base: q}, qz)
	for p := range 16 {
		i := tiledAccFor(p)
		acc[i] = ZMM()
		VMULPS(Mem{Base: kb, Disp: 64 * p}, qz, acc[i])
	}
	DECQ(m)
	JZ(LabelRef(name + "_reduce"))
	Label(name + "_chunk")
	ADDQ(U8(64), q)
	ADDQ(U32(1024), kb)
	VMOVUPS(Mem{Base: q}, qz)
	for p := range 16 {
		VFMADD231PS(Mem{Base: kb, Disp: 64 * p}, qz, acc[tiledAccFor(p)])
	}
	DECQ(m)
	JNZ(LabelRef(name + "_chunk"))
	Label(name + "_reduce")
	reduceScores(acc, sc, run, out, n)
	ADDQ(U8(64), out)
	ADDQ(U32(1024), kb)
	SUBQ(U8(16), n)
	DECQ(nb)
	JNZ(LabelRef(name + "_block"))
	Store(hmax(run), ReturnIndex(0))
	VZEROUPPER()
	RET()
}

// reduceScores reduces the 16 accumulators of a block's positions (acc[i]
// holding position p with i = tiledAccFor(p)) as reduce16 each, scales
// them, stores the 16 scores at out and lets the valid ones (min(n, 16),
// none if n ≤ 0) join the running maximum run, lane by lane.
func reduceScores(acc []reg.VecVirtual, sc, run reg.VecVirtual, out, n reg.GPVirtual) {
	// pairs of registers, combined by a 128-bit or a 32-bit shuffle of two
	// sources (Intel's imm: low half from src1, high half from src2).
	pairs := func(v []reg.VecVirtual, shuf func(imm uint8, b, a, x reg.VecVirtual), lo, hi uint8) []reg.VecVirtual {
		var r []reg.VecVirtual
		for i := 0; i < len(v); i += 2 {
			x, y := ZMM(), ZMM()
			shuf(lo, v[i+1], v[i], x)
			shuf(hi, v[i+1], v[i], y)
			VADDPS(y, x, x)
			r = append(r, x)
		}
		return r
	}
	f128 := func(imm uint8, b, a, x reg.VecVirtual) { VSHUFF32X4(U8(imm), b, a, x) }
	f32 := func(imm uint8, b, a, x reg.VecVirtual) { VSHUFPS(U8(imm), b, a, x) }
	c := pairs(acc, f128, 0x44, 0xEE) // chunks: v[0..3]+v[8..11], v[4..7]+v[12..15] of each
	e := pairs(c, f128, 0x88, 0xDD)   // chunk k of e[j]: h[i]+h[i+4] of accumulator 4j+k
	f := pairs(e, f32, 0x44, 0xEE)    // q0+q2, q1+q3
	g := pairs(f, f32, 0x88, 0xDD)    // lane 4k+j: accumulator 4j+k's sum
	VMULPS(sc, g[0], g[0])
	VMOVUPS(g[0], Mem{Base: out})
	// the lanes of valid positions (min(n, 16) of them, none if n ≤ 0)
	// join the running maximum
	rem, bits := validInBlock(n), GP64()
	MOVQ(U32(0xFFFF), bits)
	BZHIQ(rem, bits, bits)
	k := K()
	KMOVW(bits.As32(), k)
	VMAXPS(g[0], run, k, run)
}

// tiledScoresHead emits a scores kernel's head and loads its integer
// arguments.
func tiledScoresHead(name string) (out, q, kb, hp, n, nb reg.GPVirtual) {
	TEXT(name, NOSPLIT, scoresSig)
	Doc(name + scoresDoc)
	Pragma("noescape")
	return loadGP("out"), loadGP("q"), loadGP("kb"), loadGP("hp"), loadGP("n"), loadGP("nb")
}

const (
	scoresSig = "func(out, q, kb *float32, hp int, scale float32, n, nb int) float32"
	scoresDoc = " sets out[p] = reduce16 of the 16 fused lanes of q·k_p, times scale, for the 16·nb positions of nb ≥ 1 consecutive blocks at kb (hp a positive multiple of 16), and returns the largest of out[p] for p < n (−∞ for n ≤ 0)."
)

// genTiledScoresYMM: genTiledScoresZMM on YMM pairs (lanes 0..7 and
// 8..15 of a position), four positions at a time, each reduced alone.
func genTiledScoresYMM() {
	name := "tiledScoresAVX2"
	out, q0, kbBlock, hp, n, nb := tiledScoresHead(name)
	sx := XMM()
	Load(Param("scale"), sx)
	blockBytes := blockBytesOf(hp)
	SHRQ(U8(4), hp)
	mx := XMM()
	VMOVSS(constU32("tiledNegInfV", 0xFF800000), mx)
	Label(name + "_block")
	out0, kb0 := GP64(), GP64()
	MOVQ(out, out0)
	MOVQ(kbBlock, kb0)
	quad := GP64()
	MOVQ(U32(4), quad)
	Label(name + "_quad")
	q, kb, m := GP64(), GP64(), GP64()
	MOVQ(q0, q)
	MOVQ(kb0, kb)
	MOVQ(hp, m)
	lo, hi := YMM(), YMM()
	VMOVUPS(Mem{Base: q}, lo)
	VMOVUPS(Mem{Base: q, Disp: 32}, hi)
	acc := make([]reg.VecVirtual, 8)
	for p := range 4 {
		acc[2*p], acc[2*p+1] = YMM(), YMM()
		VMULPS(Mem{Base: kb, Disp: 64 * p}, lo, acc[2*p])
		VMULPS(Mem{Base: kb, Disp: 64*p + 32}, hi, acc[2*p+1])
	}
	DECQ(m)
	JZ(LabelRef(name + "_reduce"))
	Label(name + "_chunk")
	ADDQ(U8(64), q)
	ADDQ(U32(1024), kb)
	VMOVUPS(Mem{Base: q}, lo)
	VMOVUPS(Mem{Base: q, Disp: 32}, hi)
	for p := range 4 {
		VFMADD231PS(Mem{Base: kb, Disp: 64 * p}, lo, acc[2*p])
		VFMADD231PS(Mem{Base: kb, Disp: 64*p + 32}, hi, acc[2*p+1])
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
	ADDQ(U32(256), kb0)
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
	ADDQ(blockBytes, kbBlock)
	SUBQ(U8(16), n)
	DECQ(nb)
	JNZ(LabelRef(name + "_block"))
	Store(mx, ReturnIndex(0))
	VZEROUPPER()
	RET()
}

// genTiledValues: acc[d] = fma(e[p], v_p[d], acc[d]) for p < n in order,
// vb in the block layout: 64 elements (four independent chains of 16
// lanes) at a time, then 16. With rows = 2 (tiledValues2, ZMM only) it
// does so for two rows over the same values at once (acc0 with e0, acc1
// with e1, each row's FMAs in its own order): one row's four chains of 16
// lanes wait on the FMA latency, two rows' eight keep both FMA pipes busy,
// and each row of V is loaded once for both (AVX2's YMM kernel already
// runs eight chains per row).
func genTiledValues(w tiledISA, rows int) {
	name := "tiledValues" + w.name
	var acc, e []reg.GPVirtual
	if rows == 1 {
		TEXT(name, NOSPLIT, "func(acc, e, vb *float32, n, hp int)")
		Doc(name + " sets acc[d] = fma(e[p], v_p[d], acc[d]) for p < n in order, the rows v_p in the tiled block layout vb, position p in block p/16 (hp a positive multiple of 16, n ≥ 1).")
		Pragma("noescape")
		acc, e = []reg.GPVirtual{loadGP("acc")}, []reg.GPVirtual{loadGP("e")}
	} else {
		name = "tiledValues2" + w.name
		TEXT(name, NOSPLIT, "func(acc0, acc1, e0, e1, vb *float32, n, hp int)")
		Doc(name + " is tiledValues" + w.name + "(acc0, e0, vb, n, hp) and tiledValues" + w.name + "(acc1, e1, vb, n, hp) at once.")
		Pragma("noescape")
		acc, e = []reg.GPVirtual{loadGP("acc0"), loadGP("acc1")}, []reg.GPVirtual{loadGP("e0"), loadGP("e1")}
	}
	vb, n, hp := loadGP("vb"), loadGP("n"), loadGP("hp")
	blockBytes := blockBytesOf(hp)
	SHRQ(U8(4), hp) // chunks of 16 left
	step := func(label string, chunks int) {
		Label(name + "_" + label)
		CMPQ(hp, U8(chunks))
		JL(LabelRef(name + "_" + label + "_end"))
		regs := 16 * chunks / w.lanes
		a := make([][]reg.VecVirtual, rows) // a[row][i]
		for r := range a {
			a[r] = make([]reg.VecVirtual, regs)
		}
		for i := range regs {
			for r := range rows {
				a[r][i] = w.vec()
				VMOVUPS(Mem{Base: acc[r], Disp: 4 * w.lanes * i}, a[r][i])
			}
		}
		ep := make([]reg.GPVirtual, rows)
		for r := range rows {
			ep[r] = GP64()
			MOVQ(e[r], ep[r])
		}
		vblk, k := GP64(), GP64()
		MOVQ(vb, vblk)
		MOVQ(n, k)
		Label(name + "_" + label + "_block")
		vp, j := GP64(), GP64()
		MOVQ(vblk, vp)
		MOVQ(U32(16), j)
		Label(name + "_" + label + "_pos")
		wt := make([]reg.VecVirtual, rows)
		for r := range rows {
			wt[r] = w.vec()
			VBROADCASTSS(Mem{Base: ep[r]}, wt[r])
		}
		for i := range regs {
			c, l := i*w.lanes/16, i*w.lanes%16 // chunk, first lane
			src := Mem{Base: vp, Disp: 1024*c + 4*l}
			if rows == 1 {
				VFMADD231PS(src, wt[0], a[0][i])
				continue
			}
			v := w.vec()
			VMOVUPS(src, v)
			for r := range rows {
				VFMADD231PS(v, wt[r], a[r][i])
			}
		}
		for r := range rows {
			ADDQ(U8(4), ep[r])
		}
		ADDQ(U8(64), vp)
		DECQ(k)
		JZ(LabelRef(name + "_" + label + "_store"))
		DECQ(j)
		JNZ(LabelRef(name + "_" + label + "_pos"))
		ADDQ(blockBytes, vblk)
		JMP(LabelRef(name + "_" + label + "_block"))
		Label(name + "_" + label + "_store")
		for i := range regs {
			for r := range rows {
				VMOVUPS(a[r][i], Mem{Base: acc[r], Disp: 4 * w.lanes * i})
			}
		}
		for r := range rows {
			ADDQ(U32(64*chunks), acc[r])
		}
		ADDQ(U32(1024*chunks), vb)
		SUBQ(U8(chunks), hp)
		JMP(LabelRef(name + "_" + label))
		Label(name + "_" + label + "_end")
	}
	step("four", 4)
	step("one", 1)
	VZEROUPPER()
	RET()
}

// validInBlock returns min(n, 16) in a new register, 0 if n ≤ 0: the valid
// positions of a block with n valid positions left.
func validInBlock(n reg.GPVirtual) reg.GPVirtual {
	rem, lim := GP64(), GP64()
	MOVQ(n, rem)
	MOVQ(U32(16), lim)
	CMPQ(rem, lim)
	CMOVQGT(lim, rem)
	XORQ(lim, lim)
	CMPQ(rem, lim)
	CMOVQLT(lim, rem)
	return rem
}

// blockBytesOf returns the bytes of one block (16 positions of hp floats).
func blockBytesOf(hp reg.GPVirtual) reg.GPVirtual {
	b := GP64()
	MOVQ(hp, b)
	SHLQ(U8(6), b)
	return b
}
