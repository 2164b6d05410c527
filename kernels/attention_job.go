package kernels

import (
	"fmt"
	"math"
)

// attnTile is one query tile: tokens first ≤ i < end (at most AttnTile) of
// sequence seq.
type attnTile struct{ seq, first, end int32 }

// attentionJob: task = tile·Heads + head, over the query tiles of the call
// (AttnTile tokens of one sequence, for one query head); for AttnTiled
// task = tile·KVHeads + KV head, for that KV head's query heads
// (taskHeads). Tasks past the real tiles (a plan's worst-case count,
// Attention.Tiles) return at once.
type attentionJob struct {
	a       *Attention
	kv      *KVLayer
	k       *impl
	tiles   []attnTile // the call's real tiles, in sequence order
	scratch []workerScratch
}

func (j *attentionJob) run(worker, task int) {
	a := j.a
	t, h, h1 := j.taskHeads(task)
	if t >= len(j.tiles) {
		return // padding tile: beyond the step's real work
	}
	tl := j.tiles[t]
	ws := &j.scratch[worker]
	if a.Mode == AttnTiled {
		j.tiled(ws, tl, h, h1)
		return
	}
	ctx := 0
	for i := tl.first; i < tl.end; i++ {
		ctx = max(ctx, int(a.Positions[i])+1)
	}
	// The tile's tokens share one sequence, so one offset table (for its
	// longest context) serves them all: token i reads its prefix, from its
	// window's first position ws.lo.
	all := j.offsets(ws, a.BlockTables[tl.seq], j.tileFrom(tl), ctx, h)
	for i := int(tl.first); i < int(tl.end); i++ {
		ws.offs = all[:a.Positions[i]+1]
		ws.lo = a.windowStart(a.Positions[i])
		j.token(ws, i, h)
	}
	ws.offs, ws.lo = all, 0
}

// windowStart is the first position a token at pos attends to.
func (a *Attention) windowStart(pos int32) int {
	if a.Window <= 0 {
		return 0
	}
	return max(0, int(pos)-a.Window+1)
}

// tileFrom is the first position any token of tl attends to (its first
// token's window start: positions grow within a sequence's tokens).
func (j *attentionJob) tileFrom(tl attnTile) int {
	return j.a.windowStart(j.a.Positions[tl.first])
}

// offsets sets ws.offs to the cache offsets of positions 0..ctx−1 of the
// sequence with block table table, for query head h, and returns them.
// Positions in blocks wholly before from (outside every window of the
// tile) get the offset of position from, a row that exists: the table's
// entries of those blocks are not read. It panics on a block id outside the
// cache, so that every row [off, off+HeadDim) lies within K and V: the
// accelerated kernels rely on it.
func (j *attentionJob) offsets(ws *workerScratch, table []int32, from, ctx, h int) []int {
	kv := j.kv
	hd, bs := kv.HeadDim, kv.BlockSize
	g := h / (j.a.Heads / kv.KVHeads)
	blocks := kv.Slots() / bs
	ws.offs = grow(ws.offs, ctx)
	from = min(from, ctx-1)
	first := from / bs * bs
	defer func() {
		for p := range first {
			ws.offs[p] = ws.offs[from]
		}
	}()
	for p, b := first, first/bs; p < ctx; b++ {
		if uint(table[b]) >= uint(blocks) { // every row read lies in the cache
			panic(fmt.Sprintf("kernels: block %d of a table is %d, outside the cache's %d blocks", b, table[b], blocks))
		}
		base := kv.RowOffset(int(table[b])*bs, g) // the head's rows of the block follow each other
		for o := 0; o < bs && p < ctx; o, p = o+1, p+1 {
			ws.offs[p] = base + o*hd
		}
	}
	return ws.offs
}

// token computes token i's attention for query head h over the positions
// in ws.offs (its whole context, in order).
func (j *attentionJob) token(ws *workerScratch, i, h int) {
	a, hd := j.a, j.kv.HeadDim
	q := a.Q[(i*a.Heads+h)*hd:][:hd]
	out := a.Out[(i*a.Heads+h)*hd:][:hd]
	ws.head = h
	if a.Mode == AttnMatMul {
		j.matmul(ws, j.query(ws, q, j.kv.Type), out)
	} else {
		j.flash(ws, j.query(ws, q, j.flashType()), out)
	}
}

