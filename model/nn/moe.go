package nn

import (
	"fmt"
	"math"
	"slices"

	"pagoda/kernels"
	"pagoda/model"
)

// Gating is how a mixture of experts turns a token's router logits into
// the experts it runs and their weights.
type Gating int

const (
	// GatingSoftmax: probabilities p = softmax(logits) over every expert;
	// the K most probable experts, their p as weights, divided by the sum
	// of the K when MoE.NormTopK (Qwen3-MoE's norm_topk_prob; Qwen2-MoE
	// and Mixtral likewise). llama.cpp's LLAMA_EXPERT_GATING_FUNC_TYPE_SOFTMAX.
	GatingSoftmax Gating = iota
	// GatingTopKSoftmax: the K largest logits; their softmax (over the K
	// alone) as weights (gpt-oss; llama.cpp's
	// LLAMA_EXPERT_GATING_FUNC_TYPE_SOFTMAX_WEIGHT).
	GatingTopKSoftmax
)

// minTopKSum is the floor of the sum the chosen weights are divided by
// (llama.cpp clamps it to the smallest normal half, against a division by
// zero).
const minTopKSum = 6.103515625e-5

// MoE is a mixture-of-experts feed-forward, in place of a Block's FFN:
//
//	logits = Router·h (+ Router.Bias)
//	(e_r, w_r), r < K  = Gating(logits)   the choices, by rank
//	y = Σ_r w_r · Experts[e_r](h)         summed in the rank order r
//
// with each expert a gated feed-forward (Gate, Up, Down, Act). The
// experts split over tensor-parallel ranks as dense feed-forwards do
// (Megatron: every expert's Gate and Up by hidden units, Down by input
// columns; the router is replicated, so every rank routes alike), or,
// with expert parallelism (Options.ExpertParallel), stay whole, each rank
// holding a contiguous range of them (ExpertRange) and running only the
// choices of its experts: its partial sum, in the rank order of those
// choices, goes into the block's all-reduce as Down's partial products
// do (with Megatron's split, y is a sum over ranks of partial products;
// with experts', a sum over ranks of partial sums of whole experts: the
// two round differently). Their weights are packed for the arithmetic
// like every Linear. A step's
// tokens are grouped by expert (kernels.Pool.MoE), each used expert's
// weights read once for all its tokens; a token's result depends only on
// its own row (the sum in rank order, never in arrival order).
//
// Extension points: Gating (gpt-oss's top-k-then-softmax), Router.Bias
// (gpt-oss's router bias), the experts' biases (gpt-oss's
// ffn_*_exps.bias, Experts[i].Gate/Up/Down.Bias: split with their
// matrices, Down's kept by rank 0, or whole by the rank holding the
// expert under expert parallelism: added exactly once), Act (an
// activation per family).
type MoE struct {
	Router   Linear // (experts, Dim) ffn_gate_inp, replicated
	Experts  []FFN  // ffn_gate_exps/ffn_up_exps/ffn_down_exps, one slice each
	K        int    // experts per token (expert_used_count)
	Gating   Gating
	NormTopK bool        // GatingSoftmax: renormalise the K weights to sum 1
	Act      kernels.GLU // the experts' gate activation

	kern kernels.MoE // the experts as the kernels read them (prepare)
	// Expert parallelism: Experts are experts [first, first+len(Experts))
	// of total; total is 0 when this rank holds them all.
	first, total int
}

// count is the number of experts the router chooses among.
func (e *MoE) count() int {
	if e.total > 0 {
		return e.total
	}
	return len(e.Experts)
}

// keepExperts makes e hold only experts [lo, hi), whole (expert
// parallelism): their matrices are no longer split, and each keeps its
// down bias.
func (e *MoE) keepExperts(lo, hi int) {
	e.first, e.total = lo, len(e.Experts)
	e.Experts = e.Experts[lo:hi:hi]
	for i := range e.Experts {
		f := &e.Experts[i]
		f.Gate.Role, f.Up.Role, f.Down.Role = Replicated, Replicated, Replicated
	}
}

// localIDs maps the routed expert ids to this rank's experts, -1 for the
// others' (kernels.MoEBuffers.IDs); nothing without expert parallelism.
func (e *MoE) localIDs(ids []int32) {
	if e.total == 0 {
		return
	}
	lo, hi := int32(e.first), int32(e.first+len(e.Experts))
	for i, id := range ids {
		if id >= lo && id < hi {
			ids[i] = id - lo
		} else {
			ids[i] = -1
		}
	}
}

