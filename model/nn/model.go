package nn

import (
	"fmt"
	"sync"

	"pagoda/gguf"
	"pagoda/kernels"
	"pagoda/model"
)

// Options tune how a model runs; the zero value is the default.
type Options struct {
	// Threads is the number of kernel workers; ≤ 0 means GOMAXPROCS.
	Threads int
	// Attention selects which llama.cpp CPU attention path the arithmetic
	// reproduces bit for bit: kernels.AttnMatMul (the default: flash
	// attention off, as llama-cpp-python runs it) or kernels.AttnFlash
	// (llama-server's default), or kernels.AttnTiled, the fast
	// arithmetic's own (what a model loaded through model.Load runs unless
	// ExactArithmetic or FlashAttention is set).
	Attention kernels.AttnMode
	// ExactArithmetic multiplies the matrices with llama.cpp's arithmetic
	// (see model.LoadOptions and packWeights) instead of the fast one.
	ExactArithmetic bool
	// NoRepack keeps Q4_0 matrices in llama.cpp's plain arithmetic
	// instead of its repacked one; it implies ExactArithmetic.
	NoRepack bool
	// TensorParallel loads one rank's shard (see Linear's roles); nil or
	// one rank is the whole model.
	TensorParallel model.Reducer
	// ExpertParallel, with TensorParallel over several ranks, gives each
	// rank whole experts (MoE: a contiguous range of each layer's, see
	// ExpertRange) instead of a slice of every expert; no effect
	// otherwise.
	ExpertParallel bool
	// ContextLen is model.LoadOptions.ContextLen.
	ContextLen int
}

// OptionsOf converts model.Load's options: the fast arithmetic runs its
// tiled attention unless the exact arithmetic or flash attention is asked
// for.
func OptionsOf(o model.LoadOptions) Options {
	opt := Options{Threads: o.Threads, ExactArithmetic: o.ExactArithmetic, NoRepack: o.NoRepack,
		TensorParallel: o.TensorParallel, ExpertParallel: o.ExpertParallel, ContextLen: o.ContextLen}
	switch {
	case o.FlashAttention:
		opt.Attention = kernels.AttnFlash
	case !o.ExactArithmetic && !o.NoRepack:
		opt.Attention = kernels.AttnTiled
	}
	return opt
}

// Register makes load the loader of architecture arch in model.Load.
func Register(arch string, load func(f *gguf.File, o Options) (*Model, error)) {
	model.Register(arch, func(f *gguf.File, o model.LoadOptions) (model.Model, error) {
		return load(f, OptionsOf(o))
	})
}

// Model is a loaded block stack. Forward calls are serialised; the model
// owns a kernels.Pool and scratch buffers reused across calls.
type Model struct {
	cfg      model.Config // the whole model's shape
	local    model.Config // this rank's shape (cfg with one rank)
	tp       shard        // this rank's part of tensor parallelism
	opt      Options
	f        *gguf.File
	embd     kernels.Weight // (VocabSize, Dim) token embeddings
	scale    float32        // embeddings multiplied by it (0: not scaled)
	outNorm  []float32      // (Dim)
	output   kernels.Weight // (VocabSize, Dim); the embeddings when tied
	untied   bool
	softcap  float32  // logits = softcap·tanh(logits/softcap) when > 0
	released []string // tensors whose file pages were released whole at load (Released)
	enc      *Encoder // an encoder-only model (BERT): no head; nil for a decoder
	bidir    bool     // a layer attends bidirectionally
	layers   []Block
	kvLayout model.KVLayout // the KV cache groups of this rank's layers
	ropes    []*kernels.Rope
	pool     *kernels.Pool

	mu    sync.Mutex // serialises Forward; guards s and micro
	s     [2]scratch // one per micro-batch (dual-batch overlap); Forward uses s[0]
	micro [2]ubatch
	attnT attnTimer // model.AttentionTimer; guarded by mu

	shardBytes int64 // ShardBytes
}

// Config returns the model's shape.
func (m *Model) Config() model.Config { return m.cfg }

// NewKVCache allocates a paged cache shaped for this model; with tensor
// parallelism, for this rank's KV heads only (KVHeads/N).
func (m *Model) NewKVCache(numBlocks, blockSize int, dtype model.KVType) (*model.KVCache, error) {
	if err := model.CheckKVType(dtype, m.local.HeadDim); err != nil {
		return nil, fmt.Errorf("%s: %w", m.cfg.Arch, err)
	}
	if dtype == model.KVQ8_0 && m.opt.Attention != kernels.AttnTiled {
		return nil, fmt.Errorf("%s: a q8_0 KV cache needs the fast arithmetic's attention (not the exact arithmetic nor flash attention)", m.cfg.Arch)
	}
	return model.NewKVCache(m.local.KVLayout(), numBlocks, blockSize, m.local.KVHeads, m.local.HeadDim, dtype)
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

// Jobs is the number of pool jobs run so far (tests count the jobs of a
// forward pass).
func (m *Model) Jobs() uint64 { return m.pool.Jobs() }

// Matrix is a named weight of the model as the kernels read it.
type Matrix struct {
	Name string
	W    kernels.Weight
}

// Matrices lists the layers' matrices, then "output" and "token_embd"
// (tests check how each was prepared).
func (m *Model) Matrices() []Matrix {
	var out []Matrix
	for i := range m.layers {
		for _, l := range m.layers[i].linears() {
			out = append(out, Matrix{Name: fmt.Sprintf("%s@%d", l.Tensor, l.Row0), W: l.W})
		}
	}
	return append(out, Matrix{"output", m.output}, Matrix{"token_embd", m.embd})
}

// Reducer is the tensor-parallel communicator the model was loaded with
// (nil with one rank).
func (m *Model) Reducer() model.Reducer { return m.tp.comm }

// LocalConfig is this rank's shape: Config with the heads, KV heads and
// hidden units of its shard.
func (m *Model) LocalConfig() model.Config { return m.local }
