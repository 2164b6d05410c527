// Package kvcache is pagoda's block space manager (vLLM's BlockSpaceManager):
// pure bookkeeping over the block ids of a paged KV cache. It decides which
// physical block holds which tokens of which sequence; it owns no tensor
// memory. The runner executes the Copy and Swap operations it returns on the
// real cache (model.KVCache) before the forward pass that needs them.
//
// # Layout
//
// A Manager has a device Pool of NumBlocks blocks and a host Pool of
// NumHostBlocks blocks (swap space). A block holds BlockSize token slots;
// slot s of the device cache is block s/BlockSize, offset s%BlockSize. Each
// sequence has a block table: its physical block ids in logical order.
//
//	BlockSize = 4, prefix caching on. Seq 2 was forked from seq 1 after
//	"a b c d e f g h i j"; then seq 2 appended x (copying the shared
//	block 5 into 6) and seq 1 appended k (in place: 5 is its own now).
//
//	block tables              physical blocks (id: slots, ref)
//	seq 1: [0, 1, 5]  ──►  0: |a b c d| ref 2  full, hash h0 = H(root, abcd)
//	seq 2: [0, 1, 6]       1: |e f g h| ref 2  full, hash h1 = H(h0, efgh)
//	                       5: |i j k .| ref 1  partial: written in place
//	                       6: |i j x .| ref 1  copy-on-write of 5: Copy{5, 6}
//
//	prefix cache (hash → block): h0 → 0, h1 → 1, hp → 2, hq → 3
//
//	free list: take from the head; unhashed blocks are pushed at the head,
//	cached ones appended at the tail (a freed chain's tail first):
//	[HEAD] ⇄ 7 ⇄ 4 ⇄ 2 ⇄ 3 ⇄ [TAIL]
//	         └─┬─┘   └─┬─┘
//	       unhashed   cached, hash kept: a hit unlinks it in O(1);
//	                  taking it from the head evicts its hash
//
// # KV cache groups (hybrid models)
//
// A model whose layers attend differently (Gemma 3: five sliding-window
// layers for every full-attention one) has several KV cache groups (vLLM's
// hybrid KV cache manager; Config.Windows). Every sequence has one block
// table per group, all groups take blocks from the same pools, and a block
// belongs to one group at a time (the model keeps one group's layers in it).
// A sliding-window group releases the blocks that fell out of the window of
// the next token to compute (AppendSlots) and writes NullBlock in their
// place, so its memory is O(window + chunk), not O(context):
//
//	window 6, BlockSize 4, 13 tokens, next token at position 13 reads 8..13
//	full group:    [3, 7, 2, 9]
//	sliding group: [NULL, NULL, 5, 1]    blocks 0, 1 (positions 0..7) released
//
// Prefix caching hashes each group's chain from its own root. A hit needs
// every group to hold the prefix; a sliding-window group confirms its chain
// from the first block but shares only the blocks the first computed
// token's window reads.
//
// # Invariants (checked by Manager.CheckInvariants)
//
//   - Every block is in exactly one place: in its pool's free list with ref
//     count 0 (evictable when it still holds a hash), or referenced by ≥ 1
//     block table with ref count = the number of tables holding it.
//     Free + referenced = total, for the device and the host pool.
//   - A table of n tokens has ⌈n/BlockSize⌉ blocks; all but the last are full.
//     NullBlock stands only in sliding-window groups, only before the window
//     of the table's last token.
//   - A block that is full and hashed is immutable. A partial block is written
//     only while its ref count is 1; appending to a shared partial block first
//     copies it (copy-on-write).
//   - With prefix caching on, every full device block in a table is hashed,
//     and hash(table[i]) = H(hash(table[i-1]), tokens(table[i])).
//   - Every prefix-cache entry h → b has blocks[b].hash = h. A free block that
//     holds a hash is in the prefix cache. An in-use hashed block may be
//     absent from it (a duplicate of a cached block, or a hash collision).
//   - When every sequence has been freed, every block is free.
//
// # Prefix caching
//
// A full block's hash chains the parent block's hash with the block's token
// ids (xxhash64), as in nano-vllm. Because a hash can collide, a hit is
// confirmed by comparing token ids and the content id of the parent: every
// hashed block carries a content id (cid), and two blocks with the same cid
// hold the same tokens from the start of the sequence to the end of the
// block. Ids are never reused, so a collision can cost a hit but never
// return a wrong block.
//
// When a sequence fills a block that is already cached under another id (same
// prompt computed twice), the sequence keeps its own block: it is hashed and
// shares the cached block's content id but is not entered in the cache (the
// KV for its last token may still be in flight, so it cannot be swapped for
// the cached block). It enters the cache when it is freed, if its hash is
// free by then; otherwise its hash is dropped.
//
// Blocks are registered as soon as their slots are all reserved, before the
// forward pass writes their KV. So reserve slots (Allocate, AppendSlots) only
// for the tokens of the coming step, and have the runner write a layer's K/V
// for the whole batch before that layer's attention reads the cache (as vLLM
// does): a sequence scheduled in the same step may hit those blocks.
//
// A Manager is not safe for concurrent use: the engine loop goroutine owns it.
package kvcache
