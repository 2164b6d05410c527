package model

import (
	"fmt"
	"slices"
)

// KVLayout is how a model's layers share the paged KV cache: its KV cache
// groups (vLLM's hybrid KV cache manager). Layers that attend alike (full
// attention, or one sliding window) form groups of Tensors layers each; a
// group has its own block table per sequence (package kvcache), and every
// group takes its blocks from one pool. A block of the pool holds Tensors
// layers' K and V: layer l lives in tensor Tensor[l], so the layers at the
// same place of different groups share a tensor and tell their blocks apart
// by block id (a block belongs to one group at a time).
//
//	Gemma 3 270M: 18 layers, every sixth full attention, the others a
//	512-position window → 3 full layers, 15 sliding → Tensors 3,
//	groups: full {5, 11, 17}, window {0, 1, 2}, {3, 4, 6}, {7, 8, 9},
//	{10, 12, 13}, {14, 15, 16}
//
// A model whose layers all attend alike has one group of all its layers
// (Tensors = layers): the plain paged cache.
type KVLayout struct {
	Windows []int // per group: its layers' sliding window in positions, 0 for full attention
	Group   []int // per layer: its group
	Tensor  []int // per layer: the KV tensor it reads and writes, 0 ≤ Tensor[l] < Tensors
	Tensors int   // layers per group: the KV tensors a block spans
}

// LayoutOf groups layers by attention window (windows[l], 0 or absent: full
// attention) as vLLM does: the group size is the smallest count of layers
// sharing a window, each kind's layers are cut, in order, into groups of
// that size (the last one possibly short), full attention's groups first.
func LayoutOf(layers int, windows []int) KVLayout {
	win := func(l int) int {
		if l < len(windows) {
			return max(windows[l], 0)
		}
		return 0
	}
	count := map[int]int{}
	var kinds []int
	for l := range layers {
		if count[win(l)] == 0 {
			kinds = append(kinds, win(l))
		}
		count[win(l)]++
	}
	slices.Sort(kinds)
	size := layers
	for _, k := range kinds {
		size = min(size, count[k])
	}
	lay := KVLayout{Group: make([]int, layers), Tensor: make([]int, layers), Tensors: max(size, 1)}
	for _, k := range kinds {
		n := 0
		for l := range layers {
			if win(l) != k {
				continue
			}
			if n%size == 0 {
				lay.Windows = append(lay.Windows, k)
			}
			lay.Group[l], lay.Tensor[l] = len(lay.Windows)-1, n%size
			n++
		}
	}
	return lay
}

// NumGroups is the number of KV cache groups.
func (k KVLayout) NumGroups() int { return len(k.Windows) }

// Hybrid reports whether the layout has more than one group.
func (k KVLayout) Hybrid() bool { return len(k.Windows) > 1 }

// SpreadGroups gives a batch built for one KV cache group (a slot per token,
// a table per sequence: what a hand-made batch has) a table and slots in
// every group of kv's layout: group g's blocks are group 0's shifted by
// g·NumBlocks/groups, so each group's layers keep their own blocks. Group
// 0's ids must stay below that stride. A batch that already has every
// group's, or a layout of one group, is returned as is.
func SpreadGroups(b *Batch, kv *KVCache) (*Batch, error) {
	groups := kv.Layout.NumGroups()
	if groups <= 1 || len(b.SlotMapping) != len(b.Tokens) {
		return b, nil
	}
	stride := int32(kv.NumBlocks / groups)
	out := *b
	out.SlotMapping, out.BlockTables = slices.Clone(b.SlotMapping), slices.Clone(b.BlockTables)
	for g := 1; g < groups; g++ {
		off := int32(g) * stride
		for _, sl := range b.SlotMapping {
			if sl >= 0 {
				sl += off * int32(kv.BlockSize)
			}
			out.SlotMapping = append(out.SlotMapping, sl)
		}
		for _, t := range b.BlockTables {
			shifted := make([]int32, len(t))
			for i, id := range t {
				if id >= stride {
					return nil, fmt.Errorf("block %d beyond the %d blocks of a KV cache group", id, stride)
				}
				shifted[i] = id + off
			}
			out.BlockTables = append(out.BlockTables, shifted)
		}
	}
	return &out, nil
}
