// Package model defines the interface every model architecture implements
// and the registry that maps a GGUF `general.architecture` to a loader.
//
// A forward pass runs over one flat Batch: the tokens of every scheduled
// sequence laid end to end (prefill chunks and single decode tokens alike).
// Keys and values live in a paged KVCache: fixed-size blocks addressed
// through each sequence's block table, as in vLLM's PagedAttention.
package model

import (
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	"pagoda/gguf"
)

// Config is the shape of a model, read from GGUF metadata.
type Config struct {
	Arch       string // general.architecture, e.g. "llama", "qwen2"
	Name       string // general.name
	VocabSize  int
	Dim        int // embedding length
	HiddenDim  int // feed-forward length
	Layers     int
	Heads      int
	KVHeads    int
	HeadDim    int
	ContextLen int // trained context length
	RMSEps     float32
	Rope       Rope
	// Windows is each layer's sliding attention window in positions (0:
	// full attention); nil when every layer attends to its whole context.
	// It decides the KV cache groups (LayoutOf).
	Windows []int
	// Experts, ExpertsUsed and ExpertHiddenDim shape a mixture-of-experts
	// feed-forward (expert_count, expert_used_count and
	// expert_feed_forward_length): experts of ExpertHiddenDim hidden
	// units, ExpertsUsed of them per token. 0 for a dense model.
	Experts, ExpertsUsed, ExpertHiddenDim int
	// Embedding marks an embedding-only model (BERT): it has no LM head,
	// so Forward takes an empty logits buffer and fills only Batch.Hidden,
	// and its attention is bidirectional (every token attends to its whole
	// sequence), so a prompt must run whole in one step and never shares a
	// cached prefix. Pooling is the pooling its file names (llama.cpp's
	// default for it: "mean", "cls" or "last"; "" when it names none).
	Embedding bool
	Pooling   string
}

// KVLayout is the model's KV cache groups.
func (c Config) KVLayout() KVLayout { return LayoutOf(c.Layers, c.Windows) }

// RopeScaling names a RoPE frequency scaling scheme.
type RopeScaling string

const (
	RopeScalingNone   RopeScaling = "none"
	RopeScalingLinear RopeScaling = "linear"
	RopeScalingYaRN   RopeScaling = "yarn"
	RopeScalingLlama3 RopeScaling = "llama3"
)

// Rope configures rotary position embeddings.
type Rope struct {
	Dim      int     // rotated dimensions per head (≤ HeadDim)
	FreqBase float32 // theta
	NeoX     bool    // rotate pairs (i, i+Dim/2) instead of (2i, 2i+1)
	Scaling  RopeScaling
	Factor   float32 // scaling factor (linear: positions divided by it)
	OrigCtx  int     // original context length (YaRN, llama3)
	// YaRN / llama3 parameters.
	BetaFast, BetaSlow float32
	LowFreqFactor      float32
	HighFreqFactor     float32
	AttnFactor         float32 // YaRN magnitude scale (mscale)
}

// Batch is one step's flat input. Sequence s owns tokens
// QueryStart[s] ≤ i < QueryStart[s+1]; they are the last
// QueryStart[s+1]-QueryStart[s] tokens of its ContextLens[s] tokens of
// context, so attention for token i sees positions ≤ Positions[i] of its own
// sequence: the cached ones through BlockTables[s] and the new ones once
// they are written to their SlotMapping slots.
//
// With several KV cache groups (KVLayout), SlotMapping and BlockTables hold
// each group's in turn: group g's slots are SlotMapping[g·numTokens:][:numTokens]
// and its tables BlockTables[g·numSeqs:][:numSeqs]; a layer uses its own
// group's. A sliding-window group's tables hold a negative id for the
// blocks out of every query's window, which attention never reads.
type Batch struct {
	Tokens      []int32   // (numTokens) token ids
	Positions   []int32   // (numTokens) position of each token in its sequence
	SlotMapping []int32   // (groups × numTokens) block*BlockSize + offset where the token's K/V goes
	QueryStart  []int32   // (numSeqs+1) prefix sums of query lengths
	ContextLens []int32   // (numSeqs) tokens of context after this step
	BlockTables [][]int32 // (groups × numSeqs, blocks) physical block ids, logical order
	// LogitIndices lists the token rows (indices into Tokens) whose logits
	// are wanted, in output order.
	LogitIndices []int32
	// AttnTiles is the attention query-tile count (kernels.AttnTile tokens
	// of one sequence each) the step's captured plan was sized for, its
	// bucket's worst case; attention lays its work out for that many tiles
	// and the ones past the real work return at once. 0 (eager) uses the
	// step's own count. It never changes results.
	AttnTiles int
	// Hidden, when not nil, receives the final-norm hidden state of each
	// row of LogitIndices (len(LogitIndices) × Dim, in the same order; rank
	// 0 only with tensor parallelism): what embeddings pool.
	Hidden []float32
}

