package kernels

import (
	"math"
	"math/rand/v2"
	"testing"

	"pagoda/gguf"
)

// fusedTokens are the batch sizes of the fused-call tests: decode, a few
// sequences, and prefills past convParallelMin (split conversions); with
// -short, one decode and one prefill.
func fusedTokens() []int {
	if testing.Short() {
		return []int{1, 17}
	}
	return []int{1, 3, 17, 40}
}

// fusedThreads are the thread counts of the fused-call tests (-short: 3,
// the race detector's case).
func fusedThreads() []int {
	if testing.Short() {
		return []int{3}
	}
	return []int{1, 2, 3}
}

// sameBits fails unless got and want are bit-identical.
func sameBits(t *testing.T, what string, got, want []float32) {
	t.Helper()
	for i := range want {
		if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
			t.Fatalf("%s: element %d = %v, separate kernels %v", what, i, got[i], want[i])
		}
	}
}

// nanVec returns n NaNs: outputs a call must overwrite.
func nanVec(n int) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(math.NaN())
	}
	return v
}

// TestNormMatMulN: NormMatMulN equals RMSNorm then MatMulN bit for bit,
// for same-format, mixed-format and fast-arithmetic sets, 1 to 3 threads.
func TestNormMatMulN(t *testing.T) {
	const cols = 256
	sets := map[string][]gguf.Type{
		"Q4_1x3":    {gguf.Q4_1, gguf.Q4_1, gguf.Q4_1},
		"Q4_0-Q8_0": {gguf.Q4_0, gguf.Q8_0, gguf.Q4_0},
		"K-mixed":   {gguf.Q4_K, gguf.Q6_K, gguf.Q4_1, gguf.F16},
		"F32":       {gguf.F32},
	}
	forEachImpl(t, func(t *testing.T, k *impl) {
		r := newRand(41)
		for name, types := range sets {
			ws := make([]Weight, len(types))
			for i, typ := range types {
				ws[i], _ = quantWeight(t, r, typ, 24+8*i, cols)
			}
			ws[0] = fast(k, ws[0])
			norm := randVec(r, cols, 1)
			for _, n := range fusedTokens() {
				x := randVec(r, n*cols, 1)
				ref := newPool(1, k)
				normed := make([]float32, n*cols)
				rmsNormRows(k, normed, x, norm, 1e-5)
				want := make([][]float32, len(ws))
				for i, w := range ws {
					want[i] = make([]float32, n*w.Rows)
					ref.MatMul(want[i], w, normed, n)
				}
				ref.Close()
				for _, threads := range fusedThreads() {
					p := newPool(threads, k)
					outs := make([]MatMulOut, len(ws))
					for i, w := range ws {
						outs[i] = MatMulOut{Dst: nanVec(n * w.Rows), W: w}
					}
					got := nanVec(n * cols)
					p.NormMatMulN(outs, got, x, norm, 1e-5, n)
					p.NormMatMulN(outs, got, x, norm, 1e-5, n) // reused scratch
					p.Close()
					sameBits(t, name+": normed", got, normed)
					for i := range outs {
						sameBits(t, name+": "+ws[i].Type.String(), outs[i].Dst, want[i])
					}
				}
			}
		}
	})
}

// mlpCase is the weights of one MLP test: dim and hidden sizes fit every
// type's blocks; hidden is not always a multiple of gluAlign (a short last
// block) nor of 16 (a SwiGLU tail).
type mlpCase struct {
	name           string
	gate, up, down gguf.Type
	dim, hidden    int
	fast           bool // gate, up and down take the fast arithmetic (Fast)
}

var mlpCases = []mlpCase{
	{"Q4_1", gguf.Q4_1, gguf.Q4_1, gguf.Q4_1, 128, 352, false},
	{"Q4_0-fast", gguf.Q4_0, gguf.Q4_0, gguf.Q4_0, 128, 224, true},
	{"Q4_1-fast", gguf.Q4_1, gguf.Q4_1, gguf.Q4_1, 128, 352, true},
	{"K-fast", gguf.Q4_K, gguf.Q4_K, gguf.Q6_K, 256, 512, true},
	{"mixed-fast", gguf.Q4_1, gguf.Q5_0, gguf.Q8_0, 128, 224, true},
	{"Q8_0-Q4_0", gguf.Q8_0, gguf.Q8_0, gguf.Q4_0, 96, 160, false},
	{"K", gguf.Q4_K, gguf.Q4_K, gguf.Q6_K, 256, 512, false},
	{"mixed", gguf.Q4_1, gguf.Q4_0, gguf.Q8_0, 128, 224, false},
	{"F32", gguf.F32, gguf.F32, gguf.F16, 48, 100, false},
}

