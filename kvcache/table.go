package kvcache

import "fmt"

// CanAllocate reports whether Allocate(_, tokens) would succeed now. Prefix
// cache hits on blocks in use by other sequences need no free block; hits on
// free cached blocks take one each.
func (m *Manager) CanAllocate(tokens []int32) AllocStatus {
	nb := m.blocksFor(len(tokens))
	if nb > m.device.numBlocks {
		return AllocNever
	}
	freeHits := m.matchPrefix(tokens)
	if nb-len(m.hits)+freeHits > m.device.numFree {
		return AllocLater
	}
	return AllocOK
}

// NumCachedTokens is the numCachedTokens Allocate(_, tokens) would return
// now: the leading tokens whose KV is in the prefix cache. It changes
// nothing and counts no query.
func (m *Manager) NumCachedTokens(tokens []int32) int {
	m.matchPrefix(tokens)
	return len(m.hits) * m.blockSize
}

// Allocate creates the block table of a new sequence holding tokens and
// reserves a slot for each. With prefix caching on, the leading full blocks
// found in the cache are shared (ref count +1) instead of allocated;
// numCachedTokens is the number of leading tokens whose KV is already in the
// cache (a multiple of the block size, always < len(tokens)), so the forward
// pass computes tokens[numCachedTokens:]. On error nothing changes.
//
// Reserve only tokens that the coming forward pass computes: a block enters
// the prefix cache as soon as its slots are all reserved, and other
// sequences may then share it. With chunked prefill, allocate
// prompt[:NumCachedTokens(prompt)+chunk] and reserve later chunks with
// AppendSlots.
//
//	tokens:  |a b c d|e f g h|i j|     BlockSize 4, "abcd" "efgh" cached
//	table:   [  7    ,  2    , 0 ]     7, 2 shared; 0 taken from the free head
//	numCachedTokens = 8
func (m *Manager) Allocate(seqID int64, tokens []int32) (numCachedTokens int, err error) {
	return m.allocate(seqID, tokens, true)
}

// AllocateUncached is Allocate without prefix-cache hits: every token gets
// a fresh slot and is computed (prompt logprobs need every position's
// logits). The blocks it fills are still hashed for later hits.
func (m *Manager) AllocateUncached(seqID int64, tokens []int32) error {
	_, err := m.allocate(seqID, tokens, false)
	return err
}

func (m *Manager) allocate(seqID int64, tokens []int32, useCache bool) (numCachedTokens int, err error) {
	if _, ok := m.seqs[seqID]; ok {
		return 0, fmt.Errorf("%w: %d", ErrSequenceExists, seqID)
	}
	nb := m.blocksFor(len(tokens))
	freeHits := 0
	m.hits = m.hits[:0]
	if useCache {
		freeHits = m.matchPrefix(tokens)
	}
	if need := nb - len(m.hits) + freeHits; need > m.device.numFree {
		return 0, fmt.Errorf("%w: sequence %d needs %d, %d free", ErrNoFreeBlocks, seqID, need, m.device.numFree)
	}
	if m.device.cached != nil && len(tokens) > 0 && useCache {
		m.stats.Queries++
		m.stats.QueryBlocks += int64((len(tokens) - 1) / m.blockSize)
		m.stats.HitBlocks += int64(len(m.hits))
		m.stats.QueryTokens += int64(len(tokens))
		m.stats.HitTokens += int64(len(m.hits) * m.blockSize)
	}
	st := m.newSeq(seqID)
	for _, id := range m.hits {
		m.device.acquire(id)
		st.blocks = append(st.blocks, id)
	}
	numCachedTokens = len(m.hits) * m.blockSize
	st.numTokens = numCachedTokens
	m.write(st, tokens[numCachedTokens:])
	return numCachedTokens, nil
}