// NumSeqs returns the number of sequences in the batch.
func (b *Batch) NumSeqs() int { return len(b.ContextLens) }

// Model is a loaded model that runs forward passes.
type Model interface {
	Config() Config
	// NewKVCache allocates a paged cache of numBlocks blocks of blockSize
	// token slots for every layer.
	NewKVCache(numBlocks, blockSize int, dtype KVType) (*KVCache, error)
	// Forward runs the batch, writes each token's K/V into its slot, and
	// stores the logits of the rows in b.LogitIndices into logits
	// (len(b.LogitIndices) × VocabSize).
	Forward(b *Batch, kv *KVCache, logits []float32) error
	Close() error
}

// LoadOptions configure how a model runs.
type LoadOptions struct {
	Threads int // kernel worker threads; ≤ 0 means GOMAXPROCS
	// FlashAttention follows llama.cpp's flash-attention arithmetic
	// (llama-server's default) instead of its unfused path (as
	// llama-cpp-python runs it: the default with ExactArithmetic). Both are
	// exact reproductions; they round differently. Without either, the
	// fast arithmetic's own attention runs (kernels.AttnTiled).
	FlashAttention bool
	// ExactArithmetic multiplies the weights with llama.cpp's arithmetic
	// of its default configuration, bit for bit: Q4_0 matrices that
	// llama.cpp repacks with its repacked arithmetic (kernels.Repack, as
	// llama.cpp does on x86 machines with AVX2), every other weight with
	// ggml's plain vec_dot arithmetic; attention follows llama.cpp's
	// unfused path (or its flash attention with FlashAttention). The tests
	// that compare with llama.cpp's outputs use it. By default every
	// quantized weight type that has one takes the fast arithmetic
	// (kernels.Fast: one exact integer dot and one multiply-add per block
	// and (row, token)) and attention its tiled float32 arithmetic
	// (kernels.AttnTiled), which differ from llama.cpp's only by float
	// rounding.
	ExactArithmetic bool
	// NoRepack keeps every matmul weight in llama.cpp's plain vec_dot
	// arithmetic (llama.cpp's --no-repack), Q4_0 included; it implies
	// ExactArithmetic.
	NoRepack bool
	// ContextLen is the longest sequence the model will serve (the
	// engine's --max-model-len); 0 means its trained context. Phi-3's
	// LongRoPE picks its short or long factors by it, as llama.cpp does by
	// its context size (n_ctx_seq).
	ContextLen int
	// TensorParallel, when set with Size() > 1, loads rank Rank()'s shard
	// of the model (Megatron's split; see the architecture's loader) and
	// sums the partial activations over the ranks with AllReduce; every
	// rank must run the same forward passes in the same order. nil runs
	// the whole model in this process.
	TensorParallel Reducer
	// ExpertParallel, with TensorParallel over several ranks, keeps each
	// mixture-of-experts expert whole on one rank, the experts spread over
	// the ranks in contiguous ranges (vLLM's --enable-expert-parallel),
	// instead of splitting every expert over the ranks; attention and the
	// router are split and replicated as without it. A model without
	// experts, or one rank, ignores it.
	ExpertParallel bool
}

// Reducer is what tensor parallelism needs from the communication layer
// (dist.Comm implements it): this process's rank of Size, and an
// all-reduce (sum, in place) of float32 activations, blocking or
// nonblocking. Dual-batch overlap starts one micro-batch's all-reduce
// (IAllReduce), computes the other micro-batch while it is in flight,
// calling Progress between kernels (MPI advances a nonblocking collective
// only inside MPI calls), then waits for it.
type Reducer interface {
	Rank() int
	Size() int
	AllReduce(x []float32) error
	// IAllReduce starts AllReduce(x) and returns at once; x must not be
	// touched until the request completes. Every rank starts the same
	// all-reduces in the same order.
	IAllReduce(x []float32) (Request, error)
	// Progress advances the outstanding requests without blocking.
	Progress() error
}

