package kvcache

import "fmt"

// CanAllocate reports whether Allocate(_, tokens) would succeed now. Prefix
// cache hits on blocks in use by other sequences need no free block; hits on
// free cached blocks take one each.
func (m *Manager) CanAllocate(tokens []int32) AllocStatus {
	nb := m.blocksFor(len(tokens))
	if nb*len(m.windows) > m.device.numBlocks {
		return AllocNever
	}
	if m.allocNeed(tokens, true) > m.device.numFree {
		return AllocLater
	}
	return AllocOK
}

// NumCachedTokens is the numCachedTokens Allocate(_, tokens) would return
// now: the leading tokens whose KV is in the prefix cache. It changes
// nothing and counts no query.
func (m *Manager) NumCachedTokens(tokens []int32) int {
	return m.matchPrefix(tokens) * m.blockSize
}

// Allocate creates the block tables of a new sequence holding tokens and
// reserves a slot for each, in every KV group. With prefix caching on, the
// leading full blocks found in the cache are shared (ref count +1) instead
// of allocated; numCachedTokens is the number of leading tokens whose KV is
// already in the cache (a multiple of the block size, always < len(tokens)),
// so the forward pass computes tokens[numCachedTokens:]. A hit in a
// sliding-window group shares only the blocks the first computed token's
// window reads; the table holds NullBlock before them. On error nothing
// changes.
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

// allocNeed is the number of free device blocks allocating tokens takes,
// leaving the prefix-cache hits in m.hits (useCache) or none.
func (m *Manager) allocNeed(tokens []int32, useCache bool) int {
	hit := 0
	if useCache {
		hit = m.matchPrefix(tokens)
	} else {
		m.clearHits()
	}
	nb := m.blocksFor(len(tokens))
	need := 0
	for g, w := range m.windows {
		need += nb - hit
		for _, id := range m.hits[g][m.released(w, hit*m.blockSize):] {
			if m.device.blocks[id].ref == 0 {
				need++
			}
		}
	}
	return need
}

func (m *Manager) allocate(seqID int64, tokens []int32, useCache bool) (numCachedTokens int, err error) {
	if _, ok := m.seqs[seqID]; ok {
		return 0, fmt.Errorf("%w: %d", ErrSequenceExists, seqID)
	}
	if need := m.allocNeed(tokens, useCache); need > m.device.numFree {
		return 0, fmt.Errorf("%w: sequence %d needs %d, %d free", ErrNoFreeBlocks, seqID, need, m.device.numFree)
	}
	hit := len(m.hits[0])
	if m.device.cached != nil && len(tokens) > 0 && useCache {
		m.stats.Queries++
		m.stats.QueryBlocks += int64((len(tokens) - 1) / m.blockSize)
		m.stats.HitBlocks += int64(hit)
		m.stats.QueryTokens += int64(len(tokens))
		m.stats.HitTokens += int64(hit * m.blockSize)
	}
	st := m.newSeq(seqID)
	numCachedTokens = hit * m.blockSize
	for g, w := range m.windows {
		live := m.released(w, numCachedTokens)
		for i, id := range m.hits[g] {
			if i < live {
				st.tables[g] = append(st.tables[g], NullBlock)
			} else {
				m.device.acquire(id)
				st.tables[g] = append(st.tables[g], id)
			}
		}
		if hit > 0 {
			b := &m.device.blocks[m.hits[g][hit-1]]
			st.chain[g] = link{hash: b.hash, cid: b.cid}
		}
	}
	st.numTokens = numCachedTokens
	m.write(st, tokens[numCachedTokens:])
	return numCachedTokens, nil
}

// appendNeed returns how many free blocks appending n tokens to st takes
// (the blocks a sliding-window group releases counted back when no other
// table holds them), and for each group whether its last block must be
// copied first (it is partial and shared), as a bit set.
func (m *Manager) appendNeed(st *seqState, n int) (need int, cow uint64) {
	if n == 0 {
		return 0, 0
	}
	pool := m.device
	if st.onHost {
		pool = m.host // a swapped-out table: what it will take once swapped in
	}
	for g, w := range m.windows {
		t := st.tables[g]
		room := 0
		if k := len(t); k > 0 {
			last := &pool.blocks[t[k-1]]
			room = m.blockSize - int(last.numTokens)
			if room > 0 && last.ref > 1 {
				cow |= 1 << g
				need++
			}
		}
		if n > room {
			need += m.blocksFor(n - room)
		}
		for i := m.released(w, st.numTokens) - 1; i >= 0 && t[i] != NullBlock; i-- {
			if pool.blocks[t[i]].ref == 1 {
				need--
			}
		}
	}
	return max(need, 0), cow
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
	return m.appendSlots(seqID, tokens, 0, copies)
}

