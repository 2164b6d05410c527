package kernels

import "math"

// AttnTiled: the fast arithmetic's attention (attentionJob.tiled). One
// task computes one query tile for every query head of one KV head
// (Heads/KVHeads heads sharing its K and V rows, grouped-query attention),
// converting each block of 16 cache positions to float32 once for all of
// the task's rows (token, head) instead of once per row, four blocks at a
// time, and computing the scores of a block as sixteen fused dot products
// reduced together. A task of few rows (a decode's) reads F16 rows in
// place where an implementation can (tiledF16), converting as it reads.
//
// The arithmetic of one row (token i, query head h, context c = its
// position + 1), with hp the head dimension rounded up to 16 (q and the
// rows zero-padded):
//
//	lane[l]  = q[l]·k[l]; then lane[l] = fma(q[16m+l], k[16m+l], lane[l])
//	           for m = 1..hp/16−1             (per position p < c)
//	s[p]     = reduce16(lane)·Scale
//	e[p]     = exp(s[p] − max s) as softmaxExp over s padded with −∞ to
//	           a multiple of 16, which also returns the sum S (max s: the
//	           largest by >; either zero when it is a zero, which gives
//	           the same e)
//	acc[d]   = fma(e[p], v[p][d], acc[d]) for p = 0..c−1 in order, from 0
//	out[d]   = acc[d]·float32(1/S)
//
// q, K and V are used at their stored precision (the query is not rounded
// to the cache type, the probabilities are not rounded). Every row depends
// only on its own query, its context and the cache, never on the tile, the
// batch or the thread count; every implementation reproduces the generic
// kernels bit for bit (TestAttentionSameAsGeneric).

// tiledKernels are an implementation's kernels of AttnTiled; the generic
// ones are the reference.
type tiledKernels struct {
	// blockF16 converts the F16 rows at offs (at most 16, each hd ≥ 1
	// elements) into dst in the block layout: element 16m+l of position p
	// at dst[(16m+p)·16+l], m < hp/16; positions past len(offs) and
	// elements past hd are zero.
	blockF16 func(dst []float32, src []uint16, offs []int, hd int)
	// blockQ8 is blockF16 of Q8_0 rows (hd a multiple of 32; offs in
	// elements, see attention_q8.go).
	blockQ8 func(dst []float32, src []byte, offs []int, hd int)
	// scores sets out[p] = reduce16(lane_p)·scale for the positions of
	// len(out)/16 consecutive blocks in kb (len(q) = hp, a multiple of 16;
	// block i at kb[16·hp·i:]) and returns the largest of out[p] for p < n
	// (−∞ for n = 0; 16·(blocks−1) < n ≤ 16·blocks otherwise).
	scores func(out, q, kb []float32, scale float32, n int) float32
	// values sets acc[d] = fma(e[p], v[p][d], acc[d]) for p < len(e) in
	// order, position p in block p/16 of vb (len(acc) = hp).
	values func(acc, e, vb []float32)
	// values2 is values(acc0, e0, vb) and values(acc1, e1, vb) (len(e0) =
	// len(e1)), at once where an implementation has a kernel for it.
	values2 func(acc0, acc1, e0, e1, vb []float32)
	// f16 reads F16 rows in place, or is nil.
	f16 *tiledF16
}

