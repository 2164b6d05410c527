package kernels

import "fmt"

// AttentionMatMul computes the attention a on kv (as Attention) and then
// dst = a.Out · woᵀ (as MatMul, n = the call's tokens) in one pool job: the
// (query tile, head) tasks of the attention, each converting its head's
// output for wo when wo's activation blocks divide the head dimension
// (else a conversion phase follows), then the output projection. Results
// are bit-identical to Attention followed by MatMul.
//
// It panics on inconsistent shapes (as Attention and MatMul do).
func (p *Pool) AttentionMatMul(a *Attention, kv *KVLayer, dst []float32, wo Weight) {
	n := len(a.Positions)
	checkAttention(a, kv, n)
	if wo.Cols != a.Heads*kv.HeadDim {
		panic(fmt.Sprintf("kernels: AttentionMatMul: a %d×%d output weight after %d heads of dim %d",
			wo.Rows, wo.Cols, a.Heads, kv.HeadDim))
	}
	checkMatMul(p.impl, dst, wo, a.Out, n)
	if n == 0 {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	f, k := &p.fused, p.impl
	mm := &f.mm[0]
	*mm = planMatmul(k, &f.acts[0], k.dotFor(wo), dst, wo, a.Out, n, p.threads)
	f.subs = grow(f.subs, p.threads)
	f.attn = attnProjJob{at: &p.at, wo: mm, subs: f.subs, epilogue: mm.colsEpilogue(kv.HeadDim)}
	f.phased.add(&f.attn, p.planAttention(a, kv))
	f.attn.ahead = len(p.at.tiles) == 1 // its tasks hold every token of their heads
	if !f.attn.epilogue {
		p.addConvert(0, false, []*matmulJob{mm}, n, nil, nil, nil, 0)
	}
	f.phased.add(mm, mm.tasks())
	p.runPhased(&f.phased)
	p.at.a, p.at.kv = nil, nil
	f.release()
}

// attnProjJob is the attention's tasks, each followed, with epilogue, by
// the conversion of its (tokens, head) outputs for the output projection.
type attnProjJob struct {
	at       *attentionJob
	wo       *matmulJob
	subs     []actRow // (workers) scratch row views
	epilogue bool
	ahead    bool // the epilogue also writes the records' look-ahead (one tile)
}

// finishPhase completes the records of the projection's input when the
// tasks, each holding one tile of tokens, could not.
func (j *attnProjJob) finishPhase() {
	if j.epilogue && !j.ahead {
		j.wo.converted()
	}
}

func (j *attnProjJob) run(worker, task int) {
	j.at.run(worker, task)
	t, h0, h1 := j.at.taskHeads(task)
	if !j.epilogue || t >= len(j.at.tiles) {
		return
	}
	tl, hd := j.at.tiles[t], j.at.kv.HeadDim
	j.wo.convertCols(&j.subs[worker], int(tl.first), int(tl.end), h0*hd, h1*hd)
	if j.ahead {
		j.wo.sAheadCols(h0*hd, h1*hd)
	}
}