// linears lists the router and every expert's matrices.
func (e *MoE) linears() []*Linear {
	out := []*Linear{&e.Router}
	for i := range e.Experts {
		f := &e.Experts[i]
		out = append(out, &f.Gate, &f.Up, &f.Down)
	}
	return out
}

// prepare points the kernels' expert list at the (split, packed) weights.
func (e *MoE) prepare() {
	e.kern = kernels.MoE{Experts: make([]kernels.Expert, len(e.Experts)), Act: e.Act}
	for i, f := range e.Experts {
		e.kern.Experts[i] = kernels.Expert{Gate: f.Gate.W, Up: f.Up.W, Down: f.Down.W,
			GateBias: f.Gate.Bias, UpBias: f.Up.Bias, DownBias: f.Down.Bias}
	}
}

// Route turns n tokens' router logits (n, experts; overwritten) into their
// K choices ids and weights (n, K), by rank, as llama.cpp's build_moe_ffn
// does on the CPU: ggml_soft_max, the K largest by ggml_argsort (ties, which
// std::sort leaves unspecified, to the lower id), ggml_get_rows of the
// probabilities, then ggml_sum_rows (a float64 sum), the clamp and ggml_div.
func (e *MoE) Route(logits []float32, ids []int32, weights []float32, n int) {
	ne, k := e.count(), e.K
	for t := range n {
		row := logits[t*ne : (t+1)*ne]
		if e.Router.Bias != nil {
			kernels.Add(row, e.Router.Bias)
		}
		if e.Gating == GatingSoftmax {
			kernels.Softmax(row, ne)
		}
		id, w := ids[t*k:(t+1)*k], weights[t*k:(t+1)*k]
		topK(row, id)
		for r, i := range id {
			w[r] = row[i]
		}
		switch {
		case e.Gating == GatingTopKSoftmax:
			kernels.Softmax(w, k)
		case e.NormTopK:
			var sum float64
			for _, v := range w {
				sum += float64(v)
			}
			s := max(float32(sum), minTopKSum)
			for r := range w {
				w[r] /= s
			}
		}
	}
}

// topK writes into ids the indices of the len(ids) largest values of row,
// largest first, ties to the lower index.
func topK(row []float32, ids []int32) {
	k := len(ids)
	for r := range ids {
		ids[r] = -1
	}
	for i, v := range row {
		if math.IsNaN(float64(v)) {
			continue
		}
		// Insert i among the chosen if it beats the last of them.
		pos := k
		for pos > 0 && (ids[pos-1] < 0 || row[ids[pos-1]] < v) {
			pos--
		}
		if pos == k {
			continue
		}
		copy(ids[pos+1:], ids[pos:k-1])
		ids[pos] = int32(i)
	}
	for r, id := range ids {
		if id < 0 { // NaN logits: the lowest ids not chosen yet
			for c := int32(0); ; c++ {
				if !slices.Contains(ids, c) {
					ids[r] = c
					break
				}
			}
		}
	}
}

// moe runs the mixture of experts of block ly on the nr rows x into dst
// (may be s.xb): RMSNorm·FFNNorm and the router (one pool job), the
// routing on the caller, then the experts (one pool job).
func (m *Model) moe(s *scratch, ly *Block, x, dst []float32, nr int) {
	c, e := &m.local, ly.MoE
	d, ne := nr*c.Dim, e.count()
	normed := s.xb[:d]
	logits, ids, w := s.route[:nr*ne], s.ids[:nr*e.K], s.weights[:nr*e.K]
	s.mm[0] = kernels.MatMulOut{Dst: logits, W: e.Router.W}
	m.pool.NormMatMulN(s.mm[:1], normed, x, ly.FFNNorm, c.RMSEps, nr)
	m.tp.progress()
	e.Route(logits, ids, w, nr)
	e.localIDs(ids)
	s.moeb = kernels.MoEBuffers{Dst: dst, X: normed, IDs: ids, Weights: w, K: e.K}
	m.pool.MoE(&e.kern, &s.moeb, nr)
	s.moeb = kernels.MoEBuffers{}
}

// moeSizes returns the largest expert count and experts per token of the
// model's mixtures (0, 0 for a dense model).
func moeSizes(layers []Block) (experts, k int) {
	for i := range layers {
		if e := layers[i].MoE; e != nil {
			experts, k = max(experts, e.count()), max(k, e.K)
		}
	}
	return experts, k
}

