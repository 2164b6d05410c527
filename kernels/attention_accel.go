package kernels

// Fast paths of the unfused attention (attentionJob.matmul) for an F16
// cache: whole-context kernels replacing the per-position loops, when the
// implementation has them. Each computes exactly what the loop it replaces
// computes (TestAttentionSameAsGeneric).

// attnKernels are an implementation's whole-context attention kernels for
// an F16 cache; nil fields (and the generic table) use the loops.
type attnKernels struct {
	// scores sets out[p] = dotF16(q, k[offs[p]:][:len(q)])·scale; len(q)
	// is a positive multiple of 64.
	scores func(q []float32, k []uint16, offs []int, scale float32, out []float32)
	// round sets x[i] = roundF16(x[i]·a).
	round func(x []float32, a float32)
	// values sets lanes (64·hd) to zero, then adds w[p]·v[offs[p]:][:hd]
	// into lanes[(p mod 64)·hd:] for every p with w[p] ≠ 0, as axpyF16.
	values func(lanes, w []float32, v []uint16, offs []int, hd int)
}

// fastScores computes the scores of every position in ws.offs into sc
// with the accelerated kernel, if there is one for this cache and head
// size, and reports whether it did.
func (j *attentionJob) fastScores(ws *workerScratch, q, sc []float32) bool {
	if j.k.attn.scores == nil || j.kv.Type != KVF16 || len(q)%64 != 0 || len(q) == 0 {
		return false
	}
	j.k.attn.scores(q, j.kv.K16, ws.offs, j.a.Scale, sc[:len(ws.offs)])
	return true
}

// fastRound rounds the probabilities p·inv to the cache precision.
func (j *attentionJob) fastRound(p []float32, inv float32) bool {
	if j.k.attn.round == nil || j.kv.Type != KVF16 {
		return false
	}
	j.k.attn.round(p, inv)
	return true
}

// fastValues sets ws.lanes to the accumulated weighted values.
func (j *attentionJob) fastValues(ws *workerScratch, w []float32) bool {
	if j.k.attn.values == nil || j.kv.Type != KVF16 {
		return false
	}
	j.k.attn.values(ws.lanes, w[:len(ws.offs)], j.kv.V16, ws.offs, len(ws.lanes)/64)
	return true
}