// newMLP builds c's weights.
func newMLP(t *testing.T, r *rand.Rand, k *impl, c mlpCase) *MLP {
	m := &MLP{Norm: randVec(r, c.dim, 1), Eps: 1e-6}
	m.Gate, _ = quantWeight(t, r, c.gate, c.hidden, c.dim)
	m.Up, _ = quantWeight(t, r, c.up, c.hidden, c.dim)
	m.Down, _ = quantWeight(t, r, c.down, c.dim, c.hidden)
	if c.fast {
		m.Gate, m.Up, m.Down = fast(k, m.Gate), fast(k, m.Up), fast(k, m.Down)
	}
	return m
}

// mlpReference runs m with the separate kernels on one thread.
func mlpReference(k *impl, m *MLP, x []float32, n int) (normed, out []float32) {
	dim, hidden := m.Gate.Cols, m.Gate.Rows
	ref := newPool(1, k)
	defer ref.Close()
	normed = make([]float32, n*dim)
	rmsNormRows(k, normed, x, m.Norm, m.Eps)
	gate, up := make([]float32, n*hidden), make([]float32, n*hidden)
	ref.MatMulN([]MatMulOut{{gate, m.Gate}, {up, m.Up}}, normed, n)
	for t := range n {
		k.glu(m.Act, gate[t*hidden:(t+1)*hidden], gate[t*hidden:(t+1)*hidden], up[t*hidden:(t+1)*hidden])
	}
	out = make([]float32, n*m.Down.Rows)
	ref.MatMul(out, m.Down, gate, n)
	return normed, out
}

func newMLPBuffers(m *MLP, x []float32, n int) *MLPBuffers {
	return &MLPBuffers{Dst: nanVec(n * m.Down.Rows), X: x, Normed: nanVec(len(x)),
		Gate: nanVec(n * m.Gate.Rows), Up: nanVec(n * m.Up.Rows)}
}

// TestMLP: Pool.MLP equals RMSNorm, MatMulN of gate and up, SwiGLU (GeGLU
// in every other case) and the down MatMul bit for bit, for every
// implementation, 1 to 3 threads.
func TestMLP(t *testing.T) {
	forEachImpl(t, func(t *testing.T, k *impl) {
		r := newRand(43)
		for i, c := range mlpCases {
			m := newMLP(t, r, k, c)
			m.Act = GLU(i % 2)
			for _, n := range fusedTokens() {
				x := randVec(r, n*c.dim, 1)
				normed, want := mlpReference(k, m, x, n)
				for _, threads := range fusedThreads() {
					p := newPool(threads, k)
					b := newMLPBuffers(m, x, n)
					p.MLP(m, b, n)
					p.MLP(m, b, n) // reused scratch
					p.Close()
					sameBits(t, c.name+": normed", b.Normed, normed)
					sameBits(t, c.name+": output", b.Dst, want)
					b.Dst = b.Normed // the aliasing Forward uses
					p = newPool(threads, k)
					p.MLP(m, b, n)
					p.Close()
					sameBits(t, c.name+": output into the normed rows", b.Dst, want)
				}
			}
		}
	})
}

// TestGLUJobTokenBlocks: the gate/up/SwiGLU tasks give the same rows, and
// their epilogue the same converted input of the down product, when they
// also split the tokens (as long prefills on the tiled kernels do).
func TestGLUJobTokenBlocks(t *testing.T) {
	forEachImpl(t, func(t *testing.T, k *impl) {
		r := newRand(44)
		for _, c := range mlpCases {
			m := newMLP(t, r, k, c)
			const n = 23
			x := randVec(r, n*c.dim, 1)
			normed := make([]float32, n*c.dim)
			rmsNormRows(k, normed, x, m.Norm, m.Eps)
			b := newMLPBuffers(m, x, n)
			var acts [3]actRows
			gate := planMatmul(k, &acts[0], k.dotFor(m.Gate), b.Gate, m.Gate, normed, n, 2)
			up := planMatmul(k, &acts[1], k.dotFor(m.Up), b.Up, m.Up, normed, n, 2)
			down := planMatmul(k, &acts[2], k.dotFor(m.Down), b.Dst, m.Down, b.Gate, n, 2)
			gate.convert(0, n)
			gate.converted()
			up.convert(0, n)
			up.converted()
			g := newGLUJob(k, &gate, &up, &down, n)
			g.acts, g.subs = 5, make([]actRow, 1)
			for task := range g.tasks() {
				g.run(0, task)
			}
			if !g.epilogue {
				down.convert(0, n)
			}
			down.converted()
			for task := range down.tasks() {
				down.run(0, task)
			}
			_, want := mlpReference(k, m, x, n)
			sameBits(t, c.name+": down product", b.Dst, want)
		}
	})
}

