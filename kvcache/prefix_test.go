package kvcache

import (
	"slices"
	"testing"
)

func TestHashBlock(t *testing.T) {
	a := hashBlock(rootHash, seq(1, 16))
	tests := []struct {
		name   string
		parent BlockHash
		tokens []int32
		same   bool // equal to a
	}{
		{"same input", rootHash, seq(1, 16), true},
		{"other parent", 1, seq(1, 16), false},
		{"other token", rootHash, cat(seq(1, 15), []int32{99}), false},
		{"shorter", rootHash, seq(1, 15), false},
		{"long block", rootHash, seq(1, 200), false}, // more than one write chunk
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := hashBlock(tc.parent, tc.tokens); (got == a) != tc.same {
				t.Fatalf("hash %#x vs %#x, want same=%v", got, a, tc.same)
			}
		})
	}
	if hashBlock(rootHash, seq(1, 200)) != hashBlock(rootHash, seq(1, 200)) {
		t.Fatal("hash not deterministic")
	}
	if n := testing.AllocsPerRun(100, func() { hashBlock(a, seq(0, 0)) }); n != 0 {
		t.Fatalf("hashBlock allocates %v times", n)
	}
}

// TestPrefixHit: freed full blocks stay cached and are reused, unlinked from
// the middle of the free list; the partial last block is not cached.
func TestPrefixHit(t *testing.T) {
	m := newManager(t, Config{BlockSize: 4, NumBlocks: 6, EnablePrefixCaching: true})
	prompt := seq(10, 10) // |abcd|efgh|ij|
	mustAllocate(t, m, 1, prompt, 0)
	wantTable(t, m, 1, 0, 1, 2)
	if m.device.NumCached() != 2 {
		t.Fatalf("NumCached = %d, want 2", m.device.NumCached())
	}
	mustFree(t, m, 1)
	// 2 is unhashed: head. 1 then 0 appended: the chain's tail goes first.
	wantFreeList(t, m.device, 2, 3, 4, 5, 1, 0)

	if got := m.NumCachedTokens(prompt); got != 8 {
		t.Fatalf("NumCachedTokens = %d, want 8", got)
	}
	mustAllocate(t, m, 2, prompt, 8)
	wantTable(t, m, 2, 0, 1, 2)
	wantFreeList(t, m.device, 3, 4, 5)

	// A prompt diverging in its second block hits only the first.
	mustAllocate(t, m, 3, cat(seq(10, 4), seq(90, 5)), 4)
	wantTable(t, m, 3, 0, 3, 4)
	if got := refs(m.device, 0, 1, 3); !slices.Equal(got, []int32{2, 1, 1}) {
		t.Fatalf("refs %v, want [2 1 1]", got)
	}

	// A prompt of exactly two cached blocks: its last token is recomputed,
	// so only the first block is a hit and the second is its own (a twin).
	mustAllocate(t, m, 4, seq(10, 8), 4)
	wantTable(t, m, 4, 0, 5)

	want := Stats{Queries: 4, QueryBlocks: 2 + 2 + 2 + 1, HitBlocks: 0 + 2 + 1 + 1,
		QueryTokens: 10 + 10 + 9 + 8, HitTokens: 16}
	if got := m.Stats(); got != want {
		t.Fatalf("Stats = %+v, want %+v", got, want)
	}
	if got, w := m.Stats().HitRate(), 16.0/37; got < w-1e-12 || got > w+1e-12 {
		t.Fatalf("HitRate = %v, want %v", got, w)
	}
}

// TestChunkedPrefill: a block is shared only once its slots are reserved,
// so a prompt allocated chunk by chunk exposes only its reserved blocks.
func TestChunkedPrefill(t *testing.T) {
	m := newManager(t, Config{BlockSize: 4, NumBlocks: 16, EnablePrefixCaching: true})
	prompt := seq(0, 14)
	chunk := 6
	end := m.NumCachedTokens(prompt) + chunk
	mustAllocate(t, m, 1, prompt[:end], 0) // |0..3| full and cached, |4 5| partial
	if got := m.NumCachedTokens(prompt); got != 4 {
		t.Fatalf("after the first chunk NumCachedTokens = %d, want 4", got)
	}
	mustAppend(t, m, 1, prompt[end:end+chunk], nil) // |4..7| |8..11| full
	if got := m.NumCachedTokens(prompt); got != 12 {
		t.Fatalf("after the second chunk NumCachedTokens = %d, want 12", got)
	}
	mustAppend(t, m, 1, prompt[end+chunk:], nil)
	mustAllocate(t, m, 2, prompt, 12)
	wantTable(t, m, 2, 0, 1, 2, 4)
}

