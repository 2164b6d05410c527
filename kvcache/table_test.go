package kvcache

import (
	"slices"
	"strings"
	"testing"
)

func TestNewValidates(t *testing.T) {
	tests := []struct {
		name string
		cfg  Config
		want string // substring of the error; "" for success
	}{
		{"ok", Config{BlockSize: 16, NumBlocks: 4}, ""},
		{"ok block 1 with host", Config{BlockSize: 1, NumBlocks: 1, NumHostBlocks: 3}, ""},
		{"zero block size", Config{BlockSize: 0, NumBlocks: 4}, "BlockSize"},
		{"no blocks", Config{BlockSize: 16, NumBlocks: 0}, "NumBlocks"},
		{"negative host", Config{BlockSize: 16, NumBlocks: 4, NumHostBlocks: -1}, "NumHostBlocks"},
		{"slots overflow", Config{BlockSize: 1 << 12, NumBlocks: 1 << 20}, "int32"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m, err := New(tc.cfg)
			if tc.want == "" {
				if err != nil {
					t.Fatalf("New: %v", err)
				}
				check(t, m)
				if m.NumFreeBlocks() != tc.cfg.NumBlocks || m.NumFreeHostBlocks() != tc.cfg.NumHostBlocks {
					t.Fatalf("free %d/%d, want %d/%d", m.NumFreeBlocks(), m.NumFreeHostBlocks(), tc.cfg.NumBlocks, tc.cfg.NumHostBlocks)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("New error %v, want one naming %s", err, tc.want)
			}
		})
	}
}

// TestAllocateAppendFree follows exact block ids through a small pool with
// prefix caching off: blocks are taken from the free head, and freed blocks
// return to the head (last block first), so they are reused LIFO.
func TestAllocateAppendFree(t *testing.T) {
	m := newManager(t, Config{BlockSize: 4, NumBlocks: 8})
	mustAllocate(t, m, 1, seq(100, 10), 0)
	wantTable(t, m, 1, 0, 1, 2)
	mustAllocate(t, m, 2, seq(200, 4), 0)
	wantTable(t, m, 2, 3)
	wantFreeList(t, m.device, 4, 5, 6, 7)

	mustAppend(t, m, 1, seq(110, 2), nil) // fills block 2
	wantTable(t, m, 1, 0, 1, 2)
	mustAppend(t, m, 1, seq(112, 1), nil) // new block from the head
	wantTable(t, m, 1, 0, 1, 2, 4)
	mustAppend(t, m, 2, seq(204, 9), nil) // three new blocks at once
	wantTable(t, m, 2, 3, 5, 6, 7)
	if got := m.NumFreeBlocks(); got != 0 {
		t.Fatalf("NumFreeBlocks = %d, want 0", got)
	}
	if got := m.Usage(); got != 1 {
		t.Fatalf("Usage = %v, want 1", got)
	}
	if got, want := tokensOf(m, 1), seq(100, 13); !slices.Equal(got, want) {
		t.Fatalf("seq 1 tokens %v, want %v", got, want)
	}

	mustFree(t, m, 1)
	wantFreeList(t, m.device, 0, 1, 2, 4)
	mustAllocate(t, m, 3, seq(300, 5), 0)
	wantTable(t, m, 3, 0, 1)
	wantFreeList(t, m.device, 2, 4)
	mustFree(t, m, 2, 3)
	if m.NumFreeBlocks() != 8 || m.Usage() != 0 || m.NumSequences() != 0 {
		t.Fatalf("after freeing all: free %d usage %v seqs %d", m.NumFreeBlocks(), m.Usage(), m.NumSequences())
	}
}

func TestEmptyPrompt(t *testing.T) {
	m := newManager(t, Config{BlockSize: 4, NumBlocks: 2, NumHostBlocks: 1, EnablePrefixCaching: true})
	mustAllocate(t, m, 1, nil, 0)
	wantTable(t, m, 1)
	mustAppend(t, m, 1, nil, nil)
	mustAppend(t, m, 1, seq(1, 1), nil)
	wantTable(t, m, 1, 0)
	if n, ok := m.NumTokens(1); !ok || n != 1 {
		t.Fatalf("NumTokens = %d, %v; want 1, true", n, ok)
	}
	mustFree(t, m, 1)
}

