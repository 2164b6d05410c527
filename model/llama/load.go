// Package llama implements the Llama family of decoder-only transformers
// (Llama, SmolLM, Mistral, Qwen2) over the kernels package: pre-norm
// blocks of grouped-query attention with rotary embeddings and a SwiGLU
// feed-forward, run on a flat paged batch.
package llama

import (
	"fmt"
	"sync"

	"pagoda/gguf"
	"pagoda/kernels"
	"pagoda/model"
)

func init() {
	for arch := range archs {
		model.Register(arch, func(f *gguf.File, o model.LoadOptions) (model.Model, error) {
			opt := Options{Threads: o.Threads, ExactArithmetic: o.ExactArithmetic, NoRepack: o.NoRepack,
				TensorParallel: o.TensorParallel}
			switch {
			case o.FlashAttention:
				opt.Attention = kernels.AttnFlash
			case !o.ExactArithmetic && !o.NoRepack:
				opt.Attention = kernels.AttnTiled // the fast arithmetic's attention
			}
			return New(f, opt)
		})
	}
}

// Options tune how a model runs; the zero value is the default.
type Options struct {
	// Threads is the number of kernel workers; ≤ 0 means GOMAXPROCS.
	Threads int
	// Attention selects which llama.cpp CPU attention path the arithmetic
	// reproduces bit for bit: kernels.AttnMatMul (the default: flash
	// attention off, as llama-cpp-python runs it; the SmolLM2 reference) or
	// kernels.AttnFlash (llama-server's default; the stories260K
	// references), or kernels.AttnTiled, the fast arithmetic's own (what
	// a model loaded through model.Load runs unless ExactArithmetic or
	// FlashAttention is set).
	Attention kernels.AttnMode
	// ExactArithmetic multiplies the matrices with llama.cpp's arithmetic
	// (see model.LoadOptions and packWeights) instead of the fast one.
	ExactArithmetic bool
	// NoRepack keeps Q4_0 matrices in llama.cpp's plain arithmetic
	// instead of its repacked one; it implies ExactArithmetic.
	NoRepack bool
	// TensorParallel loads one rank's shard (see shard); nil or one rank
	// is the whole model.
	TensorParallel model.Reducer
}

// layer holds one transformer block's weights. Matrices are slices of the
// file mapping in their file encoding (plus the kernels' packed copy, see
// packWeights); norm weights and biases are small float32 copies.
type layer struct {
	attnNorm []float32      // (Dim)
	wq       kernels.Weight // (Heads·HeadDim, Dim)
	wk, wv   kernels.Weight // (KVHeads·HeadDim, Dim)
	wo       kernels.Weight // (Dim, Heads·HeadDim)
	bq       []float32      // (Heads·HeadDim) or nil
	bk, bv   []float32      // (KVHeads·HeadDim) or nil
	ffnNorm  []float32      // (Dim)
	gate, up kernels.Weight // (HiddenDim, Dim)
	down     kernels.Weight // (Dim, HiddenDim)
}

// Model is a loaded Llama-family model. Forward calls are serialised; the
// model owns a kernels.Pool and scratch buffers reused across calls.
type Model struct {
	cfg     model.Config // the whole model's shape
	lc      model.Config // this rank's shape (cfg with one rank)
	sh      shard
	opt     Options
	f       *gguf.File
	embd    kernels.Weight // (VocabSize, Dim) token embeddings
	outNorm []float32      // (Dim)
	output  kernels.Weight // (VocabSize, Dim); the embeddings when tied
	layers  []layer
	rope    *kernels.Rope
	pool    *kernels.Pool

	mu sync.Mutex // serialises Forward; guards s and ub
	s  [2]scratch // one per micro-batch (dual-batch overlap); Forward uses s[0]
	ub [2]ubatch
}

// New builds a model from an open GGUF file of architecture llama, mistral
// or qwen2. The model keeps slices of f's mapping and closes f in Close; on
// error f is left open for the caller.
func New(f *gguf.File, opt Options) (*Model, error) {
	cfg, err := readConfig(f)
	if err != nil {
		return nil, err
	}
	m := &Model{cfg: cfg, lc: cfg, f: f, opt: opt}
	if tp := opt.TensorParallel; tp != nil && tp.Size() > 1 {
		if m.lc, err = localConfig(cfg, tp.Size()); err != nil {
			return nil, err
		}
		m.sh = shard{tp: tp, rank: tp.Rank(), size: tp.Size()}
	}
	t := &tensors{f: f, cfg: cfg}
	m.embd = t.matrix("token_embd.weight", cfg.VocabSize, cfg.Dim)
	m.outNorm = t.vector("output_norm.weight", cfg.Dim)
	m.output = m.embd
	_, untied := f.TensorInfo("output.weight")
	if untied {
		m.output = t.matrix("output.weight", cfg.VocabSize, cfg.Dim)
	}
	for i := range cfg.Layers {
		m.layers = append(m.layers, t.layer(i))
	}
	var freqs []float32
	if _, ok := f.TensorInfo("rope_freqs.weight"); ok {
		freqs = t.vector("rope_freqs.weight", cfg.Rope.Dim/2)
	}
	if t.err != nil {
		return nil, t.err
	}
	if m.sh.tp != nil {
		if err := m.split(m.sh.rank, m.sh.size); err != nil {
			return nil, err
		}
	}
	m.packWeights(arithmeticOf(opt), untied)
	if m.sh.tp != nil {
		if err := m.releaseUnused(untied); err != nil {
			return nil, err
		}
	}
	if m.rope, err = kernels.NewRope(ropeConfig(cfg.Rope, freqs)); err != nil {
		return nil, fmt.Errorf("llama: %w", err)
	}
	m.pool = kernels.NewPool(opt.Threads)
	if m.sh.tp != nil {
		m.pool.SetBetween(m.sh.progress) // drive in-flight all-reduces between kernel tasks
	}
	return m, nil
}