// query returns q rounded to the precision of typ, in ws.q.
func (j *attentionJob) query(ws *workerScratch, q []float32, typ KVType) []float32 {
	ws.q = grow(ws.q, len(q))
	if typ == KVF16 { // through the halves: the vector conversion
		ws.k16 = j.toF16(ws.k16, q)
		for d, h := range ws.k16 {
			ws.q[d] = f16Table[h]
		}
		return ws.q
	}
	for d, v := range q {
		ws.q[d] = roundKV(typ, v)
	}
	return ws.q
}

// round rounds v to the cache's element precision.
func (j *attentionJob) round(v float32) float32 { return roundKV(j.kv.Type, v) }

// roundKV rounds v to the element precision of typ.
func roundKV(typ KVType, v float32) float32 {
	switch typ {
	case KVF16:
		return roundF16(v)
	case KVBF16:
		return roundBF16(v)
	}
	return v
}

// flashType is the element type flash attention works in: llama.cpp casts
// an F32 cache to F16 before its flash attention, so F32 runs as F16.
func (j *attentionJob) flashType() KVType {
	if j.kv.Type == KVF32 {
		return KVF16
	}
	return j.kv.Type
}

// flash is ggml's flash-attention recurrence over the positions in ws.offs
// (ggml_compute_forward_flash_attn_ext_f16_one_chunk, which llama.cpp runs
// for a single query row over fewer than 512 cells).
//
// bit-exact contract: q is rounded to the flash type (F16 for F16 and F32
// caches, BF16 for BF16); an F32 cache's K and V rows are rounded to F16.
// For each position in order: s = dot(q, K[p])·Scale; if s > M, ms =
// expf(M−s), M = s, vs = 1 and the accumulator is scaled by ms (F16:
// scaleF16); else vs = expf(s−M); then acc += vs·V[p] (F16: madF16 on a
// half-precision accumulator; BF16: axpyB16 in float32); S = fma(S, ms, vs).
// out = acc·(1/S).
func (j *attentionJob) flash(ws *workerScratch, q, out []float32) {
	hd := len(q)
	f16 := j.flashType() == KVF16
	if f16 {
		ws.acc16 = grow(ws.acc16, hd)
		clear(ws.acc16)
	} else {
		ws.acc = grow(ws.acc, hd)
		clear(ws.acc)
	}
	m, sum := float32(math.Inf(-1)), float32(0)
	for _, off := range ws.offs[ws.lo:] { // ggml skips masked (−∞) positions

		var s float32
		if j.kv.Type == KVF32 {
			ws.k16 = j.toF16(ws.k16, j.kv.K32[off:off+hd])
			s = j.k.dotF16(q, ws.k16) * j.a.Scale
		} else {
			s = j.score(q, off) * j.a.Scale
		}
		ms, vs := float32(1), float32(1)
		if s > m {
			ms = expf(m - s)
			m = s
			if f16 {
				j.k.scaleF16(ws.acc16, ms)
			} else {
				j.k.scaleF32(ws.acc, ms)
			}
		} else {
			vs = expf(s - m)
		}
		switch j.kv.Type {
		case KVF16:
			j.k.madF16(ws.acc16, vs, j.kv.V16[off:off+hd])
		case KVBF16:
			j.k.axpyB16(ws.acc, vs, j.kv.V16[off:off+hd])
		default:
			ws.k16 = j.toF16(ws.k16, j.kv.V32[off:off+hd])
			j.k.madF16(ws.acc16, vs, ws.k16)
		}
		sum = fma32(sum, ms, vs)
	}
	if j.a.Sinks != nil {
		j.flashSink(ws, out, f16, m, sum)
		return
	}
	inv := 1 / sum
	if f16 {
		for d, v := range ws.acc16 {
			out[d] = f16Table[v] * inv
		}
		return
	}
	for d, v := range ws.acc {
		out[d] = v * inv
	}
}

