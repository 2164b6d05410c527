package kvcache

import (
	"fmt"
	"testing"
)

// TestStepPathDoesNotAllocate: in steady state, AppendSlots (one decode
// token, with or without a new block) and a whole request's
// Allocate, Fork, copy-on-write, SlotMapping, Free cycle allocate no memory.
func TestStepPathDoesNotAllocate(t *testing.T) {
	for _, bs := range []int{1, 16, 128} {
		for _, caching := range []bool{false, true} {
			name := fmt.Sprintf("bs=%d/cache=%v", bs, caching)
			cfg := Config{BlockSize: bs, NumBlocks: 64, EnablePrefixCaching: caching}
			t.Run(name+"/request", func(t *testing.T) { requestCycleAllocs(t, newManager(t, cfg)) })
			t.Run(name+"/decode", func(t *testing.T) { decodeAllocs(t, newManager(t, cfg)) })
		}
	}
}

func requestCycleAllocs(t *testing.T, m *Manager) {
	bs := m.BlockSize()
	prompt := seq(0, 2*bs+1) // the last block is partial: the fork's first append copies it
	tok := []int32{5}
	copies := make([]Copy, 0, 1)
	slots := make([]int32, 0, 8*bs)
	cycle := func() {
		if _, err := m.Allocate(1, prompt); err != nil {
			t.Fatal(err)
		}
		if err := m.Fork(1, 2); err != nil {
			t.Fatal(err)
		}
		for range 3 * bs {
			var err error
			if copies, err = m.AppendSlots(1, tok, copies[:0]); err != nil {
				t.Fatal(err)
			}
		}
		n, _ := m.NumTokens(1)
		slots, _ = m.SlotMapping(slots[:0], 1, 0, 0, n)
		if err := m.Free(1); err != nil {
			t.Fatal(err)
		}
		if err := m.Free(2); err != nil {
			t.Fatal(err)
		}
	}
	for range 3 {
		cycle() // warm up: table capacity, spare tables, map buckets
	}
	if n := testing.AllocsPerRun(20, cycle); n != 0 {
		t.Errorf("Allocate/Fork/AppendSlots/Free cycle allocates %v times", n)
	}
	check(t, m)
}

func decodeAllocs(t *testing.T, m *Manager) {
	bs := m.BlockSize()
	prompt := seq(0, 2*bs+1)
	// Grow a table once and free it: the next sequence reuses its capacity.
	if _, err := m.Allocate(3, cat(prompt, seq(0, 8*bs))); err != nil {
		t.Fatal(err)
	}
	if err := m.Free(3); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Allocate(3, prompt); err != nil {
		t.Fatal(err)
	}
	tok := []int32{7}
	decode := func() {
		if _, err := m.AppendSlots(3, tok, nil); err != nil {
			t.Fatal(err)
		}
	}
	if n := testing.AllocsPerRun(4*bs, decode); n != 0 {
		t.Errorf("AppendSlots allocates %v times per token", n)
	}
	check(t, m)
}
