package model

import (
	"fmt"

	"pagoda/kernels"
)

// KVType is the element type of the paged KV cache (kernels.KVType: f32,
// f16, bf16, q8_0).
type KVType = kernels.KVType

// The KV cache element types.
const (
	KVF32  = kernels.KVF32
	KVF16  = kernels.KVF16
	KVBF16 = kernels.KVBF16
	KVQ8_0 = kernels.KVQ8_0
)

// ParseKVType parses "f32", "f16", "bf16" or "q8_0".
func ParseKVType(s string) (KVType, error) { return kernels.ParseKVType(s) }

// KVCache is the memory of a paged KV cache (vLLM's KV cache tensors; the
// block manager, package kvcache, only decides which blocks hold what):
// Tensors kernels.KVLayer, each NumBlocks blocks of BlockSize token slots,
// laid out as kernels.KVLayer describes, and one view per model layer
// (Layers[l] = Tensors[Layout.Tensor[l]]): with KV cache groups several
// layers share a tensor, each through its own group's blocks. Block b of a
// tensor is one contiguous run of BlockElems elements of K and of V; swaps
// and copies move block b of every tensor.
type KVCache struct {
	NumBlocks int
	BlockSize int
	Layout    KVLayout
	Tensors   []kernels.KVLayer
	Layers    []kernels.KVLayer
}

// Type is the cache's element type.
func (c *KVCache) Type() KVType {
	if len(c.Tensors) == 0 {
		return KVF32
	}
	return c.Tensors[0].Type
}

// NewKVCache allocates a zeroed cache for a model of the given layout (one
// tensor per layer when it has one group), in ordinary pages: the kernel
// backs it as blocks are first written, during serving, and there a huge
// page costs (transparent huge pages with defrag "madvise" compact memory
// on the fault: 2.4 ms per MiB on the Zen 4 VM measured, against 0.45 for
// ordinary pages), while the attention measured no faster reading the
// cache from huge pages (BenchmarkAttentionDecodeLayers).
func NewKVCache(layout KVLayout, numBlocks, blockSize, kvHeads, headDim int, t KVType) (*KVCache, error) {
	layers := len(layout.Tensor)
	if layers <= 0 || layout.Tensors <= 0 || numBlocks <= 0 || blockSize <= 0 || kvHeads <= 0 || headDim <= 0 {
		return nil, fmt.Errorf("kv cache: invalid shape layers=%d tensors=%d blocks=%d blockSize=%d kvHeads=%d headDim=%d",
			layers, layout.Tensors, numBlocks, blockSize, kvHeads, headDim)
	}
	if err := CheckKVType(t, headDim); err != nil {
		return nil, err
	}
	c := &KVCache{NumBlocks: numBlocks, BlockSize: blockSize, Layout: layout}
	for range layout.Tensors {
		c.Tensors = append(c.Tensors, kernels.NewKVLayer(t, numBlocks, blockSize, kvHeads, headDim))
	}
	for l := range layers {
		c.Layers = append(c.Layers, c.Tensors[layout.Tensor[l]])
	}
	return c, nil
}

// CheckKVType says whether a cache of type t can hold rows of headDim
// elements: any known type, Q8_0 for a multiple of 32 (ggml's blocks run
// along the head dimension).
func CheckKVType(t KVType, headDim int) error {
	switch {
	case t != KVF32 && t != KVF16 && t != KVBF16 && t != KVQ8_0:
		return fmt.Errorf("kv cache: unknown element type %v", t)
	case t == KVQ8_0 && headDim%32 != 0:
		return fmt.Errorf("kv cache: q8_0 needs a head dimension that is a multiple of 32, the model's is %d", headDim)
	}
	return nil
}

// BlockBytes is the memory one block of the pool takes, K and V: tensors
// layers' worth (KVLayout.Tensors; every layer with one group). A Q8_0
// block takes 34 bytes per 32 elements.
func BlockBytes(tensors, blockSize, kvHeads, headDim int, t KVType) int {
	return 2 * tensors * t.Bytes(blockSize*kvHeads*headDim)
}