// TestForkCopyOnWrite: a fork shares every block; the first append to the
// shared partial last block copies it, and the tables diverge.
func TestForkCopyOnWrite(t *testing.T) {
	for _, caching := range []bool{false, true} {
		t.Run(map[bool]string{false: "nocache", true: "cache"}[caching], func(t *testing.T) {
			m := newManager(t, Config{BlockSize: 4, NumBlocks: 8, EnablePrefixCaching: caching})
			mustAllocate(t, m, 1, seq(0, 6), 0)
			if err := m.Fork(1, 2); err != nil {
				t.Fatal(err)
			}
			check(t, m)
			wantTable(t, m, 2, 0, 1)
			if got := refs(m.device, 0, 1); !slices.Equal(got, []int32{2, 2}) {
				t.Fatalf("refs after fork %v, want [2 2]", got)
			}
			mustAppend(t, m, 1, []int32{50}, []Copy{{Src: 1, Dst: 2}})
			wantTable(t, m, 1, 0, 2)
			wantTable(t, m, 2, 0, 1)
			if got := refs(m.device, 0, 1, 2); !slices.Equal(got, []int32{2, 1, 1}) {
				t.Fatalf("refs after COW %v, want [2 1 1]", got)
			}
			mustAppend(t, m, 2, []int32{60}, nil) // block 1 is now its own: written in place
			wantTable(t, m, 2, 0, 1)
			if got, want := tokensOf(m, 1), cat(seq(0, 6), []int32{50}); !slices.Equal(got, want) {
				t.Fatalf("seq 1 tokens %v, want %v", got, want)
			}
			if got, want := tokensOf(m, 2), cat(seq(0, 6), []int32{60}); !slices.Equal(got, want) {
				t.Fatalf("seq 2 tokens %v, want %v", got, want)
			}
			mustAppend(t, m, 1, []int32{51, 52, 53}, nil)
			wantTable(t, m, 1, 0, 2, 3)

			// A full shared last block needs no copy: the append opens a new block.
			mustAllocate(t, m, 3, seq(300, 8), 0)
			wantTable(t, m, 3, 4, 5)
			if err := m.Fork(3, 4); err != nil {
				t.Fatal(err)
			}
			mustAppend(t, m, 3, []int32{308}, nil)
			wantTable(t, m, 3, 4, 5, 6)
			wantTable(t, m, 4, 4, 5)
			mustFree(t, m, 1, 2, 3, 4)
			if m.NumFreeBlocks() != 8 {
				t.Fatalf("free %d, want 8", m.NumFreeBlocks())
			}
		})
	}
}

// TestCopyOnWriteNeedsABlock: with no free block, the copy-on-write append
// fails and changes nothing.
func TestCopyOnWriteNeedsABlock(t *testing.T) {
	m := newManager(t, Config{BlockSize: 4, NumBlocks: 2})
	mustAllocate(t, m, 1, seq(0, 6), 0)
	if err := m.Fork(1, 2); err != nil {
		t.Fatal(err)
	}
	if n, err := m.NumAppendBlocks(1, 1); err != nil || n != 1 {
		t.Fatalf("NumAppendBlocks = %d, %v; want 1", n, err)
	}
	if m.CanAppend(1, 1) {
		t.Fatal("CanAppend with no free block")
	}
	copies, err := m.AppendSlots(1, []int32{9}, nil)
	wantErr(t, err, ErrNoFreeBlocks)
	if len(copies) != 0 {
		t.Fatalf("copies %v on failure", copies)
	}
	check(t, m)
	wantTable(t, m, 1, 0, 1)
	if n, _ := m.NumTokens(1); n != 6 {
		t.Fatalf("NumTokens = %d after failed append, want 6", n)
	}
	mustFree(t, m, 2)
	mustAppend(t, m, 1, []int32{9, 10}, nil)
}

func TestSlots(t *testing.T) {
	m := newManager(t, Config{BlockSize: 16, NumBlocks: 8})
	mustAllocate(t, m, 7, seq(0, 20), 0) // blocks 0, 1
	mustAllocate(t, m, 8, seq(0, 40), 0) // blocks 2, 3, 4
	tests := []struct {
		seqID int64
		pos   int
		want  int32
	}{
		{7, 0, 0}, {7, 15, 15}, {7, 16, 16}, {7, 19, 19},
		{8, 0, 32}, {8, 17, 49}, {8, 39, 4*16 + 7},
	}
	for _, tc := range tests {
		got, err := m.SlotFor(tc.seqID, tc.pos)
		if err != nil || got != tc.want {
			t.Errorf("SlotFor(%d, %d) = %d, %v; want %d", tc.seqID, tc.pos, got, err, tc.want)
		}
	}
	got, err := m.SlotMapping([]int32{-1}, 8, 0, 14, 18)
	if want := []int32{-1, 46, 47, 48, 49}; err != nil || !slices.Equal(got, want) {
		t.Fatalf("SlotMapping = %v, %v; want %v", got, err, want)
	}
	for _, pos := range []int{-1, 20} {
		_, err := m.SlotFor(7, pos)
		wantErr(t, err, ErrPositionOutOfRange)
	}
	_, err = m.SlotMapping(nil, 7, 0, 3, 21)
	wantErr(t, err, ErrPositionOutOfRange)
	_, err = m.SlotFor(9, 0)
	wantErr(t, err, ErrUnknownSequence)
}

