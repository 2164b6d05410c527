package main

import (
	"fmt"
	"strings"

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
	genTiledValues(tiledZMM, 1, false)
	genTiledValues(tiledZMM, 2, false)
	genTiledF16()
	genTiledBlockQ8(tiledZMM)
}

func genTiledAVX2() {
	genTiledBlockF16(tiledYMM)
	genTiledScoresYMM()
	genTiledValues(tiledYMM, 1, false)
	genTiledF16AVX2()
	genTiledBlockQ8(tiledYMM)
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
	acc := blockChunks(name, q, m,
		func(p int) Op { return Mem{Base: kb, Disp: 64 * p} },
		func() { ADDQ(U32(1024), kb) })
	endScoresBlock(name, acc, sc, run, out, n, nb, func() { ADDQ(U32(1024), kb) })
}

// blockChunks emits the chunk loop of a ZMM scores kernel over a block's
// 16 positions: m chunks of 16 elements of the query at q against k(p)
// (position p's current chunk; next moves k to the next chunk), the
// first as products, then fused; it returns the accumulators (position p
// in acc[tiledAccFor(p)]) and leaves the loop for label _reduce.
func blockChunks(name string, q, m reg.GPVirtual, k func(p int) Op, next func()) []reg.VecVirtual {
	acc := make([]reg.VecVirtual, 16)
	qz := ZMM()
	VMOVUPS(Mem{Base: q}, qz)
	for p := range 16 {
		i := tiledAccFor(p)
		acc[i] = ZMM()
		VMULPS(k(p), qz, acc[i])
	}
	DECQ(m)
	JZ(LabelRef(name + "_reduce"))
	Label(name + "_chunk")
	ADDQ(U8(64), q)
	next()
	VMOVUPS(Mem{Base: q}, qz)
	for p := range 16 {
		VFMADD231PS(k(p), qz, acc[tiledAccFor(p)])
	}
	DECQ(m)
	JNZ(LabelRef(name + "_chunk"))
	return acc
}

// endScoresBlock emits the end of a ZMM scores kernel's block loop: the
// reduction (at label _reduce), the next block (next advances the
// source), and after the last block the largest valid score as the
// result.
func endScoresBlock(name string, acc []reg.VecVirtual, sc, run reg.VecVirtual, out, n, nb reg.GPVirtual, next func()) {
	Label(name + "_reduce")
	reduceScores(acc, sc, run, out, n)
	ADDQ(U8(64), out)
	next()
	SUBQ(U8(16), n)
	DECQ(nb)
	JNZ(LabelRef(name + "_block"))
	Store(hmax(run), ReturnIndex(0))
	VZEROUPPER()
	RET()
}

// reduce16x16 reduces 16 accumulators as reduce16 each into one vector:
// lane L holds accumulator tiledAccFor(L)'s sum.
func reduce16x16(acc []reg.VecVirtual) reg.VecVirtual {
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
	c := pairs(acc, f128, 0x44, 0xEE)   // chunks: v[0..3]+v[8..11], v[4..7]+v[12..15] of each
	e := pairs(c, f128, 0x88, 0xDD)     // chunk k of e[j]: h[i]+h[i+4] of accumulator 4j+k
	f := pairs(e, f32, 0x44, 0xEE)      // q0+q2, q1+q3
	return pairs(f, f32, 0x88, 0xDD)[0] // lane 4k+j: accumulator 4j+k's sum
}

