package kvcache

import (
	"slices"
	"testing"
)

// forkedGroup builds seq 1 (10 tokens), seq 2 = fork of 1 plus one token
// (copy-on-write of block 2 into 3), seq 3 = fork of 1:
//
//	seq 1: [0, 1, 2]   seq 2: [0, 1, 3]   seq 3: [0, 1, 2]
//	refs: 0:3  1:3  2:2  3:1
func forkedGroup(t *testing.T, m *Manager) {
	t.Helper()
	mustAllocate(t, m, 1, seq(0, 10), 0)
	if err := m.Fork(1, 2); err != nil {
		t.Fatal(err)
	}
	mustAppend(t, m, 2, []int32{99}, []Copy{{Src: 2, Dst: 3}})
	if err := m.Fork(1, 3); err != nil {
		t.Fatal(err)
	}
	check(t, m)
	wantForkedGroup(t, m, m.device, 0)
}

// wantForkedGroup checks that the tables of forkedGroup's sequences share
// its four distinct blocks, here base..base+3 of pool p, as forkedGroup
// made them share blocks 0..3 of the device.
func wantForkedGroup(t *testing.T, m *Manager, p *Pool, base int32) {
	t.Helper()
	wantTable(t, m, 1, base, base+1, base+2)
	wantTable(t, m, 2, base, base+1, base+3)
	wantTable(t, m, 3, base, base+1, base+2)
	if got := refs(p, base, base+1, base+2, base+3); !slices.Equal(got, []int32{3, 3, 2, 1}) {
		t.Fatalf("refs of blocks %d.. %v, want [3 3 2 1]", base, got)
	}
}

func TestSwapForkedGroup(t *testing.T) {
	m := newManager(t, Config{BlockSize: 4, NumBlocks: 8, NumHostBlocks: 6})
	forkedGroup(t, m)
	group := []int64{1, 2, 3}
	mustSwap(t, m, false, group, []Swap{{0, 0}, {1, 1}, {2, 2}, {3, 3}})
	wantForkedGroup(t, m, m.host, 0)
	if m.NumFreeBlocks() != 8 || m.NumFreeHostBlocks() != 2 || !m.SwappedOut(2) {
		t.Fatalf("free %d host free %d swapped %v", m.NumFreeBlocks(), m.NumFreeHostBlocks(), m.SwappedOut(2))
	}
	wantFreeList(t, m.device, 0, 1, 2, 3, 4, 5, 6, 7)
	if got, want := tokensOf(m, 2), cat(seq(0, 10), []int32{99}); !slices.Equal(got, want) {
		t.Fatalf("host tokens of seq 2 %v, want %v", got, want)
	}
	wantSwappedOutErrors(t, m, group)

	// Take device blocks 0, 1 so that the swap-in lands elsewhere.
	mustAllocate(t, m, 9, seq(500, 5), 0)
	mustSwap(t, m, true, group, []Swap{{0, 2}, {1, 3}, {2, 4}, {3, 5}})
	wantForkedGroup(t, m, m.device, 2)
	if m.NumFreeHostBlocks() != 6 {
		t.Fatalf("host free %d, want 6", m.NumFreeHostBlocks())
	}
	// Sharing survived: seq 3 still copies its shared partial block on write.
	mustAppend(t, m, 3, []int32{77}, []Copy{{Src: 4, Dst: 6}})
	mustFree(t, m, 1, 2, 3, 9)
	if m.NumFreeBlocks() != 8 {
		t.Fatalf("free %d, want 8", m.NumFreeBlocks())
	}
}

// wantSwappedOutErrors checks that device-only operations refuse a
// swapped-out group.
func wantSwappedOutErrors(t *testing.T, m *Manager, group []int64) {
	t.Helper()
	_, err := m.AppendSlots(group[0], seq(0, 1), nil)
	wantErr(t, err, ErrSwappedOut)
	_, err = m.SlotFor(group[0], 0)
	wantErr(t, err, ErrSwappedOut)
	_, err = m.SlotMapping(nil, group[0], 0, 0, 1)
	wantErr(t, err, ErrSwappedOut)
	_, err = m.SwapOut(group, nil)
	wantErr(t, err, ErrSwappedOut)
	if m.CanSwapOut(group) || m.CanAppend(group[0], 1) {
		t.Fatal("CanSwapOut or CanAppend true for a swapped-out group")
	}
	check(t, m)
}

