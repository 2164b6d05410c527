package kernels

import "math"

// attentionJob: task = token·Heads + head.
type attentionJob struct {
	a       *Attention
	kv      *KVLayer
	k       *impl
	seqOf   []int32 // (n) sequence of each token
	scratch []workerScratch
}

func (j *attentionJob) run(worker, task int) {
	a, kv := j.a, j.kv
	i, h := task/a.Heads, task%a.Heads
	hd, bs := kv.HeadDim, kv.BlockSize
	table := a.BlockTables[j.seqOf[i]]
	ctx := int(a.Positions[i]) + 1
	stride := kv.KVHeads * hd
	head := h / (a.Heads / kv.KVHeads) * hd
	ws := &j.scratch[worker]
	ws.offs = grow(ws.offs, ctx)
	for p := range ws.offs {
		ws.offs[p] = (int(table[p/bs])*bs+p%bs)*stride + head
	}
	q := j.query(ws, a.Q[(i*a.Heads+h)*hd:][:hd])
	out := a.Out[(i*a.Heads+h)*hd:][:hd]
	if a.Mode == AttnMatMul {
		j.matmul(ws, q, out)
	} else {
		j.flash(ws, q, out)
	}
}

// query returns q rounded to the cache's precision, in ws.q.
func (j *attentionJob) query(ws *workerScratch, q []float32) []float32 {
	ws.q = grow(ws.q, len(q))
	for d, v := range q {
		ws.q[d] = j.round(v)
	}
	return ws.q
}

// round rounds v to the cache's element precision.
func (j *attentionJob) round(v float32) float32 {
	switch j.kv.Type {
	case KVF16:
		return roundF16(v)
	case KVBF16:
		return roundBF16(v)
	}
	return v
}

// flash is ggml's flash-attention recurrence over the positions in ws.offs.
func (j *attentionJob) flash(ws *workerScratch, q, out []float32) {
	hd := len(q)
	f16 := j.kv.Type == KVF16
	if f16 {
		ws.acc16 = grow(ws.acc16, hd)
		clear(ws.acc16)
	} else {
		ws.acc = grow(ws.acc, hd)
		clear(ws.acc)
	}
	m, sum := float32(math.Inf(-1)), float32(0)
	for _, off := range ws.offs {
		s := j.score(q, off) * j.a.Scale
		ms, vs := float32(1), float32(1)
		if s > m {
			ms = exp32(m - s)
			m = s
			if f16 {
				j.k.scaleF16(ws.acc16, ms)
			} else {
				j.k.scaleF32(ws.acc, ms)
			}
		} else {
			vs = exp32(s - m)
		}
		switch j.kv.Type {
		case KVF16:
			j.k.madF16(ws.acc16, vs, j.kv.V16[off:off+hd])
		case KVBF16:
			j.k.axpyB16(ws.acc, vs, j.kv.V16[off:off+hd])
		default:
			j.k.axpyF32(ws.acc, vs, j.kv.V32[off:off+hd])
		}
		sum = fma32(sum, ms, vs)
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

// matmul is ggml's unfused attention over the positions in ws.offs.
func (j *attentionJob) matmul(ws *workerScratch, q, out []float32) {
	hd := len(q)
	ws.scores = grow(ws.scores, len(ws.offs))
	sc := ws.scores
	m := float32(math.Inf(-1))
	for p, off := range ws.offs {
		sc[p] = j.score(q, off) * j.a.Scale
		m = max(m, sc[p])
	}
	var sum float64
	for p, s := range sc {
		sc[p] = exp32(s - m)
		sum += float64(sc[p])
	}
	inv := float32(1 / sum)
	for p, s := range sc {
		sc[p] = j.round(s * inv)
	}
	clear(out)
	for p, off := range ws.offs {
		switch j.kv.Type {
		case KVF16:
			j.k.axpyF16(out, sc[p], j.kv.V16[off:off+hd])
		case KVBF16:
			j.k.axpyB16(out, sc[p], j.kv.V16[off:off+hd])
		default:
			j.k.axpyF32(out, sc[p], j.kv.V32[off:off+hd])
		}
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