// appendNeed returns how many free blocks appending n tokens to st takes,
// and whether its last block must be copied first (it is partial and shared).
func (m *Manager) appendNeed(st *seqState, n int) (need int, cow bool) {
	if n == 0 {
		return 0, false
	}
	room := 0
	pool := m.device
	if st.onHost {
		pool = m.host // a swapped-out table: what it will take once swapped in
	}
	if k := len(st.blocks); k > 0 {
		last := &pool.blocks[st.blocks[k-1]]
		room = m.blockSize - int(last.numTokens)
		cow = room > 0 && last.ref > 1
	}
	if cow {
		need = 1
	}
	if n > room {
		need += m.blocksFor(n - room)
	}
	return need, cow
}

// NumAppendBlocks is the number of free device blocks AppendSlots(seqID, n
// tokens) takes. Summed over a sequence group it is an upper bound: once
// one sequence copied a shared last block, the others no longer need to.
//
// For a swapped-out sequence it is what AppendSlots will take right after
// SwapIn (the scheduler checks that a group it swaps in can also run).
func (m *Manager) NumAppendBlocks(seqID int64, n int) (int, error) {
	st, err := m.lookup(seqID, true)
	if err != nil {
		return 0, err
	}
	need, _ := m.appendNeed(st, n)
	return need, nil
}

// CanAppend reports whether AppendSlots for n tokens of seqID would succeed.
func (m *Manager) CanAppend(seqID int64, n int) bool {
	st, err := m.lookup(seqID, false)
	if err != nil {
		return false
	}
	need, _ := m.appendNeed(st, n)
	return need <= m.device.numFree
}

// AppendSlots reserves slots for tokens appended to seqID and records their
// ids. It takes a new block whenever the last one is full. When the last
// block is partial and shared (after Fork), it is copied first: a new block
// replaces it in this table, Copy{Src: old, Dst: new} is appended to copies
// for the runner, and the old block loses a reference. Blocks it fills are
// hashed (prefix caching on). On error nothing changes. It does not allocate
// memory once the table's capacity covers the new blocks.
//
//	before: seq 1 [3, 5|x y . .]   seq 2 [3, 5]     5 shared, ref 2
//	AppendSlots(1, "z"): 5 → 8, Copy{5, 8}
//	after:  seq 1 [3, 8|x y z .]   seq 2 [3, 5]     5 ref 1, 8 ref 1
func (m *Manager) AppendSlots(seqID int64, tokens []int32, copies []Copy) ([]Copy, error) {
	st, err := m.lookup(seqID, false)
	if err != nil {
		return copies, err
	}
	need, cow := m.appendNeed(st, len(tokens))
	if need > m.device.numFree {
		return copies, fmt.Errorf("%w: sequence %d needs %d, %d free", ErrNoFreeBlocks, seqID, need, m.device.numFree)
	}
	if cow {
		k := len(st.blocks) - 1
		src := st.blocks[k]
		dst := m.device.alloc()
		m.device.copyBlock(dst, m.device, src)
		m.device.release(src)
		st.blocks[k] = dst
		copies = append(copies, Copy{Src: src, Dst: dst})
	}
	m.write(st, tokens)
	return copies, nil
}

// write stores tokens after st's last token, taking blocks from the free
// head as needed and sealing each block it fills. The caller checked that
// enough blocks are free and that the last block is not shared.
func (m *Manager) write(st *seqState, tokens []int32) {
	p := m.device
	for len(tokens) > 0 {
		k := len(st.blocks)
		if k == 0 || int(p.blocks[st.blocks[k-1]].numTokens) == m.blockSize {
			st.blocks = append(st.blocks, p.alloc())
			k++
		}
		id := st.blocks[k-1]
		b := &p.blocks[id]
		n := copy(p.slots(id)[b.numTokens:], tokens)
		b.numTokens += int32(n)
		st.numTokens += n
		tokens = tokens[n:]
		if int(b.numTokens) == m.blockSize {
			prev := noLink
			if k > 1 {
				prev = st.blocks[k-2]
			}
			m.seal(id, prev)
		}
	}
}