// tiledF16 is scores and values on blocks of 16 F16 cache rows in place
// instead of converted blocks: block i of a call is the 16 rows of hd =
// len(q) (= len(acc), a multiple of 16) halves at src[bases[i]+p·hd:],
// p < 16 (every one of them in src, the rows past the valid positions
// included: they are read, and count nowhere). The same arithmetic on the
// same values, so the same results; cheaper for tasks of few rows, which
// read each converted row once or twice (tiledF16Rows).
type tiledF16 struct {
	scores func(out, q []float32, src []uint16, bases []int, scale float32, n int) float32
	values func(acc, e []float32, src []uint16, bases []int)
	// scoresN is scores on rows query rows at once (one KV head's query
	// heads in a decode, over the same positions): row r's query at
	// q[r·hd:] (len(q) = rows·hd), its scores at out[r·ostride:], the
	// largest of them at mx[r]. It reports false, doing nothing, where an
	// implementation has no kernel for that many rows of that size.
	scoresN func(out []float32, ostride int, q []float32, rows int, src []uint16, bases []int, scale float32, n int, mx *[maxF16Rows]float32) bool
	// valuesN is values on rows g.acc[r], g.e[r], r < g.n ≤ 4 (one KV
	// head's query heads in a decode: every e[r] as long), at once where
	// an implementation has a kernel for that many rows, each V row then
	// converted once for all of them.
	valuesN func(g *valueRows, src []uint16, bases []int)
}

// valueRows are the rows of one tiledF16.valuesN call.
type valueRows struct {
	acc, e [maxF16Rows][]float32
	n      int
}

// tiledF16Rows is the most rows of a task that read F16 rows in place
// (with tiledKernels.f16), maxF16Rows at a time; more rows convert each
// block once. Eight, so that a decode of TinyLlama's or gpt-oss's 8 query
// heads per KV head reads in place too (32 sequences at context 160,
// TinyLlama's 22 layers: 3–5% faster than converted blocks,
// BenchmarkAttentionDecodeLayers). A variable for the benchmarks.
var tiledF16Rows = 2 * maxF16Rows

// maxF16Rows is the widest scoresN and valuesN kernel.
const maxF16Rows = 4

// withValues2 returns k with values2 set to two calls of values where it
// has no kernel of its own.
func (k tiledKernels) withValues2() tiledKernels {
	if k.values2 == nil {
		values := k.values
		k.values2 = func(acc0, acc1, e0, e1, vb []float32) {
			values(acc0, e0, vb)
			values(acc1, e1, vb)
		}
	}
	return k
}

// tiledChunk is the number of blocks the kernels take per call: 4 blocks
// of K or V (16 KiB of float32 at a head size of 64) stay in L1 while a
// task's rows read them.
const tiledChunk = 4

var genericTiled = tiledKernels{blockF16: blockF16Generic, blockQ8: blockQ8Generic, scores: tiledScoresGeneric, values: tiledValuesGeneric}.withValues2()

// blockF16Generic is tiledKernels.blockF16.
func blockF16Generic(dst []float32, src []uint16, offs []int, hd int) {
	blockRows(dst, offs, hd, func(off, d int) float32 { return f16Table[src[off+d]] })
}

// pad16 is the head dimension hd rounded up to whole chunks of 16.
func pad16(hd int) int { return (hd + 15) &^ 15 }

// blockRows fills dst in the block layout with at(offs[p], d).
func blockRows(dst []float32, offs []int, hd int, at func(off, d int) float32) {
	dst = dst[:16*pad16(hd)]
	clear(dst)
	for p, off := range offs {
		for d := range hd {
			dst[(d/16*16+p)*16+d%16] = at(off, d)
		}
	}
}

// tiledScoresGeneric is tiledKernels.scores.
func tiledScoresGeneric(out, q, kb []float32, scale float32, n int) float32 {
	hp := len(q)
	for p := range out {
		var lane [16]float32
		for m := 0; m < hp/16; m++ {
			k := kb[p/16*16*hp+(16*m+p%16)*16:][:16]
			for l := range lane {
				if m == 0 {
					lane[l] = q[l] * k[l]
				} else {
					lane[l] = fma32(q[16*m+l], k[l], lane[l])
				}
			}
		}
		out[p] = reduce16(&lane) * scale
	}
	m := float32(math.Inf(-1))
	for _, s := range out[:n] {
		if s > m {
			m = s
		}
	}
	return m
}

// tiledValuesGeneric is tiledKernels.values.
func tiledValuesGeneric(acc, e, vb []float32) {
	hp := len(acc)
	for m := 0; m < hp/16; m++ {
		a := acc[16*m:][:16]
		for p, w := range e {
			v := vb[p/16*16*hp+(16*m+p%16)*16:][:16]
			for l := range a {
				a[l] = fma32(w, v[l], a[l])
			}
		}
	}
}