// tensors fetches and checks tensors, keeping the first error.
type tensors struct {
	f   *gguf.File
	cfg model.Config
	err error
}

func (t *tensors) fail(name, format string, args ...any) {
	if t.err == nil {
		t.err = fmt.Errorf("llama: tensor %s: %s", name, fmt.Sprintf(format, args...))
	}
}

// arithmetic is how packWeights prepares the matrices.
type arithmetic int

const (
	arithFast     arithmetic = iota // kernels.Fast wherever a type has it
	arithRepack                     // llama.cpp's default: kernels.Repack (Q4_0)
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
// (Q4_0, kernels.Repack) take its repacked arithmetic and layout, as in its
// default configuration, and like llama.cpp the token embeddings are never
// repacked, even when they double as the output. Every other matrix gets
// the accelerated kernels' packed layout (kernels.Pack: a heap copy,
// identical results). A tensor-parallel rank that computes no logits
// leaves the output unpacked (it never reads it).
func (m *Model) packWeights(a arithmetic, untied bool) {
	pack := func(w kernels.Weight) kernels.Weight {
		var r kernels.Weight
		switch a {
		case arithFast:
			r = kernels.Fast(w)
		case arithRepack:
			r = kernels.Repack(w)
		}
		if r.Repacked() {
			return r
		}
		return kernels.Pack(w)
	}
	switch {
	case !m.sh.logits():
	case untied || a == arithFast:
		m.output = pack(m.output)
	default:
		m.output = kernels.Pack(m.output)
	}
	for i := range m.layers {
		l := &m.layers[i]
		for _, w := range []*kernels.Weight{&l.wq, &l.wk, &l.wv, &l.wo, &l.gate, &l.up, &l.down} {
			*w = pack(*w)
		}
	}
}

// matrix returns a 2-D weight of rows×cols (GGUF dims [cols, rows]).
func (t *tensors) matrix(name string, rows, cols int) kernels.Weight {
	data, info, err := t.f.TensorData(name)
	if err != nil {
		t.fail(name, "%v", err)
		return kernels.Weight{}
	}
	if len(info.Dims) != 2 || info.Dims[0] != cols || info.Dims[1] != rows {
		t.fail(name, "shape %v, want [%d %d]", info.Dims, cols, rows)
		return kernels.Weight{}
	}
	w := kernels.Weight{Type: info.Type, Data: data, Rows: rows, Cols: cols}
	if err := w.Validate(); err != nil {
		t.fail(name, "%v", err)
	}
	return w
}

// vector returns a 1-D tensor of n elements converted to float32.
func (t *tensors) vector(name string, n int) []float32 {
	data, info, err := t.f.TensorData(name)
	if err != nil {
		t.fail(name, "%v", err)
		return nil
	}
	if len(info.Dims) != 1 || info.Dims[0] != n {
		t.fail(name, "shape %v, want [%d]", info.Dims, n)
		return nil
	}
	v := make([]float32, n)
	if err := gguf.Dequantize(info.Type, data, v); err != nil {
		t.fail(name, "%v", err)
	}
	return v
}

// layer fetches block i; biases are optional (Qwen2 has Q/K/V biases).
func (t *tensors) layer(i int) layer {
	c := t.cfg
	name := func(s string) string { return fmt.Sprintf("blk.%d.%s", i, s) }
	q, kv := c.Heads*c.HeadDim, c.KVHeads*c.HeadDim
	l := layer{
		attnNorm: t.vector(name("attn_norm.weight"), c.Dim),
		wq:       t.matrix(name("attn_q.weight"), q, c.Dim),
		wk:       t.matrix(name("attn_k.weight"), kv, c.Dim),
		wv:       t.matrix(name("attn_v.weight"), kv, c.Dim),
		wo:       t.matrix(name("attn_output.weight"), c.Dim, q),
		ffnNorm:  t.vector(name("ffn_norm.weight"), c.Dim),
		gate:     t.matrix(name("ffn_gate.weight"), c.HiddenDim, c.Dim),
		up:       t.matrix(name("ffn_up.weight"), c.HiddenDim, c.Dim),
		down:     t.matrix(name("ffn_down.weight"), c.Dim, c.HiddenDim),
	}
	l.bq = t.optVector(name("attn_q.bias"), q)
	l.bk = t.optVector(name("attn_k.bias"), kv)
	l.bv = t.optVector(name("attn_v.bias"), kv)
	return l
}

func (t *tensors) optVector(name string, n int) []float32 {
	if _, ok := t.f.TensorInfo(name); !ok {
		return nil
	}
	return t.vector(name, n)
}

// Config returns the model's shape.
func (m *Model) Config() model.Config { return m.cfg }

// NewKVCache allocates a paged cache shaped for this model; with tensor
// parallelism, for this rank's KV heads only (KVHeads/N).
func (m *Model) NewKVCache(numBlocks, blockSize int, dtype model.KVType) (*model.KVCache, error) {
	if dtype != model.KVF32 && dtype != model.KVF16 && dtype != model.KVBF16 {
		return nil, fmt.Errorf("llama: unknown KV cache type %v", dtype)
	}
	return model.NewKVCache(m.lc.Layers, numBlocks, blockSize, m.lc.KVHeads, m.lc.HeadDim, dtype)
}

// Close stops the worker pool and closes the GGUF file.
func (m *Model) Close() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.pool == nil {
		return nil
	}
	m.pool.Close()
	m.pool = nil
	return m.f.Close()
}