// attnProjCases are TestAttentionMatMul's batches: one decode, one short
// prefill (one tile), and decodes
// with a prefill; head dimensions that 32-element blocks divide (the
// attention tasks convert their heads) and do not (a conversion phase).
var attnProjCases = []struct {
	mode        AttnMode
	hd          int
	ctx, newTok []int
}{
	{AttnMatMul, 32, []int{5}, []int{1}},
	{AttnMatMul, 32, []int{9}, []int{6}},
	{AttnMatMul, 32, []int{5, 9, 30}, []int{1, 3, 20}},
	{AttnFlash, 32, []int{5, 9, 30}, []int{1, 3, 20}},
	{AttnMatMul, 16, []int{5, 9, 30}, []int{1, 3, 20}},
	{AttnFlash, 16, []int{7}, []int{1}},
	{AttnTiled, 32, []int{5, 9, 30}, []int{1, 3, 20}},
	{AttnTiled, 32, []int{40}, []int{40}},
}

// TestAttentionMatMul: AttentionMatMul equals Attention then MatMul bit
// for bit, both attention modes, mixed decode and prefill batches.
func TestAttentionMatMul(t *testing.T) {
	forEachImpl(t, func(t *testing.T, k *impl) {
		r := newRand(45)
		for _, typ := range []gguf.Type{gguf.Q4_1, gguf.Q8_0, gguf.F16} {
			for _, tc := range attnProjCases {
				c := newAttnCaseHeads(r, KVF16, 4, 4, 2, tc.hd, tc.ctx, tc.newTok)
				c.att.Mode = tc.mode
				n := len(c.att.Positions)
				wo, _ := quantWeight(t, r, typ, 40, 4*tc.hd)
				ref := newPool(1, k)
				ref.Attention(&c.att, c.kv)
				wantAtt := append([]float32(nil), c.att.Out...)
				want := make([]float32, n*wo.Rows)
				ref.MatMul(want, wo, wantAtt, n)
				ref.Close()
				for _, threads := range fusedThreads() {
					p := newPool(threads, k)
					c.att.Out = nanVec(len(wantAtt))
					dst := nanVec(len(want))
					p.AttentionMatMul(&c.att, c.kv, dst, wo)
					p.AttentionMatMul(&c.att, c.kv, dst, wo) // reused scratch
					p.Close()
					sameBits(t, "attention", c.att.Out, wantAtt)
					sameBits(t, typ.String()+" projection", dst, want)
				}
			}
		}
	})
}

// TestFusedJobs: each fused call is one pool job, and they allocate
// nothing once warmed up.
func TestFusedJobs(t *testing.T) {
	r := newRand(46)
	p := NewPool(2)
	defer p.Close()
	m := newMLP(t, r, def, mlpCases[0])
	const n = 2
	x := randVec(r, n*m.Gate.Cols, 1)
	b := newMLPBuffers(m, x, n)
	outs := []MatMulOut{{make([]float32, n*m.Gate.Rows), m.Gate}, {make([]float32, n*m.Up.Rows), m.Up}}
	c := newAttnCaseHeads(r, KVF16, 4, 4, 2, 32, []int{7, 3}, []int{1, 1})
	wo, _ := quantWeight(t, r, gguf.Q4_1, 48, 128)
	dst := make([]float32, n*wo.Rows)
	calls := map[string]func(){
		"NormMatMulN":     func() { p.NormMatMulN(outs, b.Normed, x, m.Norm, m.Eps, n) },
		"MLP":             func() { p.MLP(m, b, n) },
		"AttentionMatMul": func() { p.AttentionMatMul(&c.att, c.kv, dst, wo) },
	}
	for name, call := range calls {
		before := p.Jobs()
		call()
		if j := p.Jobs() - before; j != 1 {
			t.Errorf("%s ran %d pool jobs, want 1", name, j)
		}
		if a := testing.AllocsPerRun(10, call); a != 0 {
			t.Errorf("%s allocates %v times per call", name, a)
		}
	}
}
