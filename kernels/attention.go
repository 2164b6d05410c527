package kernels

import (
	"fmt"
	"slices"
)

// KVType is the element type of a paged KV cache.
type KVType int

const (
	KVF32  KVType = iota // float32
	KVF16                // IEEE half, rounded to nearest even on write
	KVBF16               // bfloat16, rounded to nearest even on write
	KVQ8_0               // ggml's block_q8_0: 32 int8 and one f16 scale (attention_q8.go)
)

// kvTypeNames are the KV types' names, as String writes and ParseKVType
// reads them.
var kvTypeNames = [...]string{KVF32: "f32", KVF16: "f16", KVBF16: "bf16", KVQ8_0: "q8_0"}

func (t KVType) String() string {
	if t >= 0 && int(t) < len(kvTypeNames) {
		return kvTypeNames[t]
	}
	return fmt.Sprintf("kvtype(%d)", int(t))
}

// Bytes is the memory of n elements (n a multiple of 32 for KVQ8_0: 34
// bytes per 32).
func (t KVType) Bytes(n int) int {
	switch t {
	case KVF32:
		return 4 * n
	case KVQ8_0:
		return n / q8Block * q8BlockBytes
	}
	return 2 * n
}

// ParseKVType parses "f32", "f16", "bf16" or "q8_0".
func ParseKVType(s string) (KVType, error) {
	if i := slices.Index(kvTypeNames[:], s); i >= 0 {
		return KVType(i), nil
	}
	return 0, fmt.Errorf("unknown KV cache type %q (allowed: f32, f16, bf16, q8_0)", s)
}

// KVLayer is one layer of a paged KV cache: the one description of the KV
// cache's memory layout (model.KVCache holds one per layer). K and V are
// laid out as
// (block, kvHead, offset, headDim): cache slot s (block s/BlockSize,
// offset s%BlockSize) holds KV head g of one token's keys at
// K[RowOffset(s, g):][:HeadDim] and its values at the same offset of V, so
// that one KV head's rows of a block are contiguous (attention reads them
// block by block, head by head) and a block is one contiguous run of
// BlockSize·KVHeads·HeadDim elements (swaps and copies move whole blocks).
// F32 caches use K32/V32, the 16-bit ones K16/V16 (raw bit patterns),
// Q8_0 caches K8/V8: element offset e is in ggml block e/32 of 34 bytes
// (HeadDim a multiple of 32; see attention_q8.go).
type KVLayer struct {
	Type      KVType
	K32, V32  []float32
	K16, V16  []uint16
	K8, V8    []byte
	BlockSize int
	KVHeads   int
	HeadDim   int
}

// RowOffset returns the element offset of KV head g's row of cache slot s.
func (l *KVLayer) RowOffset(s, g int) int {
	bs, hd := l.BlockSize, l.HeadDim
	return ((s/bs*l.KVHeads+g)*bs + s%bs) * hd
}

// BlockElems is the number of K (or V) elements of one block: BlockSize ·
// KVHeads · HeadDim, contiguous from block b's first element b·BlockElems.
func (l *KVLayer) BlockElems() int { return l.BlockSize * l.KVHeads * l.HeadDim }

// Slots is the number of token slots in the layer.
func (l *KVLayer) Slots() int {
	n := len(l.K32)
	switch l.Type {
	case KVF32:
	case KVQ8_0:
		n = len(l.K8) / q8BlockBytes * q8Block
	default:
		n = len(l.K16)
	}
	return n / (l.KVHeads * l.HeadDim)
}

// WriteKV stores token i's keys k[i] and values v[i] (rows of
// KVHeads·HeadDim) into cache slot slots[i], converting to the cache type.
// A negative slot marks a padding token and is skipped.
func WriteKV(l *KVLayer, slots []int32, k, v []float32) {
	stride := l.KVHeads * l.HeadDim
	if len(k) != len(slots)*stride || len(v) != len(k) {
		panic(fmt.Sprintf("kernels: WriteKV of %d slots with %d keys and %d values of stride %d", len(slots), len(k), len(v), stride))
	}
	hd := l.HeadDim
	for i, s := range slots {
		if s < 0 {
			continue
		}
		for g := range l.KVHeads {
			src := k[i*stride+g*hd:][:hd]
			val := v[i*stride+g*hd:][:hd]
			off := l.RowOffset(int(s), g)
			switch l.Type {
			case KVF32:
				copy(l.K32[off:off+hd], src)
				copy(l.V32[off:off+hd], val)
			case KVF16:
				def.toF16(l.K16[off:off+hd], src)
				def.toF16(l.V16[off:off+hd], val)
			case KVBF16:
				for j := range hd {
					l.K16[off+j] = F32ToBF16(src[j])
					l.V16[off+j] = F32ToBF16(val[j])
				}
			case KVQ8_0:
				quantizeKVQ8(l.K8[q8Offset(off):][:q8Offset(hd)], src)
				quantizeKVQ8(l.V8[q8Offset(off):][:q8Offset(hd)], val)
			}
		}
	}
}