// Request is a nonblocking operation in flight: Wait blocks until it
// completes, Test reports whether it has, advancing it. It is an alias of
// an unnamed interface type, as dist.Request is, so that dist.Comm
// satisfies Reducer without either package importing the other.
type Request = interface {
	Wait() error
	Test() (done bool, err error)
}

// MicroBatcher is implemented by models that run dual-batch overlap: the
// two micro-batches of one step (consecutive sequences of it, a then b),
// interleaved layer stage by layer stage so that one micro-batch's
// tensor-parallel all-reduces are in flight while the other computes.
// The results (cache writes, logits) equal Forward's on each batch bit for
// bit: la and lb receive a's and b's logit rows. Every rank runs the same
// micro-batches. A sequence of b may read cache blocks a writes in the
// same step (a's layer l runs before b's), never the other way round.
type MicroBatcher interface {
	ForwardMicroBatches(a, b *Batch, kv *KVCache, la, lb []float32) error
}

// CommTimer is implemented by tensor-parallel models: the time their last
// forward pass (Forward or ForwardMicroBatches) spent on communication.
type CommTimer interface {
	CommTimes() CommTimes
}

// CommTimes splits a forward pass's communication time. Comm is the time
// inside nonblocking calls (starting an all-reduce, driving outstanding
// ones between kernels); Wait is the time blocked waiting for an
// all-reduce to complete (a slower peer, or data still on the wire: the
// communication that computation did not hide). The rest of the pass is
// compute.
type CommTimes struct {
	Comm, Wait time.Duration
	AllReduces int // all-reduces started
}

// AttentionTimer is implemented by models that can time their attention
// kernels (the paged attention itself: scores, softmax and the weighted sum
// of values, without the Q/K/V and output projections). Timing is off until
// TimeAttention(true): then each layer's attention runs as its own pool job
// (not fused with the output projection; the results are the same bit for
// bit) between two clock reads, and AttentionTime is the sum over the
// layers of the last forward pass. Off, it is 0 and costs nothing.
type AttentionTimer interface {
	TimeAttention(on bool)
	AttentionTime() time.Duration
}

// Reserver is implemented by models that can size their activation
// buffers ahead of time (warm-up), so that no later step up to numTokens
// tokens and numLogits logit rows allocates.
type Reserver interface {
	Reserve(numTokens, numLogits int)
}

// Loader builds a model from an open GGUF file. The model may keep slices
// of the file's mapping; the file stays open until Model.Close.
type Loader func(f *gguf.File, opts LoadOptions) (Model, error)

var (
	regMu    sync.RWMutex
	registry = map[string]Loader{}
)

// Register makes a loader available for an architecture name.
func Register(arch string, l Loader) {
	regMu.Lock()
	defer regMu.Unlock()
	registry[arch] = l
}

// ErrUnsupportedArch is returned by Load for an architecture without a loader.
var ErrUnsupportedArch = errors.New("unsupported architecture")

// Architectures lists the registered architecture names, sorted.
func Architectures() []string {
	regMu.RLock()
	defer regMu.RUnlock()
	names := make([]string, 0, len(registry))
	for n := range registry {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Load opens a GGUF file and builds the model its architecture names.
// On success the returned file stays open (tokenizers read its metadata);
// Model.Close releases it.
func Load(path string, opts LoadOptions) (Model, *gguf.File, error) {
	f, err := gguf.Open(path)
	if err != nil {
		return nil, nil, err
	}
	arch, _ := f.String("general.architecture")
	regMu.RLock()
	l, ok := registry[arch]
	regMu.RUnlock()
	if !ok {
		f.Close()
		return nil, nil, fmt.Errorf("%s: %w %q (supported: %v)", path, ErrUnsupportedArch, arch, Architectures())
	}
	m, err := l(f, opts)
	if err != nil {
		f.Close()
		return nil, nil, fmt.Errorf("%s: %w", path, err)
	}
	return m, f, nil
}