// TestSwapPartialGroup: swapping out one sequence of a forked pair copies
// the shared blocks; the device keeps them for the other sequence.
func TestSwapPartialGroup(t *testing.T) {
	m := newManager(t, Config{BlockSize: 4, NumBlocks: 8, NumHostBlocks: 4})
	forkedGroup(t, m)
	mustSwap(t, m, false, []int64{2}, []Swap{{0, 0}, {1, 1}, {3, 2}})
	if got := refs(m.device, 0, 1, 2, 3); !slices.Equal(got, []int32{2, 2, 2, 0}) {
		t.Fatalf("device refs %v, want [2 2 2 0]", got)
	}
	if _, err := m.SwapIn([]int64{2}, nil); err != nil {
		t.Fatal(err)
	}
	check(t, m)
	wantTable(t, m, 2, 3, 4, 5)
}

// TestSwapInReusesCachedBlocks: with prefix caching, full blocks still
// cached on the device after a swap-out are shared again without a copy.
func TestSwapInReusesCachedBlocks(t *testing.T) {
	m := newManager(t, Config{BlockSize: 4, NumBlocks: 8, NumHostBlocks: 4, EnablePrefixCaching: true})
	mustAllocate(t, m, 1, seq(0, 10), 0) // [0, 1, 2], 0 and 1 cached
	if err := m.Fork(1, 2); err != nil {
		t.Fatal(err)
	}
	group := []int64{1, 2}
	mustSwap(t, m, false, group, []Swap{{0, 0}, {1, 1}, {2, 2}})
	wantFreeList(t, m.device, 2, 3, 4, 5, 6, 7, 1, 0)

	in := mustSwap(t, m, true, group, []Swap{{2, 2}})
	wantTable(t, m, 1, 0, 1, 2)
	wantTable(t, m, 2, 0, 1, 2)

	// Swap out again and evict everything: the swap-in copies all blocks,
	// and the copied full blocks re-enter the cache.
	if _, err := m.SwapOut(group, nil); err != nil {
		t.Fatal(err)
	}
	mustAllocate(t, m, 3, seq(100, 32), 0)
	mustFree(t, m, 3)
	in, err := m.SwapIn(group, in[:0])
	if err != nil {
		t.Fatal(err)
	}
	check(t, m)
	if len(in) != 3 {
		t.Fatalf("SwapIn mapping %v, want 3 copies", in)
	}
	mustAllocate(t, m, 4, seq(0, 9), 8)
	if got, want := m.BlockTable(4)[:2], m.BlockTable(1)[:2]; !slices.Equal(got, want) {
		t.Fatalf("seq 4 shares %v, want %v", got, want)
	}
}

func TestSwapSpace(t *testing.T) {
	m := newManager(t, Config{BlockSize: 4, NumBlocks: 4, NumHostBlocks: 2})
	mustAllocate(t, m, 1, seq(0, 9), 0) // 3 blocks > 2 host blocks
	mustAllocate(t, m, 2, nil, 0)       // no blocks: always fits
	if m.CanSwapOut([]int64{1}) {
		t.Fatal("CanSwapOut = true with 2 host blocks for 3")
	}
	_, err := m.SwapOut([]int64{2, 1}, nil)
	wantErr(t, err, ErrNoSwapSpace)
	check(t, m)
	if m.SwappedOut(2) {
		t.Fatal("failed SwapOut moved a sequence")
	}
	if _, err := m.SwapOut([]int64{2}, nil); err != nil {
		t.Fatal(err)
	}
	// Device full: seq 2 has no blocks and swaps in anyway; a 1-block one cannot.
	mustAllocate(t, m, 3, seq(0, 1), 0)
	if _, err := m.SwapIn([]int64{2}, nil); err != nil {
		t.Fatal(err)
	}
	mustFree(t, m, 3)
	_, err = m.SwapOut([]int64{1}, nil)
	wantErr(t, err, ErrNoSwapSpace)
	mustAllocate(t, m, 4, seq(0, 2), 0)
	if _, err := m.SwapOut([]int64{4}, nil); err != nil {
		t.Fatal(err)
	}
	mustAllocate(t, m, 5, seq(0, 1), 0) // device full again
	if m.CanSwapIn([]int64{4}) {
		t.Fatal("CanSwapIn with a full device")
	}
	_, err = m.SwapIn([]int64{4}, nil)
	wantErr(t, err, ErrNoFreeBlocks)
	check(t, m)
	mustFree(t, m, 1, 2, 4, 5)
}
