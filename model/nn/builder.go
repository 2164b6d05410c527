package nn

import (
	"fmt"
	"math"

	"pagoda/gguf"
	"pagoda/kernels"
	"pagoda/model"
)

// Builder loads an architecture's tensors into building blocks, keeping
// the first error (naming the tensor), and builds the Model.
type Builder struct {
	F     *gguf.File
	Cfg   model.Config
	err   error
	ropes []ropeKey
	// EmbedScale multiplies the token embeddings (Gemma: √Dim); 0 is 1.
	EmbedScale float32
	// Softcap, when > 0, caps the logits: Softcap·tanh(logits/Softcap)
	// (final_logit_softcapping).
	Softcap float32
	// Encoder, when set, builds an encoder-only model (BERT): its
	// embeddings, no output norm and no head (Cfg.Embedding is set).
	Encoder *Encoder
}

type ropeKey struct {
	r     model.Rope
	freqs []float32
}

// NewBuilder starts a model of shape cfg from f.
func NewBuilder(f *gguf.File, cfg model.Config) *Builder { return &Builder{F: f, Cfg: cfg} }

// Err is the first error so far.
func (b *Builder) Err() error { return b.err }

// Fail records an error about tensor name.
func (b *Builder) Fail(name, format string, args ...any) {
	if b.err == nil {
		b.err = fmt.Errorf("%s: tensor %s: %s", b.Cfg.Arch, name, fmt.Sprintf(format, args...))
	}
}

// Has reports whether the file holds tensor name.
func (b *Builder) Has(name string) bool { _, ok := b.F.TensorInfo(name); return ok }

// Matrix returns a 2-D tensor of rows×cols (GGUF dims [cols, rows]).
func (b *Builder) Matrix(name string, rows, cols int) kernels.Weight {
	data, info, err := b.F.TensorData(name)
	if err != nil {
		b.Fail(name, "%v", err)
		return kernels.Weight{}
	}
	if len(info.Dims) != 2 || info.Dims[0] != cols || info.Dims[1] != rows {
		b.Fail(name, "shape %v, want [%d %d]", info.Dims, cols, rows)
		return kernels.Weight{}
	}
	w := kernels.Weight{Type: info.Type, Data: data, Rows: rows, Cols: cols}
	if err := w.Validate(); err != nil {
		b.Fail(name, "%v", err)
	}
	return w
}

// Vector returns a 1-D tensor of n elements converted to float32.
func (b *Builder) Vector(name string, n int) []float32 {
	data, info, err := b.F.TensorData(name)
	if err != nil {
		b.Fail(name, "%v", err)
		return nil
	}
	if len(info.Dims) != 1 || info.Dims[0] != n {
		b.Fail(name, "shape %v, want [%d]", info.Dims, n)
		return nil
	}
	v := make([]float32, n)
	if err := gguf.Dequantize(info.Type, data, v); err != nil {
		b.Fail(name, "%v", err)
	}
	return v
}

// OptVector is Vector, or nil when the file has no tensor name.
func (b *Builder) OptVector(name string, n int) []float32 {
	if !b.Has(name) {
		return nil
	}
	return b.Vector(name, n)
}

// Linear loads tensor name+".weight" (rows×cols) with its optional
// name+".bias", in role r.
func (b *Builder) Linear(name string, rows, cols int, r Role) Linear {
	w := name + ".weight"
	return Linear{W: b.Matrix(w, rows, cols), Bias: b.OptVector(name+".bias", rows), Role: r, Tensor: w, whole: true}
}

// Fused loads tensor name+".weight", whose rows are the concatenation of
// parts (each parts[i] rows of cols), as one Linear per part in role r
// (Phi-3's attn_qkv and gate/up ffn_up). Biases are not supported.
func (b *Builder) Fused(name string, cols int, r Role, parts ...int) []Linear {
	rows := 0
	for _, p := range parts {
		rows += p
	}
	w := name + ".weight"
	if b.Has(name + ".bias") {
		b.Fail(name+".bias", "biases of fused matrices are not supported")
	}
	all := b.Matrix(w, rows, cols)
	out := make([]Linear, len(parts))
	row := 0
	for i, p := range parts {
		out[i] = Linear{Role: r, Tensor: w, Row0: row}
		if b.err == nil {
			out[i].W = rowRange(all, row, row+p)
		}
		row += p
	}
	return out
}

