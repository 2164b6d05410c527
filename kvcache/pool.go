package kvcache

// noLink marks a block that is not in its pool's free list.
const noLink int32 = -1

// block is the bookkeeping of one physical block. Its token ids live in
// Pool.tokens. The free list links are kept inside the block (intrusive list),
// so unlinking a cached block on a prefix-cache hit is O(1) and allocation
// free.
type block struct {
	prev, next int32     // free-list neighbours (ids or sentinels); noLink while referenced
	ref        int32     // number of block tables holding the block
	numTokens  int32     // filled slots, 0..blockSize
	hashed     bool      // full, and hash/cid/parent are valid; the block is immutable
	hash       BlockHash // H(parent block's hash, tokens)
	cid        uint64    // content id: same cid ⇒ same tokens from the sequence start to this block's end
	parent     uint64    // cid of the previous block of the chain; 0 for a sequence's first block
	round      uint64    // Manager.round when the block was hashed (see Discard)
	group      uint8     // the KV group whose chain the hash belongs to
}

// Pool is a set of fixed-size blocks with an intrusive doubly-linked free
// list between two sentinels:
//
//	blocks: [0 … n-1 real blocks][n = HEAD][n+1 = TAIL]
//	HEAD ⇄ b ⇄ c ⇄ … ⇄ TAIL      alloc pops after HEAD;
//	                             unhashed blocks are pushed after HEAD,
//	                             cached (hashed) blocks before TAIL.
//
// The device pool keeps the prefix cache (hash → block id); the host pool
// (swap space) has none, and its blocks only carry the hashes of the device
// blocks they were copied from.
type Pool struct {
	blockSize int
	numBlocks int
	numFree   int
	blocks    []block             // (numBlocks+2): real blocks, then the HEAD and TAIL sentinels
	tokens    []int32             // (numBlocks, blockSize): token ids of each block
	cached    map[BlockHash]int32 // prefix cache: hash → block id; nil when caching is off
	evictions int64               // hashes forgotten because their free block was reused
}

// newPool returns a pool whose free list holds blocks 0..numBlocks-1 in order.
func newPool(numBlocks, blockSize int, caching bool) *Pool {
	p := &Pool{
		blockSize: blockSize,
		numBlocks: numBlocks,
		blocks:    make([]block, numBlocks+2),
		tokens:    make([]int32, numBlocks*blockSize),
	}
	if caching {
		p.cached = make(map[BlockHash]int32)
	}
	h, t := p.head(), p.tail()
	p.blocks[h] = block{prev: noLink, next: t}
	p.blocks[t] = block{prev: h, next: noLink}
	for id := range int32(numBlocks) {
		p.blocks[id] = block{prev: noLink, next: noLink}
		p.pushBack(id)
	}
	return p
}

func (p *Pool) head() int32 { return int32(p.numBlocks) }
func (p *Pool) tail() int32 { return int32(p.numBlocks + 1) }

// NumBlocks is the number of blocks of the pool.
func (p *Pool) NumBlocks() int { return p.numBlocks }

// NumFree is the number of blocks in the free list, cached ones included.
func (p *Pool) NumFree() int { return p.numFree }

// NumCached is the number of prefix-cache entries (blocks in use or free).
func (p *Pool) NumCached() int { return len(p.cached) }

// Usage is the fraction of blocks referenced by some sequence, in [0, 1].
func (p *Pool) Usage() float64 {
	if p.numBlocks == 0 {
		return 0
	}
	return float64(p.numBlocks-p.numFree) / float64(p.numBlocks)
}

// slots returns the token ids of block id, all blockSize of them.
func (p *Pool) slots(id int32) []int32 {
	off := int(id) * p.blockSize
	return p.tokens[off : off+p.blockSize : off+p.blockSize]
}

// filled returns the token ids block id holds.
func (p *Pool) filled(id int32) []int32 { return p.slots(id)[:p.blocks[id].numTokens] }

func (p *Pool) insertAfter(at, id int32) {
	b, a := &p.blocks[id], &p.blocks[at]
	b.prev, b.next = at, a.next
	p.blocks[a.next].prev = id
	a.next = id
	p.numFree++
}

func (p *Pool) pushFront(id int32) { p.insertAfter(p.head(), id) }
func (p *Pool) pushBack(id int32)  { p.insertAfter(p.blocks[p.tail()].prev, id) }

// unlink removes block id from the middle of the free list in O(1).
func (p *Pool) unlink(id int32) {
	b := &p.blocks[id]
	p.blocks[b.prev].next = b.next
	p.blocks[b.next].prev = b.prev
	b.prev, b.next = noLink, noLink
	p.numFree--
}

// alloc takes the block at the head of the free list, evicts the hash it
// may hold, and returns it empty with ref count 1. The caller checks
// numFree > 0 first.
func (p *Pool) alloc() int32 {
	id := p.blocks[p.head()].next
	p.unlink(id)
	b := &p.blocks[id]
	if b.hashed {
		if cur, ok := p.cached[b.hash]; ok && cur == id {
			delete(p.cached, b.hash)
		}
		p.evictions++
	}
	*b = block{prev: noLink, next: noLink, ref: 1}
	return id
}

// acquire adds a reference to block id; a free (cached) block leaves the
// free list.
func (p *Pool) acquire(id int32) {
	b := &p.blocks[id]
	if b.ref == 0 {
		p.unlink(id)
	}
	b.ref++
}

// release drops a reference to block id. At zero the block returns to the
// free list: appended at the tail when it stays in the prefix cache, pushed
// at the head otherwise (an unhashed block is worth nothing, reuse it first).
func (p *Pool) release(id int32) {
	b := &p.blocks[id]
	b.ref--
	if b.ref > 0 {
		return
	}
	if b.hashed && p.cached != nil {
		cur, ok := p.cached[b.hash]
		if !ok {
			p.cached[b.hash] = id
			cur = id
		}
		if cur == id {
			p.pushBack(id)
			return
		}
	}
	*b = block{prev: noLink, next: noLink}
	p.pushFront(id)
}

// copyBlock copies the contents and hash metadata of block src of pool
// from into block dst of p (ref count and links untouched).
func (p *Pool) copyBlock(dst int32, from *Pool, src int32) {
	d, s := &p.blocks[dst], &from.blocks[src]
	d.numTokens, d.hashed, d.hash, d.cid, d.parent, d.group = s.numTokens, s.hashed, s.hash, s.cid, s.parent, s.group
	copy(p.slots(dst), from.filled(src))
}