// Attention is one paged attention call over a flat batch of n tokens from
// several sequences. Sequence s owns tokens QueryStart[s] ≤ i <
// QueryStart[s+1]; token i attends to positions 0..Positions[i] of its own
// sequence (from Positions[i]−Window+1 with a Window), found through
// BlockTables[s] (position p lives in slot
// BlockTables[s][p/BlockSize]·BlockSize + p%BlockSize). Those K/V rows must
// already be written (WriteKV), including the batch's own tokens. Query
// head h reads KV head h/(Heads/KVHeads).
type Attention struct {
	Q           []float32 // (n, Heads, HeadDim) rotated queries
	Out         []float32 // (n, Heads, HeadDim) result
	Positions   []int32   // (n) position of each token in its sequence
	QueryStart  []int32   // (numSeqs+1) prefix sums of query lengths
	BlockTables [][]int32 // (numSeqs, blocks) physical block ids
	Heads       int
	Scale       float32 // score scale, usually 1/sqrt(HeadDim)
	// Window, when positive, is a sliding window: token i attends only to
	// positions Positions[i]−Window < p ≤ Positions[i] (llama.cpp's
	// LLAMA_SWA_TYPE_STANDARD, Gemma's local layers). Block table entries
	// of blocks wholly before the window of a tile's first token are
	// never read (a block manager may have freed them). 0 is full causal
	// attention.
	Window int
	// Sinks, when not nil, are learned attention sinks, one logit per
	// query head (gpt-oss's attn_sinks): each adds exp(Sinks[h] − max) to
	// its head's softmax denominator only, no value (llama.cpp's
	// ggml_soft_max_add_sinks and flash attention's sinks; attention_sinks.go).
	// nil is plain attention, with exactly its arithmetic.
	Sinks []float32 // (Heads)
	Mode  AttnMode
	// Tiles is the number of query tiles (AttnTile tokens of one sequence)
	// the call's work is laid out for: a captured plan's worst case for its
	// bucket (bucket.MaxTiles), so that every step of the bucket runs the
	// same Tiles·Heads tasks; tasks past the step's real tiles return at
	// once. 0 (eager) runs exactly the real tiles. A value below the real
	// count is raised to it: work is never dropped.
	Tiles int
}

// AttnTile is the query-tile size: Attention splits each sequence's query
// tokens into tiles of up to AttnTile consecutive tokens, and each task
// computes one tile for one query head, sharing the tile's context offsets
// (and the K/V rows it reads, while they are in cache) across its tokens.
const AttnTile = 16

// AttentionTiles returns the query tiles of a batch with the given query
// start offsets: Σ⌈(QueryStart[s+1]−QueryStart[s])/AttnTile⌉.
func AttentionTiles(queryStart []int32) int {
	n := 0
	for s := 0; s+1 < len(queryStart); s++ {
		n += (int(queryStart[s+1]-queryStart[s]) + AttnTile - 1) / AttnTile
	}
	return n
}

// AttnMode selects which of llama.cpp's two CPU attention paths the
// arithmetic reproduces (bit for bit, see attentionJob.matmul and
// attentionJob.flash). Both compute softmax(Scale·q·Kᵀ)·V; they differ in
// summation orders and in where values are rounded to the cache's
// precision, which is enough to change greedy choices of quantized models.
type AttnMode int

