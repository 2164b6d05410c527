package nn

import (
	"errors"
	"fmt"
	"slices"

	"pagoda/model"
)

// ErrBadBatch is wrapped by every batch validation error of Forward.
var ErrBadBatch = errors.New("llama: invalid batch")

func badBatch(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrBadBatch, fmt.Sprintf(format, args...))
}

// checkCache verifies that kv was shaped for this model (this rank's KV
// heads).
func (m *Model) checkCache(kv *model.KVCache) error {
	c := m.local
	if kv == nil {
		return badBatch("nil KV cache")
	}
	if len(kv.Layers) != c.Layers || kv.BlockSize <= 0 || kv.NumBlocks <= 0 {
		return badBatch("KV cache of %d layers, blocks %d×%d; model has %d layers", len(kv.Layers), kv.NumBlocks, kv.BlockSize, c.Layers)
	}
	if lay := m.kvLayout; !slices.Equal(kv.Layout.Windows, lay.Windows) || !slices.Equal(kv.Layout.Group, lay.Group) {
		return badBatch("KV cache groups %v; model has %v", kv.Layout.Windows, lay.Windows)
	}
	for l := range kv.Layers {
		kl := &kv.Layers[l]
		n := kv.NumBlocks * kl.BlockElems()
		if kl.KVHeads != c.KVHeads || kl.HeadDim != c.HeadDim || kl.BlockSize != kv.BlockSize {
			return badBatch("KV cache layer %d of %d heads × %d dims in blocks of %d; model has %d KV heads × %d dims",
				l, kl.KVHeads, kl.HeadDim, kl.BlockSize, c.KVHeads, c.HeadDim)
		}
		k, v := len(kl.K32), len(kl.V32)
		switch kl.Type {
		case model.KVF32:
		case model.KVQ8_0:
			k, v, n = len(kl.K8), len(kl.V8), kl.Type.Bytes(n)
		default:
			k, v = len(kl.K16), len(kl.V16)
		}
		if k != n || v != n {
			return badBatch("KV cache layer %d holds %d/%d values of type %v, want %d", l, k, v, kl.Type, n)
		}
	}
	return nil
}

// checkBatch verifies a batch against the model and cache: consistent
// lengths, sequences laid end to end, each sequence's tokens being the
// last positions of its context, block tables covering the context with
// blocks inside the cache, each slot matching its position's block (or -1
// for a token whose K/V is not stored), token ids inside the vocabulary
// and logit rows inside the batch.
func (m *Model) checkBatch(b *model.Batch, kv *model.KVCache, logits []float32) error {
	if b == nil {
		return badBatch("nil batch")
	}
	n, ns := len(b.Tokens), b.NumSeqs()
	groups := m.kvLayout.NumGroups()
	switch {
	case n == 0 || ns == 0:
		return badBatch("empty batch")
	case len(b.Positions) != n || len(b.SlotMapping) != groups*n:
		return badBatch("%d tokens, %d positions, %d slots in %d KV cache groups", n, len(b.Positions), len(b.SlotMapping), groups)
	case len(b.QueryStart) != ns+1 || len(b.BlockTables) != groups*ns:
		return badBatch("%d sequences, %d query starts, %d block tables in %d KV cache groups", ns, len(b.QueryStart), len(b.BlockTables), groups)
	case b.QueryStart[0] != 0 || int(b.QueryStart[ns]) != n:
		return badBatch("query starts %d..%d do not span the %d tokens", b.QueryStart[0], b.QueryStart[ns], n)
	case len(logits) != len(b.LogitIndices)*m.logitWidth():
		return badBatch("logits buffer of %d for %d rows of %d", len(logits), len(b.LogitIndices), m.logitWidth())
	case b.Hidden != nil && len(b.Hidden) != len(b.LogitIndices)*m.cfg.Dim:
		return badBatch("hidden buffer of %d for %d rows of %d", len(b.Hidden), len(b.LogitIndices), m.cfg.Dim)
	}
	for i, t := range b.Tokens {
		if t < 0 || int(t) >= m.cfg.VocabSize {
			return badBatch("token %d: id %d outside the vocabulary of %d", i, t, m.cfg.VocabSize)
		}
	}
	for g, w := range m.kvLayout.Windows {
		slots, tables := b.SlotMapping[g*n:(g+1)*n], b.BlockTables[g*ns:(g+1)*ns]
		for s := range ns {
			if err := m.checkSeq(b, kv, s, slots, tables[s], w); err != nil {
				return err
			}
		}
	}
	for j, i := range b.LogitIndices {
		if i < 0 || int(i) >= n {
			return badBatch("logit index %d: row %d outside the %d tokens", j, i, n)
		}
	}
	return nil
}

// checkSeq verifies sequence s of the batch in one KV cache group: its
// slots, its block table and the group's window (0: full attention; with a
// window, the blocks wholly before the first query's window may be
// negative, released).
func (m *Model) checkSeq(b *model.Batch, kv *model.KVCache, s int, slots, table []int32, window int) error {
	q0, q1, ctx := int(b.QueryStart[s]), int(b.QueryStart[s+1]), int(b.ContextLens[s])
	bs := kv.BlockSize
	switch {
	case q1 <= q0:
		return badBatch("sequence %d: no tokens (query starts %d, %d)", s, q0, q1)
	case ctx < q1-q0 || ctx > m.cfg.ContextLen:
		return badBatch("sequence %d: context %d for %d new tokens, model context %d", s, ctx, q1-q0, m.cfg.ContextLen)
	case len(table) < (ctx+bs-1)/bs:
		return badBatch("sequence %d: %d blocks cannot hold %d tokens of %d-slot blocks", s, len(table), ctx, bs)
	}
	table = table[:(ctx+bs-1)/bs]
	released := 0 // blocks wholly before the first query's window
	if first := ctx - (q1 - q0); window > 0 && first-window+1 > 0 {
		released = (first - window + 1) / bs
	}
	for i, blk := range table {
		if (blk < 0 && i >= released) || int(blk) >= kv.NumBlocks {
			return badBatch("sequence %d: block table entry %d is block %d of %d", s, i, blk, kv.NumBlocks)
		}
	}
	for i := q0; i < q1; i++ {
		pos := ctx - (q1 - q0) + (i - q0)
		if int(b.Positions[i]) != pos {
			return badBatch("token %d of sequence %d: position %d, want %d", i, s, b.Positions[i], pos)
		}
		want := table[pos/bs]*int32(bs) + int32(pos%bs)
		if slot := slots[i]; slot != want && slot != -1 {
			return badBatch("token %d of sequence %d: slot %d, want %d from the block table", i, s, slot, want)
		}
	}
	return nil
}