// headTasks is the number of tasks per query tile: one per KV head for
// AttnTiled, one per query head otherwise.
func (a *Attention) headTasks(kv *KVLayer) int {
	if a.Mode == AttnTiled {
		return kv.KVHeads
	}
	return a.Heads
}

// taskHeads returns the query tile of task and its query heads h0 ≤ h < h1.
func (j *attentionJob) taskHeads(task int) (t, h0, h1 int) {
	n := j.a.headTasks(j.kv)
	t, g := task/n, task%n
	per := j.a.Heads / n
	return t, g * per, (g + 1) * per
}

// tiledScratch bounds the scores a task keeps (rows × context, in
// floats): a tile's rows are taken in groups that fit it, each group
// converting the cache blocks it reads once. A variable for the tests.
var tiledScratch = 1 << 18

// tiled computes tile tl for query heads h0 ≤ h < h1 (one KV head's).
func (j *attentionJob) tiled(ws *workerScratch, tl attnTile, h0, h1 int) {
	a, heads := j.a, h1-h0
	ctx := 0
	for i := tl.first; i < tl.end; i++ {
		ctx = max(ctx, int(a.Positions[i])+1)
	}
	from := j.tileFrom(tl)
	offs := j.offsets(ws, a.BlockTables[tl.seq], from, ctx, h0)
	rows := int(tl.end-tl.first) * heads
	per := max(1, tiledScratch/pad16(ctx))
	for r0 := 0; r0 < rows; r0 += per {
		j.tiledRows(ws, tiledRows{first: int(tl.first), h0: h0, heads: heads, r0: r0, r1: min(r0+per, rows),
			from: from &^ 15}, offs)
	}
}

// tiledRows is a group of a task's rows: row r (r0 ≤ r < r1) is token
// first + r/heads, query head h0 + r%heads. Positions before from (a
// multiple of 16, at or before every row's window start) are not read.
type tiledRows struct{ first, h0, heads, r0, r1, from int }

// at returns the offset of row r's vector in Q and Out.
func (g tiledRows) at(a *Attention, r, hd int) int {
	return ((g.first+r/g.heads)*a.Heads + g.h0 + r%g.heads) * hd
}