// Rope returns the index of the rotary embedding r (with per-frequency
// divisors freqs, or nil) among the model's, adding it if new.
func (b *Builder) Rope(r model.Rope, freqs []float32) int {
	for i, k := range b.ropes {
		if k.r == r && equalFloats(k.freqs, freqs) {
			return i
		}
	}
	b.ropes = append(b.ropes, ropeKey{r, freqs})
	return len(b.ropes) - 1
}

func equalFloats(a, b []float32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
			return false
		}
	}
	return true
}

// Attention loads the usual attn_q/k/v/output tensors (biases optional)
// of layer prefix p ("blk.N"), with rope index rope and the default score
// scale 1/√HeadDim.
func (b *Builder) Attention(p string, rope int) Attention {
	c := b.Cfg
	q, kv := c.Heads*c.HeadDim, c.KVHeads*c.HeadDim
	return Attention{
		Q: b.Linear(p+".attn_q", q, c.Dim, Column), K: b.Linear(p+".attn_k", kv, c.Dim, Column),
		V: b.Linear(p+".attn_v", kv, c.Dim, Column), O: b.Linear(p+".attn_output", c.Dim, q, Row),
		Rope: rope, Scale: float32(1 / math.Sqrt(float64(c.HeadDim))),
	}
}

// FFN loads the usual ffn_gate/up/down tensors of layer prefix p.
func (b *Builder) FFN(p string, act kernels.GLU) FFN {
	c := b.Cfg
	return FFN{
		Gate: b.Linear(p+".ffn_gate", c.HiddenDim, c.Dim, Column), Up: b.Linear(p+".ffn_up", c.HiddenDim, c.Dim, Column),
		Down: b.Linear(p+".ffn_down", c.Dim, c.HiddenDim, Row), Act: act,
	}
}

