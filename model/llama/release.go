package llama

import (
	"fmt"

	"pagoda/kernels"
)

// releaseUnused drops from this rank's resident memory the pages of the
// file mapping its shard never reads (gguf.File.Release; the data is
// unchanged and the page cache keeps it), after split and packWeights:
//
//   - column-parallel matrices (wq/wk/wv, gate/up): the other ranks' rows,
//     never touched, and this rank's rows too when the kernels read a
//     packed copy of them (kernels.Weight.ReadsCopy);
//   - row-parallel matrices (wo, down): the whole tensor, read once to copy
//     this rank's columns to the heap;
//   - the output projection on the ranks that compute no logits (not
//     packed there, see packWeights), and on rank 0 when it reads a packed
//     copy of an untied output.weight.
//
// What stays mapped and resident is what the rank reads: the token
// embeddings' rows of the tokens it embeds, and the unpacked rows of its
// own shard.
func (m *Model) releaseUnused(untied bool) error {
	r, n := m.sh.rank, m.sh.size
	rel := func(name string, w kernels.Weight, rows, keepFrom, keepTo int) error {
		size := int64(rows * w.RowBytes())
		if w.ReadsCopy() || keepFrom == keepTo {
			return m.f.Release(name, 0, size)
		}
		rb := int64(w.RowBytes())
		if err := m.f.Release(name, 0, int64(keepFrom)*rb); err != nil {
			return err
		}
		return m.f.Release(name, int64(keepTo)*rb, size)
	}
	for i := range m.layers {
		l := &m.layers[i]
		name := func(s string) string { return fmt.Sprintf("blk.%d.%s.weight", i, s) }
		for _, c := range []struct {
			w    kernels.Weight
			name string
		}{{l.wq, "attn_q"}, {l.wk, "attn_k"}, {l.wv, "attn_v"}, {l.gate, "ffn_gate"}, {l.up, "ffn_up"}} {
			k := c.w.Rows // this rank's rows of the n·k
			if err := rel(name(c.name), c.w, n*k, r*k, (r+1)*k); err != nil {
				return err
			}
		}
		for _, c := range []struct {
			w    kernels.Weight
			name string
		}{{l.wo, "attn_output"}, {l.down, "ffn_down"}} {
			full := c.w
			full.Cols *= n // the file's row length
			if err := rel(name(c.name), full, c.w.Rows, 0, 0); err != nil {
				return err
			}
		}
	}
	if untied && (!m.sh.logits() || m.output.ReadsCopy()) {
		return m.f.Release("output.weight", 0, int64(m.cfg.VocabSize*m.output.RowBytes()))
	}
	return nil
}
