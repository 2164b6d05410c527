package model

import (
	"fmt"
	"slices"
)

// KVType is the element type of the paged KV cache.
type KVType int

const (
	KVF32 KVType = iota
	KVF16
	KVBF16
)

// kvTypeNames are the KV types' names, as String writes and ParseKVType
// reads them.
var kvTypeNames = [...]string{KVF32: "f32", KVF16: "f16", KVBF16: "bf16"}

func (t KVType) String() string {
	if t >= 0 && int(t) < len(kvTypeNames) {
		return kvTypeNames[t]
	}
	return fmt.Sprintf("kvtype(%d)", int(t))
}

// Size is the bytes per element.
func (t KVType) Size() int {
	if t == KVF32 {
		return 4
	}
	return 2
}

// ParseKVType parses "f32", "f16" or "bf16".
func ParseKVType(s string) (KVType, error) {
	if i := slices.Index(kvTypeNames[:], s); i >= 0 {
		return KVType(i), nil
	}
	return 0, fmt.Errorf("unknown KV cache type %q (allowed: f32, f16, bf16)", s)
}

// KVCache is the device memory of the paged KV cache: for every layer, a K
// and a V array laid out as (block, slot, kvHead, headDim). Slot s of the
// whole cache is block s/BlockSize, offset s%BlockSize. For f32 the data is
// in K32/V32; for f16 and bf16 it is the raw 16-bit pattern in K16/V16.
// Which blocks hold what is decided by the block manager, not here.
type KVCache struct {
	Type      KVType
	NumBlocks int
	BlockSize int
	KVHeads   int
	HeadDim   int
	K32, V32  [][]float32 // (layer)(block, kvHead, slot, headDim), Type == KVF32
	K16, V16  [][]uint16  // (layer)(block, kvHead, slot, headDim), Type != KVF32
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
	c := &KVCache{Type: t, NumBlocks: numBlocks, BlockSize: blockSize, KVHeads: kvHeads, HeadDim: headDim}
	n := numBlocks * blockSize * kvHeads * headDim
	for range layers {
		if t == KVF32 {
			c.K32 = append(c.K32, make([]float32, n))
			c.V32 = append(c.V32, make([]float32, n))
		} else {
			c.K16 = append(c.K16, make([]uint16, n))
			c.V16 = append(c.V16, make([]uint16, n))
		}
	}
	return c, nil
}

// BlockBytes is the memory one block takes across all layers, K and V.
func BlockBytes(layers, blockSize, kvHeads, headDim int, t KVType) int {
	return 2 * layers * blockSize * kvHeads * headDim * t.Size()
}

// SlotStride is the number of elements between consecutive slots.
func (c *KVCache) SlotStride() int { return c.KVHeads * c.HeadDim }
