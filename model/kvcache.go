package model

import (
	"fmt"

	"pagoda/kernels"
)

// KVType is the element type of the paged KV cache (kernels.KVType: f32,
// f16, bf16).
type KVType = kernels.KVType

// The KV cache element types.
const (
	KVF32  = kernels.KVF32
	KVF16  = kernels.KVF16
	KVBF16 = kernels.KVBF16
)

// ParseKVType parses "f32", "f16" or "bf16".
func ParseKVType(s string) (KVType, error) { return kernels.ParseKVType(s) }

// KVCache is the memory of a paged KV cache (vLLM's KV cache tensors; the
// block manager, package kvcache, only decides which blocks hold what):
// one kernels.KVLayer per model layer, each NumBlocks blocks of BlockSize
// token slots, laid out as kernels.KVLayer describes. Block b of every
// layer is one contiguous run of BlockElems elements of K and of V, which
// is what swaps and copies move.
type KVCache struct {
	NumBlocks int
	BlockSize int
	Layers    []kernels.KVLayer
}

// Type is the cache's element type.
func (c *KVCache) Type() KVType {
	if len(c.Layers) == 0 {
		return KVF32
	}
	return c.Layers[0].Type
}

// NewKVCache allocates a zeroed cache, in ordinary pages: the kernel
// backs it as blocks are first written, during serving, and there a huge
// page costs (transparent huge pages with defrag "madvise" compact memory
// on the fault: 2.4 ms per MiB on the Zen 4 VM measured, against 0.45 for
// ordinary pages), while the attention measured no faster reading the
// cache from huge pages (BenchmarkAttentionDecodeLayers).
func NewKVCache(layers, numBlocks, blockSize, kvHeads, headDim int, t KVType) (*KVCache, error) {
	if layers <= 0 || numBlocks <= 0 || blockSize <= 0 || kvHeads <= 0 || headDim <= 0 {
		return nil, fmt.Errorf("kv cache: invalid shape layers=%d blocks=%d blockSize=%d kvHeads=%d headDim=%d",
			layers, numBlocks, blockSize, kvHeads, headDim)
	}
	if t != KVF32 && t != KVF16 && t != KVBF16 {
		return nil, fmt.Errorf("kv cache: unknown element type %v", t)
	}
	c := &KVCache{NumBlocks: numBlocks, BlockSize: blockSize}
	n := numBlocks * blockSize * kvHeads * headDim
	for range layers {
		l := kernels.KVLayer{Type: t, BlockSize: blockSize, KVHeads: kvHeads, HeadDim: headDim}
		if t == KVF32 {
			l.K32, l.V32 = make([]float32, n), make([]float32, n)
		} else {
			l.K16, l.V16 = make([]uint16, n), make([]uint16, n)
		}
		c.Layers = append(c.Layers, l)
	}
	return c, nil
}

// BlockBytes is the memory one block takes across all layers, K and V.
func BlockBytes(layers, blockSize, kvHeads, headDim int, t KVType) int {
	return 2 * layers * blockSize * kvHeads * headDim * t.Size()
}