// reduceScores reduces the 16 accumulators of a block's positions (acc[i]
// holding position p with i = tiledAccFor(p)) as reduce16 each, scales
// them, stores the 16 scores at out and lets the valid ones (min(n, 16),
// none if n ≤ 0) join the running maximum run, lane by lane.
func reduceScores(acc []reg.VecVirtual, sc, run reg.VecVirtual, out, n reg.GPVirtual) {
	g := []reg.VecVirtual{reduce16x16(acc)}
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
	acc := quadChunks(name, q, m,
		func(p, half int) Op { return Mem{Base: kb, Disp: 64*p + 32*half} },
		func() { ADDQ(U32(1024), kb) })
	Label(name + "_reduce")
	reduceQuad(acc, sx, out)
	ADDQ(U32(256), kb0)
	DECQ(quad)
	JNZ(LabelRef(name + "_quad"))
	endQuadScores(name, n, nb, out0, mx, func() { ADDQ(blockBytes, kbBlock) })
}

// endQuadScores emits the end of a YMM scores kernel's block loop: the
// block's valid scores into mx, the next block (next advances the
// source), and after the last block mx as the result.
func endQuadScores(name string, n, nb, out0 reg.GPVirtual, mx reg.VecVirtual, next func()) {
	maxValid(name, n, out0, mx)
	next()
	SUBQ(U8(16), n)
	DECQ(nb)
	JNZ(LabelRef(name + "_block"))
	Store(mx, ReturnIndex(0))
	VZEROUPPER()
	RET()
}

// quadChunks emits the chunk loop of a YMM scores kernel over four
// positions: m chunks of 16 elements of the query at q against k(p, half)
// (lanes 8·half.. of position p's current chunk; next moves k to the next
// chunk), the first as products, then fused; it returns the accumulator
// pairs and leaves the loop for label _reduce.
func quadChunks(name string, q, m reg.GPVirtual, k func(p, half int) Op, next func()) []reg.VecVirtual {
	lo, hi := YMM(), YMM()
	VMOVUPS(Mem{Base: q}, lo)
	VMOVUPS(Mem{Base: q, Disp: 32}, hi)
	acc := make([]reg.VecVirtual, 8)
	for p := range 4 {
		acc[2*p], acc[2*p+1] = YMM(), YMM()
		VMULPS(k(p, 0), lo, acc[2*p])
		VMULPS(k(p, 1), hi, acc[2*p+1])
	}
	DECQ(m)
	JZ(LabelRef(name + "_reduce"))
	Label(name + "_chunk")
	ADDQ(U8(64), q)
	next()
	VMOVUPS(Mem{Base: q}, lo)
	VMOVUPS(Mem{Base: q, Disp: 32}, hi)
	for p := range 4 {
		VFMADD231PS(k(p, 0), lo, acc[2*p])
		VFMADD231PS(k(p, 1), hi, acc[2*p+1])
	}
	DECQ(m)
	JNZ(LabelRef(name + "_chunk"))
	return acc
}

// reduceQuad stores at out, and advances out past, the scores of four
// positions, each accumulated in a YMM pair (acc[2p], acc[2p+1]) and
// reduced as reduce16, times sx.
func reduceQuad(acc []reg.VecVirtual, sx reg.VecVirtual, out reg.GPVirtual) {
	for p := range 4 {
		s := reduce16V(acc[2*p], acc[2*p+1])
		VMULSS(sx, s, s)
		VMOVSS(s, Mem{Base: out, Disp: 4 * p})
	}
	ADDQ(U8(16), out)
}

// maxValid folds the block's valid scores at out0 (min(n, 16), none if
// n ≤ 0) into mx, one at a time.
func maxValid(name string, n, out0 reg.GPVirtual, mx reg.VecVirtual) {
	rem := validInBlock(n)
	TESTQ(rem, rem)
	JZ(LabelRef(name + "_max_done"))
	Label(name + "_max")
	VMAXSS(Mem{Base: out0}, mx, mx)
	ADDQ(U8(4), out0)
	DECQ(rem)
	JNZ(LabelRef(name + "_max"))
	Label(name + "_max_done")
}