// Fork gives childID a block table sharing every block of parentID (ref
// counts +1), in whichever pool the parent lives. The first append to a
// shared partial last block copies it (see AppendSlots).
func (m *Manager) Fork(parentID, childID int64) error {
	parent, err := m.lookup(parentID, true)
	if err != nil {
		return err
	}
	if _, ok := m.seqs[childID]; ok {
		return fmt.Errorf("%w: %d", ErrSequenceExists, childID)
	}
	child := m.newSeq(childID)
	child.blocks = append(child.blocks, parent.blocks...)
	child.numTokens, child.onHost = parent.numTokens, parent.onHost
	p := m.pool(parent)
	for _, id := range parent.blocks {
		p.acquire(id)
	}
	return nil
}

// Free drops seqID's block table and one reference to each of its blocks,
// last block first, so that of a chain returning to the cache, its tail is
// evicted first.
func (m *Manager) Free(seqID int64) error {
	st, err := m.lookup(seqID, true)
	if err != nil {
		return err
	}
	p := m.pool(st)
	for i := len(st.blocks) - 1; i >= 0; i-- {
		p.release(st.blocks[i])
	}
	delete(m.seqs, seqID)
	st.blocks, st.numTokens, st.onHost = st.blocks[:0], 0, false
	m.spare = append(m.spare, st)
	return nil
}

// BeginRound starts a scheduling round: the blocks hashed from now on were
// reserved for the step being built and hold no KV until it runs.
func (m *Manager) BeginRound() { m.round++ }

// Discard frees seqID like Free, for a sequence whose reservations of this
// round are abandoned before its step runs (an admission rolled back): the
// blocks hashed this round that no other table holds lose their hash, so
// that the prefix cache never serves a block whose KV was not written. (A
// block hashed this round and still held by another table is computed by
// that table's step.)
func (m *Manager) Discard(seqID int64) error {
	st, err := m.lookup(seqID, false)
	if err != nil {
		return err
	}
	p := m.device
	for _, id := range st.blocks {
		if b := &p.blocks[id]; b.ref == 1 && b.hashed && b.round == m.round {
			if cur, ok := p.cached[b.hash]; ok && cur == id {
				delete(p.cached, b.hash)
			}
			b.hashed = false
		}
	}
	return m.Free(seqID)
}

// BlockTable returns seqID's physical block ids in logical order (host ids
// when swapped out), or nil for an unknown sequence. The slice is a
// read-only view, valid until the next call that changes the table.
func (m *Manager) BlockTable(seqID int64) []int32 {
	st, ok := m.seqs[seqID]
	if !ok {
		return nil
	}
	return st.blocks[:len(st.blocks):len(st.blocks)]
}

// SlotFor returns the device cache slot of token position pos of seqID:
// block*BlockSize + offset, for 0 ≤ pos < NumTokens(seqID).
func (m *Manager) SlotFor(seqID int64, pos int) (int32, error) {
	st, err := m.lookup(seqID, false)
	if err != nil {
		return 0, err
	}
	if pos < 0 || pos >= st.numTokens {
		return 0, fmt.Errorf("%w: position %d of sequence %d with %d tokens", ErrPositionOutOfRange, pos, seqID, st.numTokens)
	}
	return st.blocks[pos/m.blockSize]*int32(m.blockSize) + int32(pos%m.blockSize), nil
}

// SlotMapping appends to dst the slots of positions [start, end) of seqID.
func (m *Manager) SlotMapping(dst []int32, seqID int64, start, end int) ([]int32, error) {
	st, err := m.lookup(seqID, false)
	if err != nil {
		return dst, err
	}
	if start < 0 || end > st.numTokens || start > end {
		return dst, fmt.Errorf("%w: positions [%d, %d) of sequence %d with %d tokens", ErrPositionOutOfRange, start, end, seqID, st.numTokens)
	}
	bs := int32(m.blockSize)
	for pos := start; pos < end; pos++ {
		dst = append(dst, st.blocks[pos/m.blockSize]*bs+int32(pos%m.blockSize))
	}
	return dst, nil
}
