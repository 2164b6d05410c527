package tokenizer

// bpeBigram is a candidate merge of two adjacent symbols that a merge rule joins.
type bpeBigram struct {
	left, right int
	lid, rid    int32 // the symbols' tokens when queued, to detect stale candidates
	rank        int32
	id          int32 // the merged token
}

// bpeLess puts the lowest rank first and, among equal ranks, the leftmost pair.
func bpeLess(a, b bpeBigram) bool {
	return a.rank < b.rank || (a.rank == b.rank && a.left < b.left)
}

// bpeSession is the scratch space of one byte-level BPE call, reused across its words.
type bpeSession struct {
	t     *Tokenizer
	syms  []symbol
	queue minHeap[bpeBigram]
	buf   []byte
}

// bpeEncode tokenizes one raw-text fragment with byte-level BPE: the pre-tokenizer cuts it
// into pieces, each piece is mapped byte by byte to GPT-2's printable characters, and each is
// merged by rank (llm_tokenizer_bpe). Invalid UTF-8 is kept byte for byte (llama.cpp would
// substitute U+FFFD), so every byte string round-trips, except bytes the vocabulary has no
// token for (vocabularies trained on UTF-8 text often lack 0xF5-0xFF): like llama.cpp and
// Hugging Face, those are dropped rather than mapped to an unknown token.
//
// With limit ≥ 0 it stops after the first pre-token that takes out past limit tokens.
func (t *Tokenizer) bpeEncode(fragment string, out []int32, limit int) []int32 {
	dt := decodeText(fragment)
	s := &bpeSession{t: t}
	s.queue.less = bpeLess
	lo := 0
	for _, hi := range preTokenize(dt, t.pretok) {
		s.buf = byteEncode(s.buf[:0], fragment[dt.offs[lo]:dt.offs[hi]])
		out = s.encodeWord(string(s.buf), out)
		if limit >= 0 && len(out) > limit {
			return out
		}
		lo = hi
	}
	return out
}

// encodeWord appends the tokens of one byte-encoded pre-token.
func (s *bpeSession) encodeWord(word string, out []int32) []int32 {
	t := s.t
	if t.ignoreMerges {
		if id, ok := t.ids[word]; ok {
			return append(out, id)
		}
	}
	s.syms = newSymbols(word, s.syms)
	for i := range s.syms {
		if id, ok := t.ids[word[s.syms[i].start:s.syms[i].end]]; ok {
			s.syms[i].id = id
		}
	}
	s.queue.items = s.queue.items[:0]
	for i := 1; i < len(s.syms); i++ {
		s.tryAdd(i-1, i)
	}
	for s.queue.len() > 0 {
		b := s.queue.pop()
		l, r := &s.syms[b.left], &s.syms[b.right]
		if l.start == l.end || r.start == r.end || l.next != b.right || l.id != b.lid || r.id != b.rid {
			continue // stale: one side was merged since this candidate was queued
		}
		l.id = b.id
		prev, next := join(s.syms, b.left, b.right)
		s.tryAdd(prev, b.left)
		s.tryAdd(b.left, next)
	}
	for sym := range linked(s.syms) {
		if sym.id != NoToken {
			out = append(out, sym.id)
		}
	}
	return out
}

func (s *bpeSession) tryAdd(left, right int) {
	if left < 0 || right < 0 {
		return
	}
	lid, rid := s.syms[left].id, s.syms[right].id
	if lid == NoToken || rid == NoToken {
		return
	}
	m, ok := s.t.merges[pairKey(lid, rid)]
	if !ok {
		return
	}
	s.queue.push(bpeBigram{left: left, right: right, lid: lid, rid: rid, rank: m.rank, id: m.id})
}