const (
	// AttnMatMul (the default) follows ggml's unfused path (llama.cpp with
	// flash attention off, as llama-cpp-python runs it): KQ = mul_mat of the
	// cache with the query rounded to the cache type, soft_max with its
	// 16-wide vector exponential, probabilities rounded to the cache type,
	// then mul_mat of the transposed V cache with them. Bit-exact at any
	// context length.
	AttnMatMul AttnMode = iota
	// AttnFlash follows ggml's flash attention (llama-server's default):
	// the query is rounded to F16 (BF16 for a BF16 cache; llama.cpp casts an
	// F32 cache to F16 first), positions are visited in order with an online
	// softmax (running maximum M and sum S, rescaling by expf(M_old − s)
	// when the maximum grows), and an F16 or F32 cache accumulates the
	// weighted values in F16, a BF16 cache in float32. Bit-exact while
	// llama.cpp's context holds fewer than 512 cells (a sequence of at most
	// 256 tokens); beyond, llama.cpp splits the cells between its threads
	// and merges partial results, which depends on its thread count and is
	// not reproduced.
	AttnFlash
	// AttnTiled is the fast arithmetic's attention (attention_tiled.go):
	// float32 scores and probabilities in a fixed order of its own, one
	// task per (query tile, KV head) sharing each converted cache block
	// across the tile's tokens and the KV head's query heads. It follows
	// no llama.cpp path; it is what the fast arithmetic runs.
	AttnTiled
)

// Attention computes softmax(Scale·q·Kᵀ)·V for every (token, query head),
// rounding as a.Mode says, split over the workers by (query tile, head) —
// (query tile, KV head) for AttnTiled: max(a.Tiles, real tiles)·Heads (or
// ·KVHeads) tasks, the tile→(sequence, tokens) map
// built here into a reused buffer. Each (token, head) visits its context
// positions in order with exactly the arithmetic of a lone token, so a
// token's result depends only on its own sequence, never on the rest of
// the batch, its tile, a.Tiles or the thread count.
//
// It panics on inconsistent shapes; callers validate batches first.
func (p *Pool) Attention(a *Attention, kv *KVLayer) {
	checkAttention(a, kv, len(a.Positions))
	p.mu.Lock()
	defer p.mu.Unlock()
	p.run(&p.at, p.planAttention(a, kv))
	p.at.a, p.at.kv = nil, nil
}

// planAttention sets up p.at for a and returns its number of tasks. p.mu
// must be held.
func (p *Pool) planAttention(a *Attention, kv *KVLayer) int {
	real := AttentionTiles(a.QueryStart)
	tiles := max(real, a.Tiles)
	if cap(p.at.tiles) < tiles {
		p.at.tiles = make([]attnTile, 0, tiles)
	}
	p.at.tiles = p.at.tiles[:0]
	for s := range len(a.QueryStart) - 1 {
		for i, end := a.QueryStart[s], a.QueryStart[s+1]; i < end; i += AttnTile {
			p.at.tiles = append(p.at.tiles, attnTile{seq: int32(s), first: i, end: min(i+AttnTile, end)})
		}
	}
	p.at.a, p.at.kv, p.at.k, p.at.scratch = a, kv, p.impl, p.scratch
	return tiles * a.headTasks(kv)
}

func checkAttention(a *Attention, kv *KVLayer, n int) {
	hd := kv.HeadDim
	ns := len(a.QueryStart) - 1
	checkQ8(a, kv)
	ok := a.Heads > 0 && kv.KVHeads > 0 && a.Heads%kv.KVHeads == 0 && hd > 0 && kv.BlockSize > 0 &&
		len(a.Q) == n*a.Heads*hd && len(a.Out) == len(a.Q) && ns >= 0 && len(a.BlockTables) == ns &&
		len(kv.K32) == len(kv.V32) && len(kv.K16) == len(kv.V16) && len(kv.K8) == len(kv.V8) &&
		(a.Sinks == nil || len(a.Sinks) == a.Heads) &&
		(ns == 0 && n == 0 || ns > 0 && a.QueryStart[0] == 0 && int(a.QueryStart[ns]) == n)
	for s := 0; ok && s < ns; s++ {
		ok = a.QueryStart[s] <= a.QueryStart[s+1]
	}
	if !ok {
		panic(fmt.Sprintf("kernels: Attention shapes: %d tokens, %d heads over %d KV heads of dim %d, Q %d, Out %d, %d query starts, %d block tables",
			n, a.Heads, kv.KVHeads, hd, len(a.Q), len(a.Out), len(a.QueryStart), len(a.BlockTables)))
	}
}