// genTiledValues: acc[d] = fma(e[p], v_p[d], acc[d]) for p < n in order,
// vb in the block layout: 64 elements (four independent chains of 16
// lanes) at a time, then 16. With rows = 2 (tiledValues2, ZMM only) it
// does so for two rows over the same values at once (acc0 with e0, acc1
// with e1, each row's FMAs in its own order): one row's four chains of 16
// lanes wait on the FMA latency, two rows' eight keep both FMA pipes busy,
// and each row of V is loaded once for both (AVX2's YMM kernel already
// runs eight chains per row). With f16 the rows v_p are F16 cache rows in
// place (tiledf16.go), converted as they are read.
func genTiledValues(w tiledISA, rows int, f16 bool) {
	src := valuesSrc{f16: f16}
	name, acc, e := src.head(w, rows)
	src.load()
	step := func(label string, chunks int) {
		Label(name + "_" + label)
		CMPQ(src.chunks, U8(chunks))
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
		ep, k := src.positions(e)
		Label(name + "_" + label + "_block")
		vp, j := src.block()
		MOVQ(U32(16), j)
		Label(name + "_" + label + "_pos")
		wt := make([]reg.VecVirtual, rows)
		for r := range rows {
			wt[r] = w.vec()
			VBROADCASTSS(Mem{Base: ep[r]}, wt[r])
		}
		for i := range regs {
			c, l := i*w.lanes/16, i*w.lanes%16 // chunk, first lane
			if f16 {
				v := w.vec()
				VCVTPH2PS(Mem{Base: vp, Disp: 2 * w.lanes * i}, v)
				for r := range rows {
					VFMADD231PS(v, wt[r], a[r][i])
				}
				continue
			}
			from := Mem{Base: vp, Disp: 1024*c + 4*l}
			if rows == 1 {
				VFMADD231PS(from, wt[0], a[0][i])
				continue
			}
			v := w.vec()
			VMOVUPS(from, v)
			for r := range rows {
				VFMADD231PS(v, wt[r], a[r][i])
			}
		}
		for r := range rows {
			ADDQ(U8(4), ep[r])
		}
		src.nextPosition(vp)
		DECQ(k)
		JZ(LabelRef(name + "_" + label + "_store"))
		DECQ(j)
		JNZ(LabelRef(name + "_" + label + "_pos"))
		src.nextBlock()
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
		src.nextChunks(chunks)
		SUBQ(U8(chunks), src.chunks)
		JMP(LabelRef(name + "_" + label))
		Label(name + "_" + label + "_end")
	}
	step("four", 4)
	step("one", 1)
	VZEROUPPER()
	RET()
}

// valuesSrc is where a values kernel reads V: consecutive blocks of the
// tiled block layout, or F16 rows in place.
type valuesSrc struct {
	f16    bool
	eArgs  []string      // the probability arguments
	chunks reg.GPVirtual // chunks of 16 elements of each row left
	n      reg.GPVirtual // block layout: positions
	vb     reg.GPVirtual // block layout: the current chunks' first block
	bytes  reg.GPVirtual // block layout: bytes per block
	rs     reg.GPVirtual // F16: bytes per row
	doff   reg.GPVirtual // F16: bytes into each row of the current chunks
	vblk   reg.GPVirtual // block layout: the current block; F16: its entry in bases
}