// tiledRows computes the rows of g over the cache rows at offs (the
// context of the tile's last token).
func (j *attentionJob) tiledRows(ws *workerScratch, g tiledRows, offs []int) {
	a, kv, tk := j.a, j.kv, &j.k.tiled
	hd := kv.HeadDim
	hp := pad16(hd)
	rows := g.r1 - g.r0
	ctxOf := func(r int) int { return int(a.Positions[g.first+(g.r0+r)/g.heads]) + 1 }
	ctx := 0
	for r := range rows {
		ctx = max(ctx, ctxOf(r))
	}
	width := pad16(ctx)
	ws.scores = grow(ws.scores, rows*width)
	ws.acc = grow(ws.acc, rows*hp+2*rows)
	ws.block = grow(ws.block, tiledChunk*16*hp)
	acc, inv, mx := ws.acc[:rows*hp], ws.acc[rows*hp:][:rows], ws.acc[rows*hp+rows:][:rows]
	for r := range mx {
		mx[r] = float32(math.Inf(-1))
	}
	if hd != hp { // the queries zero-padded to whole chunks, once
		ws.q = grow(ws.q, rows*hp)
		clear(ws.q[:rows*hp])
		for r := range rows {
			copy(ws.q[r*hp:], a.Q[g.at(a, g.r0+r, hd):][:hd])
		}
	}
	qrow := func(r int) []float32 {
		if hd != hp {
			return ws.q[r*hp:][:hp]
		}
		return a.Q[g.at(a, g.r0+r, hd):][:hd]
	}
	const chunk = 16 * tiledChunk
	// The task reads K's chunks, then V's: each read is preceded by a
	// prefetch of the chunk after it.
	chunks := (ctx + chunk - 1) / chunk
	ahead := func(i int) {
		if i >= 2*chunks {
			return
		}
		s := kv.side(i >= chunks)
		if i >= chunks {
			i -= chunks
		}
		s.prefetch(offs[i*chunk:min((i+1)*chunk, ctx)], hd)
	}
	f16 := tk.f16
	if f16 == nil || kv.Type != KVF16 || kv.BlockSize%16 != 0 || hd != hp || rows > tiledF16Rows {
		f16 = nil
	}
	// bases lists the first row of each block of the chunk at b.
	bases := func(b int) []int {
		n := 0
		for p := b; p < min(b+chunk, ctx); p += 16 {
			ws.bases[n] = offs[p]
			n++
		}
		return ws.bases[:n]
	}
	// In place, rows of one token's consecutive query heads (a decode's)
	// take their scores at once.
	var q0 []float32
	if f16 != nil && rows > 1 && (g.r0/g.heads == (g.r1-1)/g.heads) {
		q0 = a.Q[g.at(a, g.r0, hd):][:rows*hd]
	}
	b0 := g.from
	ahead(b0 / chunk)
	for b := b0; b < ctx; b += chunk {
		ahead((b+chunk-1)/chunk + 1)
		var bs []int
		if f16 != nil {
			bs = bases(b)
		} else {
			j.blocks(ws.block, kv.side(false), offs[b:min(b+chunk, ctx)], hd)
		}
		if q0 != nil {
			j.scoresInPlace(ws, f16, q0, rows, width, b, bs, min(ctx-b, chunk), mx)
			continue
		}
		for r := range rows {
			if c := ctxOf(r); c > b {
				n := min(c-b, chunk)
				out := ws.scores[r*width+b:][:pad16(n)]
				var m float32
				if f16 != nil {
					m = f16.scores(out, qrow(r), kv.K16, bs, a.Scale, n)
				} else {
					m = tk.scores(out, qrow(r), ws.block, a.Scale, n)
				}
				if m > mx[r] {
					mx[r] = m
				}
			}
		}
	}
	for r := range rows {
		c := ctxOf(r)
		sc := ws.scores[r*width+b0 : r*width+pad16(c)]
		for p := c - b0; p < len(sc); p++ {
			sc[p] = float32(math.Inf(-1))
		}
		if lo := a.windowStart(int32(c-1)) - b0; lo > 0 { // outside the window
			mx[r] = float32(math.Inf(-1))
			for p := range sc[:c-b0] {
				if p < lo {
					sc[p] = float32(math.Inf(-1))
				}
				mx[r] = max(mx[r], sc[p])
			}
		}
		if a.Sinks != nil {
			inv[r] = j.softmaxSink(sc, mx[r], g.h0+(g.r0+r)%g.heads)
		} else {
			inv[r] = float32(1 / j.k.softmaxExp(sc, mx[r]))
		}
	}
	clear(acc)
	if b0 > 0 {
		ahead(chunks + b0/chunk) // the K loop's last hint was of V's first chunk
	}
	for b := b0; b < ctx; b += chunk {
		ahead(chunks + (b+chunk-1)/chunk + 1)
		var bs []int
		if f16 != nil {
			bs = bases(b)
		} else {
			j.blocks(ws.block, kv.side(true), offs[b:min(b+chunk, ctx)], hd)
		}
		if f16 != nil { // rows ≤ tiledF16Rows: at once, those over the same positions
			for r := 0; r < rows; {
				n := min(ctxOf(r)-b, chunk)
				g := &ws.vrows
				g.n = 0
				for ; r < rows && g.n < maxF16Rows && min(ctxOf(r)-b, chunk) == n; r++ {
					g.acc[g.n], g.e[g.n] = acc[r*hp:][:hp], ws.scores[r*width+b:][:max(n, 0)]
					g.n++
				}
				if n > 0 {
					f16.valuesN(g, kv.V16, bs)
				}
			}
			continue
		}
		for r := 0; r < rows; r++ {
			n := min(ctxOf(r)-b, chunk)
			if n <= 0 {
				continue
			}
			a0, e0 := acc[r*hp:][:hp], ws.scores[r*width+b:][:n]
			if r+1 < rows && min(ctxOf(r+1)-b, chunk) == n { // two rows over the same positions
				a1, e1 := acc[(r+1)*hp:][:hp], ws.scores[(r+1)*width+b:][:n]
				tk.values2(a0, a1, e0, e1, ws.block)
				r++
				continue
			}
			tk.values(a0, e0, ws.block)
		}
	}
	for r := range rows {
		out := a.Out[g.at(a, g.r0+r, hd):][:hd]
		for d, v := range acc[r*hp:][:hd] {
			out[d] = v * inv[r]
		}
	}
}