// MoEConfig is Config (neox as there) with Experts for an architecture
// that is always a mixture of experts: a missing expert_count is an error.
func (m *Meta) MoEConfig(neox bool) (model.Config, error) {
	cfg, err := m.Config(neox)
	if err != nil {
		return cfg, err
	}
	if err := m.Experts(&cfg); err != nil {
		return cfg, err
	}
	if cfg.Experts == 0 {
		return cfg, fmt.Errorf("%s: %s missing", m.Arch, m.Key("expert_count"))
	}
	return cfg, nil
}

// Experts reads a mixture of experts' metadata (expert_count,
// expert_used_count, expert_feed_forward_length) into c; a model without
// expert_count is dense and keeps zeros. As llama.cpp, an absent expert
// length is feed_forward_length / expert_used_count.
func (m *Meta) Experts(c *model.Config) error {
	if !m.Has("expert_count") {
		return nil
	}
	c.Experts = m.Uint("expert_count")
	c.ExpertsUsed = m.Uint("expert_used_count")
	if m.Err != nil {
		return m.Err
	}
	c.ExpertHiddenDim = m.UintOr("expert_feed_forward_length", c.HiddenDim/c.ExpertsUsed)
	if m.Err != nil {
		return m.Err
	}
	if c.ExpertsUsed > c.Experts || c.ExpertHiddenDim == 0 {
		return fmt.Errorf("%s: %d experts used of %d, expert length %d", m.Arch, c.ExpertsUsed, c.Experts, c.ExpertHiddenDim)
	}
	return nil
}

// MoE loads the mixture of experts of layer prefix p ("blk.N") at the
// shape of the builder's Config (Experts, ExpertsUsed, ExpertHiddenDim):
// ffn_gate_inp.weight, the router (experts × Dim, optional bias), and the
// 3-D ffn_gate_exps, ffn_up_exps (experts of ExpertHiddenDim × Dim) and
// ffn_down_exps (experts of Dim × ExpertHiddenDim), one Linear per expert
// and matrix (views of the file). Gating is GatingSoftmax with the chosen
// weights renormalised; set Gating and NormTopK for other families.
func (b *Builder) MoE(p string, act kernels.GLU) *MoE {
	c := b.Cfg
	if c.Experts == 0 || c.ExpertsUsed == 0 {
		b.Fail(p+".ffn_gate_inp.weight", "a mixture of experts needs expert_count and expert_used_count")
		return nil
	}
	e := &MoE{Router: b.Linear(p+".ffn_gate_inp", c.Experts, c.Dim, Replicated), K: c.ExpertsUsed,
		Gating: GatingSoftmax, NormTopK: true, Act: act}
	gate := b.Experts(p+".ffn_gate_exps", c.Experts, c.ExpertHiddenDim, c.Dim, Column)
	up := b.Experts(p+".ffn_up_exps", c.Experts, c.ExpertHiddenDim, c.Dim, Column)
	down := b.Experts(p+".ffn_down_exps", c.Experts, c.Dim, c.ExpertHiddenDim, Row)
	if b.err != nil {
		return e
	}
	e.Experts = make([]FFN, c.Experts)
	for i := range e.Experts {
		e.Experts[i] = FFN{Gate: gate[i], Up: up[i], Down: down[i], Act: act}
	}
	b.expertBiases(p, e)
	return e
}

// Experts loads the 3-D tensor name+".weight" of n matrices of rows×cols
// (GGUF dims [cols, rows, n]) as n Linears in role r, views of the file:
// expert i is rows [i·rows, (i+1)·rows) of the tensor read as (n·rows)×cols.
func (b *Builder) Experts(name string, n, rows, cols int, r Role) []Linear {
	w := name + ".weight"
	data, info, err := b.F.TensorData(w)
	if err != nil {
		b.Fail(w, "%v", err)
		return nil
	}
	if len(info.Dims) != 3 || info.Dims[0] != cols || info.Dims[1] != rows || info.Dims[2] != n {
		b.Fail(w, "shape %v, want [%d %d %d]", info.Dims, cols, rows, n)
		return nil
	}
	all := kernels.Weight{Type: info.Type, Data: data, Rows: n * rows, Cols: cols}
	if err := all.Validate(); err != nil {
		b.Fail(w, "%v", err)
		return nil
	}
	out := make([]Linear, n)
	for i := range out {
		out[i] = Linear{W: rowRange(all, i*rows, (i+1)*rows), Role: r, Tensor: w, Row0: i * rows}
	}
	return out
}
