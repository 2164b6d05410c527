package hugemem

import (
	"bytes"
	"slices"
	"sync"
	"testing"
	"unsafe"
)

func TestSlice(t *testing.T) {
	for _, n := range []int{0, 1, 1000, PageSize/4 - 1, PageSize / 4, 3*PageSize/4 + 5} {
		s := Slice[uint32](n)
		if len(s) != n || cap(s) != n {
			t.Fatalf("Slice(%d): len %d cap %d", n, len(s), cap(s))
		}
		for i, v := range s {
			if v != 0 {
				t.Fatalf("Slice(%d)[%d] = %d, want zeroed memory", n, i, v)
			}
		}
		if n*4 >= PageSize && uintptr(unsafe.Pointer(&s[0]))%PageSize != 0 {
			t.Fatalf("Slice(%d) starts at %p, not on a huge page", n, &s[0])
		}
	}
}

// TestArena: slices are zeroed, 64-byte aligned, of the asked length and
// capacity, and never overlap, also when taken concurrently.
func TestArena(t *testing.T) {
	var a Arena
	var mu sync.Mutex
	var got [][]byte
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range 50 {
				n := 1 + (g*7919+i*104729)%(1<<20)
				if i%10 == 9 {
					n += arenaChunk / 4 // a chunk of its own
				}
				b := a.Bytes(n)
				mu.Lock()
				got = append(got, b)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	pattern := bytes.Repeat([]byte{0xAA}, 1<<20+arenaChunk/4)
	type span struct{ lo, hi uintptr }
	seen := map[span]bool{}
	for _, b := range got {
		lo := uintptr(unsafe.Pointer(&b[0]))
		if lo%64 != 0 || cap(b) != len(b) {
			t.Fatalf("slice at %#x (len %d cap %d): want 64-byte aligned, cap = len", lo, len(b), cap(b))
		}
		if bytes.Count(b, []byte{0}) != len(b) { // bytealg: fast under the race detector too
			i := slices.IndexFunc(b, func(v byte) bool { return v != 0 })
			t.Fatalf("slice at %#x: byte %d is %d, want zeroed memory", lo, i, b[i])
		}
		seen[span{lo, lo + uintptr(len(b))}] = true
	}
	for s := range seen {
		for o := range seen {
			if s != o && s.lo < o.hi && o.lo < s.hi {
				t.Fatalf("slices [%#x, %#x) and [%#x, %#x) overlap", s.lo, s.hi, o.lo, o.hi)
			}
		}
	}
	for _, b := range got { // writes stay inside their slice
		copy(b, pattern)
	}
}
