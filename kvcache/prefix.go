package kvcache

import (
	"encoding/binary"
	"slices"

	"github.com/cespare/xxhash/v2"
)

// rootHash is the parent hash of a sequence's first block.
const rootHash BlockHash = 0

// hashBlock is the chained block hash: xxhash64 of the parent hash (8 bytes
// LE) followed by the token ids (4 bytes LE each). It does not allocate.
func hashBlock(parent BlockHash, tokens []int32) BlockHash {
	var d xxhash.Digest
	d.Reset()
	var buf [8 + 4*64]byte // parent hash, then up to 64 token ids per write
	binary.LittleEndian.PutUint64(buf[:8], uint64(parent))
	n := 8
	for _, t := range tokens {
		if n == len(buf) {
			d.Write(buf[:n])
			n = 0
		}
		binary.LittleEndian.PutUint32(buf[n:], uint32(t))
		n += 4
	}
	d.Write(buf[:n])
	return BlockHash(d.Sum64())
}

// rootOf is the parent hash of a sequence's first block in KV group g:
// each group chains from its own root, so equal tokens hash apart.
func rootOf(g int) BlockHash { return rootHash + BlockHash(g) }

// cachedMatch returns the cached device block of group g holding tokens
// after the chain (parentHash, parentCID), confirmed by group, content id
// and token ids so that a hash collision is a miss, never a wrong block.
func (m *Manager) cachedMatch(g int, parentHash BlockHash, parentCID uint64, tokens []int32) (id int32, h BlockHash, ok bool) {
	p := m.device
	h = m.hashFn(parentHash, tokens)
	id, ok = p.cached[h]
	if !ok {
		return noLink, h, false
	}
	if b := &p.blocks[id]; int(b.group) != g || b.parent != parentCID || !slices.Equal(p.filled(id), tokens) {
		return noLink, h, false
	}
	return id, h, true
}

// clearHits empties m.hits.
func (m *Manager) clearHits() {
	for g := range m.hits {
		m.hits[g] = m.hits[g][:0]
	}
}

// matchPrefix fills m.hits, per KV group, with the cached blocks holding the
// leading full blocks of tokens, stopping at the first miss, and cuts every
// group's hits to the shortest; it returns that number of blocks. The block
// holding the last token is never looked up: the forward pass needs at
// least one token to produce logits, and that token's KV must go to a block
// the sequence owns. A sliding-window group matches its chain from the
// first block although it will share only the blocks of the last window
// (the chain's content ids are what confirm a hit), so a hit there needs
// the released blocks still cached.
func (m *Manager) matchPrefix(tokens []int32) (hit int) {
	m.clearHits()
	if m.device.cached == nil || len(tokens) == 0 {
		return 0
	}
	hit = (len(tokens) - 1) / m.blockSize
	for g := range m.windows {
		parentHash, parentCID := rootOf(g), uint64(0)
		for i := range hit {
			chunk := tokens[i*m.blockSize : (i+1)*m.blockSize]
			id, h, ok := m.cachedMatch(g, parentHash, parentCID, chunk)
			if !ok {
				break
			}
			m.hits[g] = append(m.hits[g], id)
			parentHash, parentCID = h, m.device.blocks[id].cid
		}
		hit = min(hit, len(m.hits[g]))
	}
	for g := range m.hits {
		m.hits[g] = m.hits[g][:hit]
	}
	return hit
}

// seal hashes device block id of group g, which has just become full, as
// the successor of the chain at, and advances at to it. The block enters the
// prefix cache when its hash is not taken. A block whose twin (same parent
// content id, same tokens) is already cached shares the twin's content id
// but stays out of the cache; a block that merely collides gets a fresh
// content id.
func (m *Manager) seal(g int, id int32, at *link) {
	p := m.device
	if p.cached == nil {
		return
	}
	tokens := p.filled(id)
	twin, h, ok := m.cachedMatch(g, at.hash, at.cid, tokens)
	b := &p.blocks[id]
	b.hashed, b.hash, b.parent, b.round, b.group = true, h, at.cid, m.round, uint8(g)
	switch {
	case ok:
		b.cid = p.blocks[twin].cid
	default:
		b.cid = m.nextCID
		m.nextCID++
		if _, taken := p.cached[h]; !taken {
			p.cached[h] = id
		}
	}
	*at = link{hash: h, cid: b.cid}
}

// register enters hashed device block id, freshly copied in from the host
// pool, in the prefix cache when its hash is not taken.
func (m *Manager) register(id int32) {
	p := m.device
	b := &p.blocks[id]
	if p.cached == nil || !b.hashed {
		return
	}
	if _, taken := p.cached[b.hash]; !taken {
		p.cached[b.hash] = id
	}
}

// ResetPrefixCache forgets every cached block: free blocks lose their hash
// (they become plain free blocks), blocks in use keep theirs but can no
// longer be hit. The engine calls it after a failed step, whose reserved
// blocks were registered but never computed.
func (m *Manager) ResetPrefixCache() {
	p := m.device
	for h, id := range p.cached {
		if b := &p.blocks[id]; b.ref == 0 {
			b.hashed, b.numTokens = false, 0
		}
		delete(p.cached, h)
	}
}