// AppendSpeculative is AppendSlots for tokens whose last numSpec are
// proposals (speculative decoding) that the step verifies: their slots are
// reserved, but a block holding one is not hashed, so the prefix cache
// never serves a proposal. Settle must follow, after the step, before any
// other call on the sequence but Free.
func (m *Manager) AppendSpeculative(seqID int64, tokens []int32, numSpec int, copies []Copy) ([]Copy, error) {
	if numSpec < 0 || numSpec > len(tokens) {
		return copies, fmt.Errorf("%w: %d proposals among %d tokens", ErrPositionOutOfRange, numSpec, len(tokens))
	}
	return m.appendSlots(seqID, tokens, numSpec, copies)
}

func (m *Manager) appendSlots(seqID int64, tokens []int32, numSpec int, copies []Copy) ([]Copy, error) {
	st, err := m.lookup(seqID, false)
	if err != nil {
		return copies, err
	}
	if st.spec > 0 {
		return copies, fmt.Errorf("%w: sequence %d has %d proposals to settle", ErrPositionOutOfRange, seqID, st.spec)
	}
	need, cow := m.appendNeed(st, len(tokens))
	if need > m.device.numFree {
		return copies, fmt.Errorf("%w: sequence %d needs %d, %d free", ErrNoFreeBlocks, seqID, need, m.device.numFree)
	}
	if len(tokens) > 0 {
		m.slide(st)
	}
	for g := range m.windows {
		if cow&(1<<g) == 0 {
			continue
		}
		k := len(st.tables[g]) - 1
		src := st.tables[g][k]
		dst := m.device.alloc()
		m.device.copyBlock(dst, m.device, src)
		m.device.release(src)
		st.tables[g][k] = dst
		copies = append(copies, Copy{Src: src, Dst: dst})
	}
	m.writeSealing(st, tokens, len(tokens)-numSpec)
	st.spec = numSpec
	return copies, nil
}

// Settle ends a speculative step of seqID: the first keep of its tokens
// stand (the verified proposals among them), the slots after them are
// given back (blocks they alone filled are released), and the blocks the
// kept tokens fill are hashed as AppendSlots would have. keep must lie
// between the tokens before the proposals and all of them.
//
//	BlockSize 4, "a b c" computed, AppendSpeculative("d" + proposals "e f g h", 4)
//	table [5|a b c d|, 8|e f g h|]   5 hashed (d is no proposal), 8 not
//	Settle(6): "e f" verified → [5|a b c d|, 8|e f . .|], 8 stays partial
func (m *Manager) Settle(seqID int64, keep int) error {
	st, err := m.lookup(seqID, false)
	if err != nil {
		return err
	}
	base := st.numTokens - st.spec
	if keep < base || keep > st.numTokens {
		return fmt.Errorf("%w: keep %d of sequence %d, %d tokens before %d proposals", ErrPositionOutOfRange, keep, seqID, base, st.spec)
	}
	p := m.device
	nb := m.blocksFor(keep)
	for g := range m.windows {
		t := st.tables[g]
		for i := len(t) - 1; i >= nb; i-- {
			p.release(t[i])
		}
		t = t[:nb]
		st.tables[g] = t
		if nb > 0 {
			b := &p.blocks[t[nb-1]]
			b.numTokens = int32(keep - (nb-1)*m.blockSize)
		}
		for i := base / m.blockSize; i < keep/m.blockSize; i++ {
			m.seal(g, t[i], &st.chain[g])
		}
	}
	st.numTokens, st.spec = keep, 0
	return nil
}

// slide releases, in each sliding-window group, the blocks no query from
// st's next token on reads, and puts NullBlock in their place.
func (m *Manager) slide(st *seqState) {
	for g, w := range m.windows {
		t := st.tables[g]
		for i := m.released(w, st.numTokens) - 1; i >= 0 && t[i] != NullBlock; i-- {
			m.device.release(t[i])
			t[i] = NullBlock
		}
	}
}

// write stores tokens after st's last token in every group, taking blocks
// from the free head as needed and sealing each block it fills. The caller
// checked that enough blocks are free and that no last block is shared.
func (m *Manager) write(st *seqState, tokens []int32) { m.writeSealing(st, tokens, len(tokens)) }