// TestEvictionOrder: allocation evicts from the free head: least recently
// freed chains first, and within a chain its tail first.
func TestEvictionOrder(t *testing.T) {
	m := newManager(t, Config{BlockSize: 4, NumBlocks: 4, EnablePrefixCaching: true})
	a, b := seq(0, 4), seq(4, 4)
	c, d := seq(100, 4), seq(104, 4)
	mustAllocate(t, m, 1, cat(a, b), 0) // [0, 1]
	mustFree(t, m, 1)
	wantFreeList(t, m.device, 2, 3, 1, 0)
	mustAllocate(t, m, 2, cat(c, d), 0) // [2, 3]
	mustFree(t, m, 2)
	wantFreeList(t, m.device, 1, 0, 3, 2)

	mustAllocate(t, m, 3, seq(500, 4), 0) // evicts block 1 ("b" after "a")
	wantTable(t, m, 3, 1)
	if got := m.Stats().Evictions; got != 1 {
		t.Fatalf("Evictions = %d, want 1", got)
	}
	// "a" is still cached, "b" is not: a hit on 0, then fresh blocks from the
	// head (3, evicting "d", then 2, evicting "c").
	mustAllocate(t, m, 4, cat(a, b, []int32{7}), 4)
	wantTable(t, m, 4, 0, 3, 2)
	if got := m.Stats().Evictions; got != 3 {
		t.Fatalf("Evictions = %d, want 3", got)
	}
	mustFree(t, m, 3, 4)
	// c, d were evicted: nothing hits.
	mustAllocate(t, m, 5, cat(c, d, []int32{1}), 0)
}

// TestTwinBlock: a block filled with the same content as a cached block in
// use keeps its own id, shares the content id (so later blocks chained from
// it still hit), and enters the cache when freed if its hash is free then.
func TestTwinBlock(t *testing.T) {
	m := newManager(t, Config{BlockSize: 4, NumBlocks: 5, EnablePrefixCaching: true})
	a, b := seq(0, 4), seq(4, 4)
	mustAllocate(t, m, 1, cat(a, b), 0) // [0, 1], both cached
	mustAllocate(t, m, 2, cat(a, b), 4) // hit 0; 2 is a twin of 1
	wantTable(t, m, 2, 0, 2)
	if m.device.blocks[2].cid != m.device.blocks[1].cid || m.device.cached[m.device.blocks[2].hash] != 1 {
		t.Fatal("twin block 2 should share block 1's content id and stay out of the cache")
	}
	c := seq(8, 4)
	mustAppend(t, m, 2, c, nil) // block 3 chains from the twin
	wantTable(t, m, 2, 0, 2, 3)
	mustAllocate(t, m, 3, cat(a, b, c, []int32{1}), 12) // a→0, b→1, c→3
	wantTable(t, m, 3, 0, 1, 3, 4)
	mustFree(t, m, 3, 1)
	wantFreeList(t, m.device, 4, 1)

	// Evict block 1 ("b"), then free the twin: it takes over the hash.
	mustAllocate(t, m, 4, seq(200, 5), 0) // blocks 4 (full), 1
	wantTable(t, m, 4, 4, 1)
	mustFree(t, m, 4, 2)
	wantFreeList(t, m.device, 1, 4, 3, 2, 0) // 1 partial: head; 4 full: cached
	if m.device.cached[m.device.blocks[2].hash] != 2 {
		t.Fatal("freed twin should be cached")
	}
	mustAllocate(t, m, 5, cat(a, b, c, []int32{1}), 12)
	wantTable(t, m, 5, 0, 2, 3, 1)
}

// tokensOnlyHash ignores the parent: the same tokens at different positions
// collide, as a chained hash collision would.
func tokensOnlyHash(_ BlockHash, tokens []int32) BlockHash { return hashBlock(rootHash, tokens) }

