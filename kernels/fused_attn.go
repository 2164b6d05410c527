package kernels

import "fmt"

// AttentionMatMul computes the attention a on kv (as Attention) and then
// dst = a.Out · woᵀ (as MatMul, n = the call's tokens) in one pool job of
// three phases: the (query tile, head) tasks of the attention; the
// conversion of the attention rows for wo; the output projection. Results
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
	f.phased.add(&p.at, p.planAttention(a, kv))
	mm := &f.mm[0]
	*mm = planMatmul(k, &f.acts[0], k.dotFor(wo), dst, wo, a.Out, n, p.threads)
	p.addConvert(0, false, []*matmulJob{mm}, n, nil, nil, nil, 0)
	f.phased.add(mm, mm.tasks())
	p.runPhased(&f.phased)
	p.at.a, p.at.kv = nil, nil
	f.release()
}