// writeSealing is write that seals only the blocks ending within the first
// sealable tokens (the others hold a proposal: Settle seals them).
func (m *Manager) writeSealing(st *seqState, tokens []int32, sealable int) {
	p := m.device
	limit := st.numTokens + sealable
	for g := range m.windows {
		rest, pos := tokens, st.numTokens
		for len(rest) > 0 {
			k := len(st.tables[g])
			if k == 0 || int(p.blocks[st.tables[g][k-1]].numTokens) == m.blockSize {
				st.tables[g] = append(st.tables[g], p.alloc())
				k++
			}
			id := st.tables[g][k-1]
			b := &p.blocks[id]
			n := copy(p.slots(id)[b.numTokens:], rest)
			b.numTokens += int32(n)
			rest, pos = rest[n:], pos+n
			if int(b.numTokens) == m.blockSize && pos <= limit {
				m.seal(g, id, &st.chain[g])
			}
		}
	}
	st.numTokens += len(tokens)
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
	child.numTokens, child.onHost = parent.numTokens, parent.onHost
	copy(child.chain, parent.chain)
	p := m.pool(parent)
	for g, t := range parent.tables {
		child.tables[g] = append(child.tables[g], t...)
		for _, id := range t {
			if id != NullBlock {
				p.acquire(id)
			}
		}
	}
	return nil
}

// Free drops seqID's block tables and one reference to each of their
// blocks, last block first, so that of a chain returning to the cache, its
// tail is evicted first.
func (m *Manager) Free(seqID int64) error {
	st, err := m.lookup(seqID, true)
	if err != nil {
		return err
	}
	p := m.pool(st)
	for g, t := range st.tables {
		for i := len(t) - 1; i >= 0; i-- {
			if t[i] != NullBlock {
				p.release(t[i])
			}
		}
		st.tables[g] = t[:0]
	}
	delete(m.seqs, seqID)
	st.numTokens, st.spec, st.onHost = 0, 0, false
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
	for _, id := range st.all() {
		if b := &p.blocks[id]; b.ref == 1 && b.hashed && b.round == m.round {
			if cur, ok := p.cached[b.hash]; ok && cur == id {
				delete(p.cached, b.hash)
			}
			b.hashed = false
		}
	}
	return m.Free(seqID)
}

// BlockTable returns seqID's group-0 block table: physical block ids in
// logical order (host ids when swapped out), or nil for an unknown sequence.
// The slice is a read-only view, valid until the next call that changes the
// table.
func (m *Manager) BlockTable(seqID int64) []int32 { return m.GroupTable(seqID, 0) }

// GroupTable is BlockTable for KV group g; in a sliding-window group the
// blocks out of the window are NullBlock.
func (m *Manager) GroupTable(seqID int64, g int) []int32 {
	st, ok := m.seqs[seqID]
	if !ok {
		return nil
	}
	t := st.tables[g]
	return t[:len(t):len(t)]
}

// SlotFor returns the group-0 device cache slot of token position pos of
// seqID: block*BlockSize + offset, for 0 ≤ pos < NumTokens(seqID).
func (m *Manager) SlotFor(seqID int64, pos int) (int32, error) {
	st, err := m.lookup(seqID, false)
	if err != nil {
		return 0, err
	}
	if pos < 0 || pos >= st.numTokens {
		return 0, fmt.Errorf("%w: position %d of sequence %d with %d tokens", ErrPositionOutOfRange, pos, seqID, st.numTokens)
	}
	return st.tables[0][pos/m.blockSize]*int32(m.blockSize) + int32(pos%m.blockSize), nil
}

// SlotMapping appends to dst the group-g slots of positions [start, end) of
// seqID. Positions whose block a sliding-window group released are out of
// range.
func (m *Manager) SlotMapping(dst []int32, seqID int64, g, start, end int) ([]int32, error) {
	st, err := m.lookup(seqID, false)
	if err != nil {
		return dst, err
	}
	t := st.tables[g]
	if start < 0 || end > st.numTokens || start > end || (start < end && t[start/m.blockSize] == NullBlock) {
		return dst, fmt.Errorf("%w: positions [%d, %d) of sequence %d with %d tokens", ErrPositionOutOfRange, start, end, seqID, st.numTokens)
	}
	bs := int32(m.blockSize)
	for pos := start; pos < end; pos++ {
		dst = append(dst, t[pos/m.blockSize]*bs+int32(pos%m.blockSize))
	}
	return dst, nil
}

// all returns st's blocks of every group (NullBlock left out), in a scratch
// slice valid until the next call.
func (st *seqState) all() []int32 {
	var out []int32
	for _, t := range st.tables {
		for _, id := range t {
			if id != NullBlock {
				out = append(out, id)
			}
		}
	}
	return out
}
