package nn

// releaseUnused drops from this rank's resident memory the pages of the
// file mapping its shard never reads (gguf.File.Release; the data is
// unchanged and the page cache keeps it), after the split and
// packWeights:
//
//   - column-parallel matrices (Q/K/V, gate/up): the other ranks' rows,
//     never touched, and this rank's rows too when the kernels read a
//     packed copy of them (kernels.Weight.ReadsCopy);
//   - row-parallel matrices (O, down): the whole tensor, read once to copy
//     this rank's columns to the heap;
//   - the output projection on the ranks that compute no logits (not
//     packed there, see packWeights), and on rank 0 when it reads a packed
//     copy of an untied output.weight.
//
// Matrices that share a fused tensor (Linear.Row0 or a part) keep their
// pages: a sibling may still read them. What stays mapped and resident is
// what the rank reads: the token embeddings' rows of the tokens it embeds,
// and the unpacked rows of its own shard.
func (m *Model) releaseUnused() error {
	r, n := m.tp.rank, m.tp.size
	for i := range m.layers {
		for _, l := range m.layers[i].linears() {
			if !l.whole {
				continue
			}
			w, rb := l.W, int64(l.W.RowBytes())
			switch {
			case l.Role == Column && !w.ReadsCopy():
				k := int64(w.Rows) // this rank's rows of the n·k
				if err := m.f.Release(l.Tensor, 0, int64(r)*k*rb); err != nil {
					return err
				}
				if err := m.f.Release(l.Tensor, int64(r+1)*k*rb, int64(n)*k*rb); err != nil {
					return err
				}
			case l.Role == Column:
				if err := m.f.Release(l.Tensor, 0, int64(n*w.Rows)*rb); err != nil {
					return err
				}
			case l.Role == Row:
				full := w
				full.Cols *= n // the file's row length
				if err := m.f.Release(l.Tensor, 0, int64(w.Rows*full.RowBytes())); err != nil {
					return err
				}
			}
		}
	}
	if m.untied && (!m.tp.logits() || m.output.ReadsCopy()) {
		return m.f.Release("output.weight", 0, int64(m.cfg.VocabSize*m.output.RowBytes()))
	}
	return nil
}
