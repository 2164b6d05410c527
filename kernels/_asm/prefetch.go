package main

import (
	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
)

// Prefetch hints of 64-byte lines: they touch no memory architecturally
// and change no result, only when lines arrive.

func genPrefetch() {
	genPrefetchLines()
	genPrefetchRows()
}

// genPrefetchLines: lines consecutive lines from p, into L2 (PREFETCHT1,
// as prefetchWeights for the kernels that stream): a waiting worker hints
// up to half of L2's worth of the next phase's weights.
func genPrefetchLines() {
	name := "prefetchLines"
	TEXT(name, NOSPLIT, "func(p *byte, lines int)")
	Doc(name + " prefetches lines 64-byte lines from p (lines ≥ 1).")
	Pragma("noescape")
	p, lines := loadGP("p"), loadGP("lines")
	Label(name + "_line")
	PREFETCHT1(Mem{Base: p})
	ADDQ(U8(64), p)
	DECQ(lines)
	JNZ(LabelRef(name + "_line"))
	RET()
}

// genPrefetchRows: lines lines from base+offs[p]·size for each p < n,
// into L2 (PREFETCHT1): AttnTiled hints a whole chunk of KV blocks at a
// time, and hints into L1 would wait on its few miss buffers (on Zen 4,
// BenchmarkAttentionDecodeLayers/smollm2: T0 21.5 ms, none 21.2, T1 13.9).
func genPrefetchRows() {
	name := "prefetchRows"
	TEXT(name, NOSPLIT, "func(base *byte, offs *int, n, size, lines int)")
	Doc(name + " prefetches lines 64-byte lines from base+offs[p]·size for each p < n (n ≥ 1, lines ≥ 1).")
	Pragma("noescape")
	base, offs, n, size, lines := loadGP("base"), loadGP("offs"), loadGP("n"), loadGP("size"), loadGP("lines")
	Label(name + "_row")
	a, l := GP64(), GP64()
	MOVQ(Mem{Base: offs}, a)
	IMULQ(size, a)
	ADDQ(base, a)
	MOVQ(lines, l)
	Label(name + "_line")
	PREFETCHT1(Mem{Base: a})
	ADDQ(U8(64), a)
	DECQ(l)
	JNZ(LabelRef(name + "_line"))
	ADDQ(U8(8), offs)
	DECQ(n)
	JNZ(LabelRef(name + "_row"))
	RET()
}