// head emits the kernel's head and returns its name, accumulator pointers
// and, for the block layout, probability pointers (F16 reloads those per
// step).
func (s *valuesSrc) head(w tiledISA, rows int) (name string, acc, e []reg.GPVirtual) {
	name, sig := "tiledValues"+w.name, "func(acc, e, vb *float32, n, hp int)"
	doc := name + " sets acc[d] = fma(e[p], v_p[d], acc[d]) for p < n in order, the rows v_p in the tiled block layout vb, position p in block p/16 (hp a positive multiple of 16, n ≥ 1)."
	if s.f16 {
		name, sig = "tiledValuesF16"+w.name, "func(acc, e *float32, src *uint16, bases *int, n, hd int)"
		doc = name + " is tiledValues" + w.name + " over the F16 rows of blocks of 16 in place (hd a positive multiple of 16): position p's row at src[bases[p/16]+(p%16)·hd:]."
	}
	args := []string{"acc"}
	if rows > 1 {
		one := name
		name = strings.Replace(name, "Values", fmt.Sprintf("Values%d", rows), 1)
		var accs, es, calls []string
		for r := range rows {
			accs, es = append(accs, fmt.Sprintf("acc%d", r)), append(es, fmt.Sprintf("e%d", r))
			if s.f16 {
				calls = append(calls, fmt.Sprintf("%s(acc%d, e%d, src, bases, n, hd)", one, r, r))
			} else {
				calls = append(calls, fmt.Sprintf("%s(acc%d, e%d, vb, n, hp)", one, r, r))
			}
		}
		sig = strings.Replace(sig, "acc, e", strings.Join(append(accs, es...), ", "), 1)
		args = accs
		doc = name + " is " + strings.Join(calls, ", ") + " at once."
	}
	TEXT(name, NOSPLIT, sig)
	Doc(doc)
	Pragma("noescape")
	for _, a := range args {
		acc = append(acc, loadGP(a))
	}
	for _, a := range args {
		s.eArgs = append(s.eArgs, strings.Replace(a, "acc", "e", 1))
	}
	if !s.f16 {
		for _, a := range s.eArgs {
			e = append(e, loadGP(a))
		}
	}
	return name, acc, e
}

// load loads the arguments every step reads.
func (s *valuesSrc) load() {
	if s.f16 {
		s.chunks = loadGP("hd")
		s.rs = GP64()
		MOVQ(s.chunks, s.rs)
		SHLQ(U8(1), s.rs) // bytes per row
		SHRQ(U8(4), s.chunks)
		s.doff = GP64()
		XORQ(s.doff, s.doff)
		return
	}
	s.vb, s.n, s.chunks = loadGP("vb"), loadGP("n"), loadGP("hp")
	s.bytes = blockBytesOf(s.chunks)
	SHRQ(U8(4), s.chunks) // chunks of 16 left
}

// positions starts a step: the probability pointers of each row and the
// count of positions.
func (s *valuesSrc) positions(e []reg.GPVirtual) (ep []reg.GPVirtual, k reg.GPVirtual) {
	if s.f16 {
		for _, a := range s.eArgs {
			ep = append(ep, loadGP(a))
		}
		s.vblk, k = loadGP("bases"), loadGP("n")
		return ep, k
	}
	for _, x := range e {
		p := GP64()
		MOVQ(x, p)
		ep = append(ep, p)
	}
	s.vblk, k = GP64(), GP64()
	MOVQ(s.vb, s.vblk)
	MOVQ(s.n, k)
	return ep, k
}

// block returns the current block's first row (in the current chunks)
// and a new position counter.
func (s *valuesSrc) block() (vp, j reg.GPVirtual) {
	vp, j = GP64(), GP64()
	if s.f16 {
		Load(Param("src"), j)
		MOVQ(Mem{Base: s.vblk}, vp)
		LEAQ(Mem{Base: j, Index: vp, Scale: 2}, vp)
		ADDQ(s.doff, vp)
		return vp, j
	}
	MOVQ(s.vblk, vp)
	return vp, j
}

func (s *valuesSrc) nextPosition(vp reg.GPVirtual) {
	if s.f16 {
		ADDQ(s.rs, vp)
		return
	}
	ADDQ(U8(64), vp)
}

func (s *valuesSrc) nextBlock() {
	if s.f16 {
		ADDQ(U8(8), s.vblk)
		return
	}
	ADDQ(s.bytes, s.vblk)
}

func (s *valuesSrc) nextChunks(chunks int) {
	if s.f16 {
		ADDQ(U32(32*chunks), s.doff)
		return
	}
	ADDQ(U32(1024*chunks), s.vb)
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