// matmul is ggml's unfused attention (flash attention off) over the
// positions in ws.offs.
//
// bit-exact contract, per (token, head), with p = 0..ctx−1 the positions
// (ggml's KV cells: a sequence's cell is its position, and ggml pads the
// context to a multiple of 256 with masked cells that contribute zeros):
//   - s[p] = dot(q, K[p])·Scale, q rounded to the cache precision and dot
//     the cache type's dot product (dotF16Generic, dotF32Generic, ...);
//   - softmax over s as softmaxGeneric, the context zero-padded to whole
//     16-element blocks (ggml's masked cells: exp = 0), so every block
//     takes vexp;
//   - the probabilities are rounded to the cache precision and
//     out[d] = Σp prob[p]·V[p][d] as the cache type's dot product over
//     positions (ggml multiplies the transposed V cache by them): for F16
//     and F32, lane p mod 64 accumulates with fused multiply-adds in
//     increasing p, then reduce64; for BF16 see valuesBF16. ggml's context,
//     padded to a multiple of 256, leaves no tail.
func (j *attentionJob) matmul(ws *workerScratch, q, out []float32) {
	hd, ctx := len(q), len(ws.offs)
	ws.scores = grow(ws.scores, (ctx+15)&^15)
	sc := ws.scores
	if !j.fastScores(ws, q, sc) {
		for p, off := range ws.offs {
			sc[p] = j.score(q, off) * j.a.Scale
		}
	}
	for p := range ws.lo { // outside the window: ggml's mask adds −∞
		sc[p] = float32(math.Inf(-1))
	}
	m := float32(math.Inf(-1))
	for _, s := range sc[:ctx] {
		m = max(m, s)
	}
	for p := ctx; p < len(sc); p++ {
		sc[p] = float32(math.Inf(-1))
	}
	var inv float32
	if j.a.Sinks != nil {
		inv = j.softmaxSink(sc, m, ws.head)
	} else {
		inv = float32(1 / j.k.softmaxExp(sc, m))
	}
	if !j.fastRound(sc[:ctx], inv) {
		for p := range ws.offs {
			sc[p] = j.round(sc[p] * inv)
		}
	}
	ws.lanes = grow(ws.lanes, 64*hd)
	if j.kv.Type == KVBF16 {
		clear(ws.lanes)
		j.valuesBF16(ws, out)
		return
	}
	if !j.fastValues(ws, sc) {
		clear(ws.lanes)
		for p, off := range ws.offs {
			w := sc[p]
			if w == 0 {
				continue // adds exact zeros: the lane is unchanged
			}
			lane := ws.lanes[p%64*hd:][:hd]
			if j.kv.Type == KVF16 {
				j.k.axpyF16(lane, w, j.kv.V16[off:off+hd])
			} else {
				j.k.axpyF32(lane, w, j.kv.V32[off:off+hd])
			}
		}
	}
	j.k.reduceLanes(out, ws.lanes)
}

// valuesBF16 is the value product of matmul for a BF16 cache, in
// dotBF16Generic's layout over positions: lane (p mod 64)/2 of 32 takes
// positions in pairs, the odd one first; registers 0 (lanes 0..15) and 1
// (16..31) are reduced by reduce16 and summed in float64. The
// probabilities in ws.scores are already rounded to bfloat16, so every
// product is exact.
func (j *attentionJob) valuesBF16(ws *workerScratch, out []float32) {
	hd, sc := len(out), ws.scores
	for p := 0; p < len(ws.offs); p += 2 {
		lane := ws.lanes[(p%64)/32*16*hd+(p%32)/2*hd:][:hd]
		if p+1 < len(ws.offs) && sc[p+1] != 0 {
			j.k.axpyB16(lane, sc[p+1], j.kv.V16[ws.offs[p+1]:][:hd])
		}
		if sc[p] != 0 {
			j.k.axpyB16(lane, sc[p], j.kv.V16[ws.offs[p]:][:hd])
		}
	}
	var r0, r1 [16]float32
	for d := range out {
		for l := range r0 {
			r0[l], r1[l] = ws.lanes[l*hd+d], ws.lanes[(16+l)*hd+d]
		}
		out[d] = float32(float64(reduce16(&r0)) + float64(reduce16(&r1)))
	}
}

// reduceLanes sets out[d] to reduce64 of lanes[k·len(out)+d], k = 0..63.
func reduceLanes(out, lanes []float32) {
	hd := len(out)
	var acc [64]float32
	for d := range out {
		for k := range acc {
			acc[k] = lanes[k*hd+d]
		}
		out[d] = reduce64(&acc)
	}
}

// score returns q·K[off:off+len(q)].
func (j *attentionJob) score(q []float32, off int) float32 {
	switch j.kv.Type {
	case KVF16:
		return j.k.dotF16(q, j.kv.K16[off:off+len(q)])
	case KVBF16:
		return j.k.dotBF16(q, j.kv.K16[off:off+len(q)])
	}
	return j.k.dotF32(q, j.kv.K32[off:off+len(q)])
}

// toF16 returns x rounded to half precision, in buf.
func (j *attentionJob) toF16(buf []uint16, x []float32) []uint16 {
	buf = grow(buf, len(x))
	j.k.toF16(buf, x)
	return buf
}
