package kvcache

import (
	"errors"
	"slices"
	"testing"
)

// newManager returns a Manager for cfg or fails the test.
func newManager(t testing.TB, cfg Config) *Manager {
	t.Helper()
	m, err := New(cfg)
	if err != nil {
		t.Fatalf("New(%+v): %v", cfg, err)
	}
	return m
}

// check fails the test when an invariant is broken.
func check(t testing.TB, m *Manager) {
	t.Helper()
	if err := m.CheckInvariants(); err != nil {
		t.Fatalf("invariants: %v", err)
	}
}

// seq returns n token ids start, start+1, ….
func seq(start, n int) []int32 {
	out := make([]int32, n)
	for i := range out {
		out[i] = int32(start + i)
	}
	return out
}

// cat concatenates token slices.
func cat(parts ...[]int32) []int32 { return slices.Concat(parts...) }

// tokensOf reconstructs seqID's token ids from its blocks.
func tokensOf(m *Manager, seqID int64) []int32 {
	st := m.seqs[seqID]
	p := m.pool(st)
	var out []int32
	for _, id := range st.tables[0] {
		out = append(out, p.filled(id)...)
	}
	return out
}

// freeList returns the device free list from head to tail.
func freeList(p *Pool) []int32 {
	var out []int32
	for id := p.blocks[p.head()].next; id != p.tail(); id = p.blocks[id].next {
		out = append(out, id)
	}
	return out
}

// refs returns the ref counts of the given blocks of pool p.
func refs(p *Pool, ids ...int32) []int32 {
	out := make([]int32, len(ids))
	for i, id := range ids {
		out[i] = p.blocks[id].ref
	}
	return out
}

func mustAllocate(t testing.TB, m *Manager, seqID int64, tokens []int32, wantCached int) {
	t.Helper()
	got, err := m.Allocate(seqID, tokens)
	if err != nil {
		t.Fatalf("Allocate(%d): %v", seqID, err)
	}
	if got != wantCached {
		t.Fatalf("Allocate(%d) cached %d tokens, want %d", seqID, got, wantCached)
	}
	check(t, m)
}

func mustAppend(t testing.TB, m *Manager, seqID int64, tokens []int32, wantCopies []Copy) {
	t.Helper()
	got, err := m.AppendSlots(seqID, tokens, nil)
	if err != nil {
		t.Fatalf("AppendSlots(%d): %v", seqID, err)
	}
	if !slices.Equal(got, wantCopies) {
		t.Fatalf("AppendSlots(%d) copies %v, want %v", seqID, got, wantCopies)
	}
	check(t, m)
}

func mustFree(t testing.TB, m *Manager, ids ...int64) {
	t.Helper()
	for _, id := range ids {
		if err := m.Free(id); err != nil {
			t.Fatalf("Free(%d): %v", id, err)
		}
		check(t, m)
	}
}

func wantTable(t testing.TB, m *Manager, seqID int64, want ...int32) {
	t.Helper()
	if got := m.BlockTable(seqID); !slices.Equal(got, want) {
		t.Fatalf("BlockTable(%d) = %v, want %v", seqID, got, want)
	}
}

func wantFreeList(t testing.TB, p *Pool, want ...int32) {
	t.Helper()
	if got := freeList(p); !slices.Equal(got, want) {
		t.Fatalf("free list = %v, want %v", got, want)
	}
}

func wantErr(t testing.TB, err, want error) {
	t.Helper()
	if !errors.Is(err, want) {
		t.Fatalf("error %v, want %v", err, want)
	}
}

// mustSwap runs SwapOut (in false) or SwapIn (in true) on group, after
// CanSwapOut or CanSwapIn said it would succeed, checks the
// invariants and that the copies it asked for are want, and returns them.
func mustSwap(t *testing.T, m *Manager, in bool, group []int64, want []Swap) []Swap {
	t.Helper()
	can, swap, name := m.CanSwapOut, m.SwapOut, "SwapOut"
	if in {
		can, swap, name = m.CanSwapIn, m.SwapIn, "SwapIn"
	}
	if !can(group) {
		t.Fatalf("Can%s(%v) = false before a %s that must succeed", name, group, name)
	}
	got, err := swap(group, nil)
	if err != nil {
		t.Fatal(err)
	}
	check(t, m)
	if !slices.Equal(got, want) {
		t.Fatalf("%s mapping %v, want %v", name, got, want)
	}
	return got
}
