package kvcache

import "fmt"

// Swapping moves a whole sequence group (the sequences sharing blocks
// through Fork: parallel samples, beams) between the pools. A block shared
// by k tables of the group is copied once and its copy gets ref count k, so
// the group's sharing survives the round trip:
//
//	device                         host
//	seq 1: [4, 9, 2]   SwapOut    seq 1: [0, 1, 2]    Swap{4,0} Swap{9,1}
//	seq 2: [4, 9, 6]  ───────►    seq 2: [0, 1, 3]    Swap{2,2} Swap{6,3}
//	4, 9 ref 2                    0, 1 ref 2
//
// Device blocks lose the group's references; those reaching zero go to the
// free list (hashed ones stay cached until evicted). On SwapIn, a host block
// whose content is still cached on the device (same hash and content id) is
// shared again without a copy; the others are copied into fresh blocks.

// group validates seqIDs: known, distinct, and on the host when onHost,
// on the device otherwise.
func (m *Manager) group(seqIDs []int64, onHost bool) error {
	for i, id := range seqIDs {
		st, ok := m.seqs[id]
		switch {
		case !ok:
			return fmt.Errorf("%w: %d", ErrUnknownSequence, id)
		case st.onHost && !onHost:
			return fmt.Errorf("%w: %d", ErrSwappedOut, id)
		case !st.onHost && onHost:
			return fmt.Errorf("%w: %d", ErrNotSwappedOut, id)
		}
		for _, prev := range seqIDs[:i] {
			if prev == id {
				return fmt.Errorf("%w: %d", ErrDuplicateSequence, id)
			}
		}
	}
	return nil
}

// distinctBlocks counts the distinct blocks of the group's tables.
func (m *Manager) distinctBlocks(seqIDs []int64) int {
	for _, id := range seqIDs {
		for _, t := range m.seqs[id].tables {
			for _, b := range t {
				if b != NullBlock && m.remap[b] == noLink {
					m.remap[b] = 0
					m.touched = append(m.touched, b)
				}
			}
		}
	}
	n := len(m.touched)
	m.clearRemap()
	return n
}

func (m *Manager) clearRemap() {
	for _, b := range m.touched {
		m.remap[b] = noLink
	}
	m.touched = m.touched[:0]
}

// CanSwapOut reports whether SwapOut(seqIDs) would succeed: the group is
// valid and on the device, and the host pool has a free block for each of
// its distinct blocks.
func (m *Manager) CanSwapOut(seqIDs []int64) bool {
	return m.group(seqIDs, false) == nil && m.distinctBlocks(seqIDs) <= m.host.numFree
}

// NumSwapInBlocks is the number of free device blocks SwapIn(seqIDs) takes
// (an upper bound: blocks still cached on the device are reused).
func (m *Manager) NumSwapInBlocks(seqIDs []int64) int { return m.distinctBlocks(seqIDs) }

// CanSwapIn reports whether SwapIn(seqIDs) would succeed: the group is valid
// and swapped out, and the device pool has a free block for each of its
// distinct blocks (fewer may be taken, thanks to cache hits).
func (m *Manager) CanSwapIn(seqIDs []int64) bool {
	return m.group(seqIDs, true) == nil && m.distinctBlocks(seqIDs) <= m.device.numFree
}

// SwapOut moves the block tables of seqIDs to the host pool and appends to
// mapping one Swap{device, host} per distinct block, in table order. The
// runner must execute them before any freed device block is written again.
// On error nothing changes.
func (m *Manager) SwapOut(seqIDs []int64, mapping []Swap) ([]Swap, error) {
	return m.swap(seqIDs, mapping, m.device, m.host, ErrNoSwapSpace)
}

// SwapIn moves the block tables of seqIDs back to the device pool and
// appends to mapping one Swap{host, device} per distinct block that had to
// be copied, in table order. On error nothing changes.
func (m *Manager) SwapIn(seqIDs []int64, mapping []Swap) ([]Swap, error) {
	return m.swap(seqIDs, mapping, m.host, m.device, ErrNoFreeBlocks)
}

// swap moves the group's tables from pool src to pool dst (the other one),
// failing with errFull when dst lacks a free block per distinct block. Each
// distinct block gets one block in dst, which every table of the group
// shares; mapping gains a Swap per block copied.
func (m *Manager) swap(seqIDs []int64, mapping []Swap, src, dst *Pool, errFull error) ([]Swap, error) {
	toHost := dst == m.host
	if err := m.group(seqIDs, !toHost); err != nil {
		return mapping, err
	}
	if n := m.distinctBlocks(seqIDs); n > dst.numFree {
		return mapping, fmt.Errorf("%w: group needs %d, %d free", errFull, n, dst.numFree)
	}
	for _, id := range seqIDs {
		for _, t := range m.seqs[id].tables {
			for _, b := range t {
				if b == NullBlock {
					continue
				}
				if d := m.remap[b]; d != noLink {
					dst.acquire(d)
					continue
				}
				d, copied := m.counterpart(b, src, dst, toHost)
				if copied {
					mapping = append(mapping, Swap{Src: b, Dst: d})
				}
				m.remap[b] = d
				m.touched = append(m.touched, b)
			}
		}
	}
	m.move(seqIDs, src, toHost)
	return mapping, nil
}

// counterpart takes block b of src's block in dst, with one reference: on
// the way in, a device block still caching the same content is shared;
// otherwise a fresh block receives a copy (copied), which on the device
// joins the prefix cache again.
func (m *Manager) counterpart(b int32, src, dst *Pool, toHost bool) (d int32, copied bool) {
	if !toHost {
		if d, ok := m.stillCached(b); ok {
			dst.acquire(d)
			return d, false
		}
	}
	d = dst.alloc()
	dst.copyBlock(d, src, b)
	if !toHost {
		m.register(d)
	}
	return d, true
}

// stillCached returns the cached device block with the same hash and
// content id as host block h.
func (m *Manager) stillCached(h int32) (int32, bool) {
	hb := &m.host.blocks[h]
	if !hb.hashed || m.device.cached == nil {
		return noLink, false
	}
	d, ok := m.device.cached[hb.hash]
	if !ok || m.device.blocks[d].cid != hb.cid || m.device.blocks[d].group != hb.group {
		return noLink, false
	}
	return d, true
}

// move rewrites the group's tables through m.remap, dropping each table's
// references in the source pool last block first, and clears the remap.
func (m *Manager) move(seqIDs []int64, from *Pool, onHost bool) {
	for _, id := range seqIDs {
		st := m.seqs[id]
		for _, t := range st.tables {
			for i := len(t) - 1; i >= 0; i-- {
				if b := t[i]; b != NullBlock {
					from.release(b)
					t[i] = m.remap[b]
				}
			}
		}
		st.onHost = onHost
	}
	m.clearRemap()
}
