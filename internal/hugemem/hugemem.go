// Package hugemem allocates the large, long-lived, pointer-free arrays
// pagoda streams through — the repacked weights, the bandwidth probe's
// buffers — in memory that, on Linux, the kernel is
// asked to back with transparent huge pages (MADV_HUGEPAGE; the
// machine's default is often "madvise", which gives a process huge pages
// only where it asks).
//
// With 4 KiB pages, a weight stream crosses a page every 4 KiB, and each
// KV block read from a cache of hundreds of MiB starts with a TLB miss
// and a page walk (two-dimensional under a hypervisor); with 2 MiB pages
// the walks all but vanish. Measured on a 2-core AMD EPYC (Zen 4) VM:
// reading 512 MiB on two threads 29 → 34 GB/s, TinyLlama-shaped decode
// 45 → 49 tok/s.
//
// The memory is ordinary Go heap memory: the garbage collector frees it
// when nothing refers to it, and the advice only changes how the kernel
// faults in pages not yet touched (nothing, where transparent huge pages
// are disabled). That fault costs more with huge pages (with defrag
// "madvise" the kernel compacts memory first: 2.4 ms per MiB on that VM,
// against 0.45 ms for 4 KiB pages), which is why the paged KV cache, whose
// blocks are first written while serving, stays in ordinary pages (see
// model.NewKVCache); the weights are written once, at load.
package hugemem

import (
	"sync"
	"unsafe"
)

// PageSize is the size of a transparent huge page on x86-64 and on arm64
// with 4 KiB base pages.
const PageSize = 2 << 20

// Slice returns a zeroed slice of n elements of the pointer-free type T,
// aligned to a huge page and advised to be backed by huge pages when it
// spans at least one. T must hold no pointers (the memory is allocated as
// bytes).
func Slice[T any](n int) []T {
	var z T
	size := int(unsafe.Sizeof(z))
	if n*size < PageSize {
		return make([]T, n)
	}
	b := make([]byte, n*size+PageSize)
	off := (PageSize - int(uintptr(unsafe.Pointer(&b[0])))%PageSize) % PageSize
	b = b[off : off+n*size : off+n*size]
	advise(b)
	return unsafe.Slice((*T)(unsafe.Pointer(&b[0])), n)
}

// Arena hands out byte slices from shared huge-page chunks, so that many
// arrays smaller than a huge page (the matrices of a small model) share
// huge pages. A chunk is garbage once every slice carved from it is. The
// zero value is ready; it is safe for concurrent use.
type Arena struct {
	mu    sync.Mutex
	chunk []byte
}

// arenaChunk is the size of an Arena's chunks; requests of a quarter of
// it or more get their own Slice.
const arenaChunk = 16 * PageSize

// Bytes returns n zeroed bytes starting on a 64-byte boundary.
func (a *Arena) Bytes(n int) []byte {
	m := (n + 63) &^ 63
	if m >= arenaChunk/4 {
		return Slice[byte](n)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.chunk) < m {
		a.chunk = Slice[byte](arenaChunk)
	}
	b := a.chunk[:n:n]
	a.chunk = a.chunk[m:]
	return b
}