// TestHashCollision: a hit needs equal token ids and an equal parent
// content id, so colliding hashes never return a wrong block.
func TestHashCollision(t *testing.T) {
	t.Run("same tokens other position", func(t *testing.T) {
		m := newManager(t, Config{BlockSize: 2, NumBlocks: 8, EnablePrefixCaching: true})
		m.hashFn = tokensOnlyHash
		mustAllocate(t, m, 1, []int32{1, 2, 3, 4, 0}, 0) // [0 |1 2|, 1 |3 4|, 2]
		// |3 4| hashes like block 1, holds the same tokens, but follows nothing.
		mustAllocate(t, m, 2, []int32{3, 4, 5}, 0)
		wantTable(t, m, 2, 3, 4)
		mustAllocate(t, m, 3, []int32{1, 2, 3, 4, 7}, 4)
		wantTable(t, m, 3, 0, 1, 5)
	})
	t.Run("constant hash", func(t *testing.T) {
		m := newManager(t, Config{BlockSize: 2, NumBlocks: 8, EnablePrefixCaching: true})
		m.hashFn = func(BlockHash, []int32) BlockHash { return 7 }
		mustAllocate(t, m, 1, []int32{1, 2, 3, 4, 5}, 0) // 0 cached under 7; 1 collides
		wantTable(t, m, 1, 0, 1, 2)
		if got := m.device.NumCached(); got != 1 {
			t.Fatalf("NumCached = %d, want 1", got)
		}
		mustAllocate(t, m, 2, []int32{3, 4, 5}, 0) // candidate 0 holds other tokens
		wantTable(t, m, 2, 3, 4)
		mustFree(t, m, 2, 1)
		// 1 collided and lost its hash: unhashed blocks go to the head.
		wantFreeList(t, m.device, 1, 2, 3, 4, 5, 6, 7, 0)
		mustAllocate(t, m, 3, []int32{1, 2, 9}, 2)
		wantTable(t, m, 3, 0, 1)
	})
}

func TestCachingOffHashesNothing(t *testing.T) {
	m := newManager(t, Config{BlockSize: 4, NumBlocks: 4})
	mustAllocate(t, m, 1, seq(0, 9), 0)
	mustFree(t, m, 1)
	mustAllocate(t, m, 2, seq(0, 9), 0)
	if m.device.NumCached() != 0 || m.Stats() != (Stats{}) || m.PrefixCaching() {
		t.Fatalf("caching off: cached %d stats %+v", m.device.NumCached(), m.Stats())
	}
	for _, id := range m.BlockTable(2) {
		if m.device.blocks[id].hashed {
			t.Fatalf("block %d hashed with caching off", id)
		}
	}
}

func TestResetPrefixCache(t *testing.T) {
	m := newManager(t, Config{BlockSize: 2, NumBlocks: 8, EnablePrefixCaching: true})
	mustAllocate(t, m, 1, seq(10, 5), 0)
	mustFree(t, m, 1)
	if m.NumCachedTokens(seq(10, 5)) != 4 {
		t.Fatal("expected a cached prefix before the reset")
	}
	m.ResetPrefixCache()
	check(t, m)
	if n := m.NumCachedTokens(seq(10, 5)); n != 0 {
		t.Fatalf("%d cached tokens after the reset", n)
	}
	mustAllocate(t, m, 2, seq(10, 5), 0)
	mustFree(t, m, 2)
	check(t, m)
}

// TestDiscardRolledBackReservations: blocks reserved (and hashed) in a
// round whose admission is rolled back hold no KV; Discard takes them out
// of the prefix cache even when another sequence of the same admission hit
// them, while blocks computed in earlier rounds stay cached.
func TestDiscardRolledBackReservations(t *testing.T) {
	m := newManager(t, Config{BlockSize: 4, NumBlocks: 8, EnablePrefixCaching: true})
	prompt := seq(0, 13)
	m.BeginRound()
	mustAllocate(t, m, 1, prompt[:4], 0) // |0..3| computed in round 1
	m.BeginRound()
	if err := m.Free(1); err != nil {
		t.Fatal(err)
	}
	m.BeginRound()
	mustAllocate(t, m, 2, prompt, 4)  // hits |0..3|, reserves |4..7| |8..11| |12|
	mustAllocate(t, m, 3, prompt, 12) // hits the reservations of this round
	for _, id := range []int64{2, 3} {
		if err := m.Discard(id); err != nil {
			t.Fatal(err)
		}
	}
	if got := m.NumCachedTokens(prompt); got != 4 {
		t.Fatalf("after the rollback NumCachedTokens = %d, want 4 (only the block computed before)", got)
	}
	if err := m.CheckInvariants(); err != nil {
		t.Fatal(err)
	}
}
