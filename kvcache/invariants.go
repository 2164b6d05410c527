package kvcache

import (
	"errors"
	"fmt"
)

// CheckInvariants verifies the bookkeeping (see the package documentation)
// and returns every violation found, joined, or nil. It walks all blocks and
// tables and allocates: a test and debugging aid, not for the step path.
func (m *Manager) CheckInvariants() error {
	var errs []error
	devRefs := make([]int32, m.device.numBlocks)
	hostRefs := make([]int32, m.host.numBlocks)
	for seqID, st := range m.seqs {
		refs := devRefs
		if st.onHost {
			refs = hostRefs
		}
		errs = append(errs, m.checkTable(seqID, st, refs)...)
	}
	errs = append(errs, m.device.check("device", devRefs)...)
	errs = append(errs, m.host.check("host", hostRefs)...)
	if m.host.cached != nil {
		errs = append(errs, errors.New("host pool has a prefix cache"))
	}
	return errors.Join(errs...)
}

// checkTable verifies one sequence's tables (shape, hash chains; in a
// sliding-window group, NullBlock exactly where no query reads) and counts
// their references into refs.
func (m *Manager) checkTable(seqID int64, st *seqState, refs []int32) []error {
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("seq %d: "+format, append([]any{seqID}, args...)...))
	}
	p := m.pool(st)
	for g, t := range st.tables {
		if len(t) != m.blocksFor(st.numTokens) {
			bad("group %d: %d blocks for %d tokens", g, len(t), st.numTokens)
		}
		// The window reaches back from the last token in the table (the
		// first the coming step computes, at the latest).
		live := 0
		if st.numTokens > 0 {
			live = m.released(m.windows[g], st.numTokens-1)
		}
		var prev *block
		for i, id := range t {
			if id == NullBlock {
				if i >= live {
					bad("group %d: null block at logical %d inside the window (first live %d)", g, i, live)
				}
				prev = nil
				continue
			}
			if id < 0 || int(id) >= p.numBlocks {
				bad("group %d: block %d out of range", g, id)
				return errs
			}
			refs[id]++
			b := &p.blocks[id]
			want := min(m.blockSize, st.numTokens-i*m.blockSize)
			if int(b.numTokens) != want {
				bad("group %d: block %d (logical %d) holds %d tokens, want %d", g, id, i, b.numTokens, want)
			}
			full := int(b.numTokens) == m.blockSize
			proposal := (i+1)*m.blockSize > st.numTokens-st.spec // holds a proposal: never hashed
			if b.hashed != (full && m.device.cached != nil && !proposal) {
				bad("group %d: block %d (logical %d) hashed=%v, full=%v", g, id, i, b.hashed, full)
			}
			if b.hashed && int(b.group) != g {
				bad("block %d hashed in group %d, held by group %d", id, b.group, g)
			}
			if b.hashed && (i == 0 || prev != nil) {
				parentHash, parentCID := rootOf(g), uint64(0)
				if prev != nil {
					parentHash, parentCID = prev.hash, prev.cid
				}
				if b.parent != parentCID {
					bad("block %d parent content id %d, previous block's is %d", id, b.parent, parentCID)
				}
				if h := m.hashFn(parentHash, p.filled(id)); h != b.hash {
					bad("block %d hash %#x, chain gives %#x", id, b.hash, h)
				}
			}
			prev = b
		}
	}
	return errs
}

// check verifies the pool's free list, ref counts against the table
// references refs, and prefix-cache entries.
func (p *Pool) check(name string, refs []int32) []error {
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s pool: "+format, append([]any{name}, args...)...))
	}
	inList := p.walkFreeList(bad)
	if inList == nil {
		return errs
	}
	used := 0
	for id := range int32(p.numBlocks) {
		b := &p.blocks[id]
		if b.ref != refs[id] {
			bad("block %d ref %d, referenced by %d tables", id, b.ref, refs[id])
		}
		if b.ref > 0 {
			used++
		}
		if inList[id] != (b.ref == 0) {
			bad("block %d ref %d but in free list = %v", id, b.ref, inList[id])
		}
		if !inList[id] && (b.prev != noLink || b.next != noLink) {
			bad("block %d in use but linked (%d, %d)", id, b.prev, b.next)
		}
		if inList[id] && b.hashed && p.cached[b.hash] != id {
			bad("free block %d holds hash %#x but is not cached", id, b.hash)
		}
		if inList[id] && !b.hashed && b.numTokens != 0 {
			bad("free unhashed block %d holds %d tokens", id, b.numTokens)
		}
		if b.hashed && int(b.numTokens) != p.blockSize {
			bad("block %d hashed with %d tokens", id, b.numTokens)
		}
	}
	if p.numFree+used != p.numBlocks {
		bad("%d free + %d used != %d blocks", p.numFree, used, p.numBlocks)
	}
	for h, id := range p.cached {
		if id < 0 || int(id) >= p.numBlocks || !p.blocks[id].hashed || p.blocks[id].hash != h {
			bad("cache entry %#x → block %d without that hash", h, id)
		}
	}
	return errs
}

// walkFreeList follows the free list from HEAD to TAIL checking its links
// and count, and returns which blocks it holds, or nil when it is broken.
func (p *Pool) walkFreeList(bad func(format string, args ...any)) []bool {
	inList := make([]bool, p.numBlocks)
	n, prev := 0, p.head()
	for id := p.blocks[p.head()].next; id != p.tail(); id = p.blocks[id].next {
		if id < 0 || int(id) >= p.numBlocks || inList[id] || n >= p.numBlocks {
			bad("free list broken at %d after %d entries", id, n)
			return nil
		}
		if p.blocks[id].prev != prev {
			bad("free block %d prev %d, want %d", id, p.blocks[id].prev, prev)
		}
		inList[id] = true
		n++
		prev = id
	}
	if p.blocks[p.tail()].prev != prev {
		bad("tail prev %d, want %d", p.blocks[p.tail()].prev, prev)
	}
	if n != p.numFree {
		bad("free list has %d blocks, counter says %d", n, p.numFree)
	}
	return inList
}