// scoresInPlace computes the scores of rows query rows at q0 (one token's
// consecutive query heads, row r at q0[r·hd:]) over the n positions from
// b of the F16 K rows in place at bases, row r's at ws.scores[r·width+b:],
// raising mx[r] to their largest: maxF16Rows rows at a time (scoresN),
// a row alone where no kernel takes them.
func (j *attentionJob) scoresInPlace(ws *workerScratch, f16 *tiledF16, q0 []float32, rows, width, b int, bases []int, n int, mx []float32) {
	a, hd := j.a, j.kv.HeadDim
	for r0 := 0; r0 < rows; r0 += maxF16Rows {
		nr := min(maxF16Rows, rows-r0)
		if nr > 1 && f16.scoresN(ws.scores[r0*width+b:], width, q0[r0*hd:][:nr*hd], nr, j.kv.K16, bases, a.Scale, n, &ws.smax) {
			for i, m := range ws.smax[:nr] {
				if m > mx[r0+i] {
					mx[r0+i] = m
				}
			}
			continue
		}
		for r := r0; r < r0+nr; r++ {
			m := f16.scores(ws.scores[r*width+b:][:pad16(n)], q0[r*hd:][:hd], j.kv.K16, bases, a.Scale, n)
			if m > mx[r] {
				mx[r] = m
			}
		}
	}
}

// blocks converts the cache rows at offs (K or V, at most tiledChunk
// blocks of them) into consecutive blocks of dst, the last one padded.
func (j *attentionJob) blocks(dst []float32, x kvSide, offs []int, hd int) {
	size := 16 * pad16(hd)
	for i := 0; i < len(offs); i += 16 {
		j.block(dst[i/16*size:][:size], x, offs[i:min(i+16, len(offs))], hd)
	}
}

// block converts the cache rows at offs (K or V) into dst in the block
// layout.
func (j *attentionJob) block(dst []float32, x kvSide, offs []int, hd int) {
	switch j.kv.Type {
	case KVF16:
		j.k.tiled.blockF16(dst, x.x16, offs, hd)
	case KVBF16:
		blockBF16(dst, x.x16, offs, hd)
	case KVQ8_0:
		j.k.tiled.blockQ8(dst, x.x8, offs, hd)
	default:
		blockF32(dst, x.x32, offs, hd)
	}
}

// blockBF16 is blockRows of BF16 rows, without a closure per element.
func blockBF16(dst []float32, src []uint16, offs []int, hd int) {
	dst = dst[:16*pad16(hd)]
	clear(dst)
	for p, off := range offs {
		for d, h := range src[off : off+hd] {
			dst[(d&^15+p)*16+d&15] = BF16ToF32(h)
		}
	}
}

// blockF32 is blockRows of F32 rows, 16 elements at a time.
func blockF32(dst []float32, src []float32, offs []int, hd int) {
	dst = dst[:16*pad16(hd)]
	clear(dst)
	for p, off := range offs {
		row := src[off : off+hd]
		for m := 0; m < hd; m += 16 {
			copy(dst[(m+p)*16:][:16], row[m:min(m+16, hd)])
		}
	}
}
