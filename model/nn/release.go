package nn

// releaseUnused drops from this rank's resident memory the pages of the
// file mapping it never reads again (gguf.File.Release; the data is
// unchanged and the page cache keeps it), after the split and
// packWeights, on every rank count:
//
//   - every matrix whose kernels read a packed copy
//     (kernels.Weight.ReadsCopy): the whole tensor — with one rank this
//     halves a dense model's resident memory under the fast arithmetic,
//     which repacks every matrix (TinyLlama's shape, Q4_K: 1,653 → 1,098
//     MiB resident after the load);
//   - under tensor parallelism, column-parallel matrices (Q/K/V, gate/up)
//     read in place: the other ranks' rows, never touched; row-parallel
//     ones (O, down): the whole tensor, read once to copy this rank's
//     columns to the heap;
//   - the output projection on the ranks that compute no logits (not
//     packed there, see packWeights), and where it reads a packed copy of
//     an untied output.weight.
//
// Matrices that share a tensor (Linear.Row0 or a part: a fused matrix, a
// mixture's experts) keep their pages here: a sibling may still read
// them (releaseParts releases such a tensor whole when no part reads it).
// What stays mapped and resident is what the rank reads: the token
// embeddings' rows of the tokens it embeds (and a tied output head), and
// the matrices read in place (the exact arithmetic's).
func (m *Model) releaseUnused() error {
	r, n := m.tp.rank, m.tp.size
	for i := range m.layers {
		for _, l := range m.layers[i].linears() {
			if !l.whole {
				continue
			}
			w, rb := l.W, int64(l.W.RowBytes())
			switch {
			case w.ReadsCopy():
				ti, _ := m.f.TensorInfo(l.Tensor)
				if err := m.f.Release(l.Tensor, 0, ti.Size); err != nil {
					return err
				}
				m.released = append(m.released, l.Tensor)
			case l.Role == Column && n > 1:
				k := int64(w.Rows) // this rank's rows of the n·k
				if err := m.f.Release(l.Tensor, 0, int64(r)*k*rb); err != nil {
					return err
				}
				if err := m.f.Release(l.Tensor, int64(r+1)*k*rb, int64(n)*k*rb); err != nil {
					return err
				}
			case l.Role == Row && n > 1:
				full := w
				full.Cols *= n // the file's row length
				if err := m.f.Release(l.Tensor, 0, int64(w.Rows*full.RowBytes())); err != nil {
					return err
				}
			}
		}
	}
	if m.untied && (!m.tp.logits() || m.output.ReadsCopy()) {
		m.released = append(m.released, "output.weight")
		return m.f.Release("output.weight", 0, int64(m.cfg.VocabSize*m.output.RowBytes()))
	}
	return nil
}

// releaseParts releases whole the tensors this rank holds as parts (no
// Linear is the whole tensor: the experts of a mixture, views into one 3-D
// tensor; fused matrices) when every part it holds reads a packed copy:
// then nothing reads the file's bytes of the tensor again. It runs after
// packWeights on every rank count. A mixture's experts would otherwise keep the file's pages
// resident beside their copies, twice the experts' bytes (Qwen3-30B-A3B's
// shape, 28 layers, Q4_K_M: 21,253 MiB resident after the load, 10,939 MiB
// of it the copies).
func (m *Model) releaseParts() error {
	copied := map[string]bool{} // tensor → every part so far reads a copy
	var names []string
	for i := range m.layers {
		for _, l := range m.layers[i].linears() {
			if l.whole || l.Tensor == "" {
				continue
			}
			all, seen := copied[l.Tensor]
			if !seen {
				names = append(names, l.Tensor)
				all = true
			}
			copied[l.Tensor] = all && l.W.ReadsCopy()
		}
	}
	for _, name := range names {
		if !copied[name] {
			continue
		}
		ti, _ := m.f.TensorInfo(name)
		if err := m.f.Release(name, 0, ti.Size); err != nil {
			return err
		}
		m.released = append(m.released, name)
	}
	return nil
}

// Released returns the tensors whose file pages the model released whole
// at load because it reads them only through packed copies (the layers'
// matrices, a mixture's experts and fused matrices held as parts, an
// untied output head).
func (m *Model) Released() []string { return m.released }