func TestErrors(t *testing.T) {
	m := newManager(t, Config{BlockSize: 4, NumBlocks: 4, NumHostBlocks: 2})
	mustAllocate(t, m, 1, seq(0, 5), 0)
	tests := []struct {
		name string
		op   func() error
		want error
	}{
		{"allocate existing", func() error { _, err := m.Allocate(1, seq(0, 1)); return err }, ErrSequenceExists},
		{"allocate too big", func() error { _, err := m.Allocate(2, seq(0, 13)); return err }, ErrNoFreeBlocks},
		{"append unknown", func() error { _, err := m.AppendSlots(2, seq(0, 1), nil); return err }, ErrUnknownSequence},
		{"append too big", func() error { _, err := m.AppendSlots(1, seq(0, 12), nil); return err }, ErrNoFreeBlocks},
		{"fork unknown", func() error { return m.Fork(2, 3) }, ErrUnknownSequence},
		{"fork onto existing", func() error { return m.Fork(1, 1) }, ErrSequenceExists},
		{"free unknown", func() error { return m.Free(2) }, ErrUnknownSequence},
		{"append blocks unknown", func() error { _, err := m.NumAppendBlocks(5, 1); return err }, ErrUnknownSequence},
		{"swap in device seq", func() error { _, err := m.SwapIn([]int64{1}, nil); return err }, ErrNotSwappedOut},
		{"swap out twice listed", func() error { _, err := m.SwapOut([]int64{1, 1}, nil); return err }, ErrDuplicateSequence},
		{"swap out unknown", func() error { _, err := m.SwapOut([]int64{1, 9}, nil); return err }, ErrUnknownSequence},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			wantErr(t, tc.op(), tc.want)
			check(t, m)
			wantTable(t, m, 1, 0, 1)
			if m.NumSequences() != 1 || m.NumFreeBlocks() != 2 || m.NumFreeHostBlocks() != 2 {
				t.Fatalf("state changed: seqs %d free %d host free %d", m.NumSequences(), m.NumFreeBlocks(), m.NumFreeHostBlocks())
			}
		})
	}
}

func TestCanAllocate(t *testing.T) {
	m := newManager(t, Config{BlockSize: 4, NumBlocks: 4, EnablePrefixCaching: true})
	prompt := seq(0, 9) // 3 blocks, 2 of them looked up
	tests := []struct {
		name   string
		tokens []int32
		want   AllocStatus
	}{
		{"fits", prompt, AllocOK},
		{"never", seq(0, 17), AllocNever},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := m.CanAllocate(tc.tokens); got != tc.want {
				t.Fatalf("CanAllocate = %v, want %v", got, tc.want)
			}
		})
	}
	mustAllocate(t, m, 1, prompt, 0) // blocks 0, 1, 2; one free
	if got := m.CanAllocate(seq(100, 5)); got != AllocLater {
		t.Fatalf("CanAllocate(2 new blocks, 1 free) = %v, want later", got)
	}
	// Same prompt: two blocks hit in-use blocks, only the last needs a free block.
	if got := m.CanAllocate(prompt); got != AllocOK {
		t.Fatalf("CanAllocate(shared prompt) = %v, want ok", got)
	}
	mustAllocate(t, m, 2, prompt, 8)
	wantTable(t, m, 2, 0, 1, 3)
	if s := AllocNever.String(); s != "never" {
		t.Fatalf("AllocNever.String() = %q", s)
	}
}

// TestSpeculativeSlots: proposals get slots but never enter the prefix
// cache; Settle keeps the verified ones (their blocks hashed then) and
// gives the rejected ones' blocks back.
func TestSpeculativeSlots(t *testing.T) {
	m := newManager(t, Config{BlockSize: 4, NumBlocks: 16, EnablePrefixCaching: true})
	if _, err := m.Allocate(1, []int32{1, 2, 3}); err != nil {
		t.Fatal(err)
	}
	// "4" is the sampled token; 5 6 7 8 9 are proposals.
	if _, err := m.AppendSpeculative(1, []int32{4, 5, 6, 7, 8, 9}, 5, nil); err != nil {
		t.Fatal(err)
	}
	if n := len(m.BlockTable(1)); n != 3 {
		t.Fatalf("%d blocks for 9 tokens", n)
	}
	if got := m.NumCachedTokens([]int32{1, 2, 3, 4, 5, 6, 7, 8, 0}); got != 4 {
		t.Fatalf("the cache serves %d tokens; only the first block holds no proposal", got)
	}
	if _, err := m.AppendSlots(1, []int32{10}, nil); err == nil {
		t.Fatal("appended with proposals unsettled")
	}
	free := m.NumFreeBlocks()
	if err := m.Settle(1, 6); err != nil { // 5 verified, 6 rejected
		t.Fatal(err)
	}
	if n, _ := m.NumTokens(1); n != 6 || len(m.BlockTable(1)) != 2 || m.NumFreeBlocks() != free+1 {
		t.Fatalf("after Settle: %d tokens, %d blocks, %d free (was %d)", n, len(m.BlockTable(1)), m.NumFreeBlocks(), free)
	}
	if _, err := m.AppendSlots(1, []int32{7, 8}, nil); err != nil {
		t.Fatal(err)
	}
	if got := m.NumCachedTokens([]int32{1, 2, 3, 4, 5, 6, 7, 8, 0}); got != 8 {
		t.Fatalf("the cache serves %d tokens, want the 8 now computed", got)
	}
	if err := m.Settle(1, 3); err == nil {
		t.Fatal("Settle without proposals pending, before the verified tokens, accepted")
	}
	if err := m.CheckInvariants(); err != nil {
		t.Fatal(err)
	}
}
