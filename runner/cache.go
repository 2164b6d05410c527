package runner

import (
	"fmt"

	"pagoda/kvcache"
	"pagoda/model"
)

// CacheEngine owns the KV memory: the device cache the model reads and
// writes, and the host swap space, both model.KVCache (laid out as
// kernels.KVLayer describes). It executes the block operations of a step
// (vLLM's CacheEngine: swap_in, swap_out, copy) before the forward pass;
// which blocks hold what is the block manager's (package kvcache).
type CacheEngine struct {
	Device *model.KVCache
	Host   *model.KVCache // nil when there is no swap space
}

// NewCacheEngine allocates numBlocks device blocks and numHostBlocks host
// blocks for m.
func NewCacheEngine(m model.Model, numBlocks, numHostBlocks, blockSize int, t model.KVType) (*CacheEngine, error) {
	dev, err := m.NewKVCache(numBlocks, blockSize, t)
	if err != nil {
		return nil, err
	}
	ce := &CacheEngine{Device: dev}
	if numHostBlocks > 0 {
		if ce.Host, err = m.NewKVCache(numHostBlocks, blockSize, t); err != nil {
			return nil, err
		}
	}
	return ce, nil
}

// Apply runs a step's block operations in the only safe order: swap-outs
// first (their device blocks may be reused by this step), then swap-ins,
// then copy-on-write copies.
func (ce *CacheEngine) Apply(swapOut, swapIn []kvcache.Swap, copies []kvcache.Copy) error {
	if (len(swapOut) > 0 || len(swapIn) > 0) && ce.Host == nil {
		return fmt.Errorf("runner: swap requested but there is no swap space")
	}
	for _, s := range swapOut {
		copyBlock(ce.Host, s.Dst, ce.Device, s.Src)
	}
	for _, s := range swapIn {
		copyBlock(ce.Device, s.Dst, ce.Host, s.Src)
	}
	for _, c := range copies {
		copyBlock(ce.Device, c.Dst, ce.Device, c.Src)
	}
	return nil
}

// copyBlock copies block src of from into block dst of to, every tensor
// (the layers of the block's group), K and V.
func copyBlock(to *model.KVCache, dst int32, from *model.KVCache, src int32) {
	for l := range from.Tensors {
		f, t := &from.Tensors[l], &to.Tensors[l]
		n := f.BlockElems()
		d, s := int(dst)*n, int(src)*n
		switch f.Type {
		case model.KVF32:
			copy(t.K32[d:d+n], f.K32[s:s+n])
			copy(t.V32[d:d+n], f.V32[s:s+n])
		case model.KVQ8_0: // bytes: 34 per 32 elements
			n = f.Type.Bytes(n)
			d, s = int(dst)*n, int(src)*n
			copy(t.K8[d:d+n], f.K8[s:s+n])
			copy(t.V8[d:d+n], f.V8[s:s+n])
		default:
			copy(t.K16[d:d+n], f.K16[s:s+n])
			copy(t.V16[d:d+n], f.V16[s:s+n])
		}
	}
}