// Build assembles the model from its blocks: token_embd, output_norm and
// output (the embeddings when the file has no output.weight) are loaded
// here; then the tensor-parallel split, the packing for the arithmetic,
// the release of unread pages, the RoPE tables and the worker pool. On
// error f is left open for the caller.
func (b *Builder) Build(blocks []Block, opt Options) (*Model, error) {
	cfg := b.Cfg
	if len(blocks) != cfg.Layers {
		return nil, fmt.Errorf("%s: %d blocks for %d layers", cfg.Arch, len(blocks), cfg.Layers)
	}
	for i := range blocks {
		if w := blocks[i].Attn.Window; w > 0 {
			if cfg.Windows == nil {
				cfg.Windows = make([]int, cfg.Layers)
			}
			cfg.Windows[i] = w
		}
	}
	for i := range blocks {
		if blocks[i].Attn.Bidirectional {
			cfg.Embedding = true // bidirectional attention needs the whole sequence: no generation
		}
	}
	m := &Model{cfg: cfg, local: cfg, f: b.F, opt: opt, layers: blocks, scale: b.EmbedScale, softcap: b.Softcap,
		kvLayout: cfg.KVLayout(), enc: b.Encoder, bidir: cfg.Embedding}
	m.embd = b.Matrix("token_embd.weight", cfg.VocabSize, cfg.Dim)
	if m.enc != nil {
		if !cfg.Embedding {
			return nil, fmt.Errorf("%s: an encoder needs bidirectional attention", cfg.Arch)
		}
		if tp := opt.TensorParallel; tp != nil && tp.Size() > 1 {
			return nil, fmt.Errorf("%s: tensor parallelism is not supported for encoder models", cfg.Arch)
		}
	} else {
		m.outNorm = b.Vector("output_norm.weight", cfg.Dim)
		m.output = m.embd
		if m.untied = b.Has("output.weight"); m.untied {
			m.output = b.Matrix("output.weight", cfg.VocabSize, cfg.Dim)
		}
	}
	if b.err != nil {
		return nil, b.err
	}
	var err error
	if tp := opt.TensorParallel; tp != nil && tp.Size() > 1 {
		if m.local, err = localConfig(cfg, tp.Size(), opt.ExpertParallel); err != nil {
			return nil, fmt.Errorf("%s: %w", cfg.Arch, err)
		}
		m.kvLayout = m.local.KVLayout()
		m.tp = shard{comm: tp, rank: tp.Rank(), size: tp.Size()}
		for i := range m.layers {
			if e := m.layers[i].MoE; e != nil && opt.ExpertParallel {
				e.keepExperts(ExpertRange(len(e.Experts), m.tp.rank, m.tp.size))
			}
			for _, l := range m.layers[i].linears() {
				if err := l.split(m.tp.rank, m.tp.size); err != nil {
					return nil, fmt.Errorf("%s: %w", cfg.Arch, err)
				}
			}
			if s := m.layers[i].Attn.Sinks; s != nil { // the rank's query heads' sinks
				m.layers[i].Attn.Sinks = s[m.tp.rank*m.local.Heads : (m.tp.rank+1)*m.local.Heads]
			}
		}
	}
	m.shardBytes = m.weightBytes()
	m.packWeights(arithmeticOf(opt))
	for i := range m.layers {
		if e := m.layers[i].MoE; e != nil {
			e.prepare()
		}
	}
	if err := m.releaseUnused(); err != nil {
		return nil, err
	}
	if err := m.releaseParts(); err != nil {
		return nil, err
	}
	for _, k := range b.ropes {
		r, err := kernels.NewRope(RopeConfig(k.r, k.freqs))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", cfg.Arch, err)
		}
		m.ropes = append(m.ropes, r)
	}
	m.pool = kernels.NewPool(opt.Threads)
	if m.tp.comm != nil {
		m.pool.SetBetween(m.tp.progress) // drive in-flight all-reduces between kernel tasks
	}
	return m, nil
}

// arithmetic is how packWeights prepares the matrices.
type arithmetic int

const (
	arithFast     arithmetic = iota // kernels.Fast wherever a type has it
	arithRepack                     // llama.cpp's default: kernels.Repack (Q4_0, MXFP4)
	arithNoRepack                   // llama.cpp's --no-repack: plain vec_dot everywhere
)

// arithmeticOf returns the arithmetic opt selects.
func arithmeticOf(opt Options) arithmetic {
	switch {
	case opt.NoRepack:
		return arithNoRepack
	case opt.ExactArithmetic:
		return arithRepack
	}
	return arithFast
}

// packWeights prepares the matrices for the arithmetic a. The fast
// arithmetic marks every matrix whose type has one kernels.Fast (the
// output head included, even when it is the token embeddings: the lookup
// reads the file's rows, the head its interleaved copy). The exact ones
// reproduce llama.cpp: with arithRepack the matrices llama.cpp repacks
// (Q4_0, MXFP4; kernels.Repack) take its repacked arithmetic and layout, as in its
// default configuration, and like llama.cpp the token embeddings are never
// repacked, even when they double as the output. Every other matrix gets
// the accelerated kernels' packed layout (kernels.Pack: a heap copy,
// identical results). A tensor-parallel rank that computes no logits
// leaves the output unpacked (it never reads it).
func (m *Model) packWeights(a arithmetic) {
	switch {
	case !m.tp.logits() || m.enc != nil:
	case m.untied || a == arithFast:
		m.output = packFor(a, m.output)
	default:
		m.output = kernels.Pack(m.output)
	}
	for i := range m.layers {
		for _, l := range m.layers[i].linears() {
			l.pack(a)
		}
	}
}
