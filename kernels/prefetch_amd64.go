//go:build amd64 && !noasm

package kernels

import "unsafe"

// prefetchBytes hints that b is read soon (prefetch_amd64.s).
func prefetchBytes(b []byte) {
	if len(b) == 0 {
		return
	}
	start := uintptr(unsafe.Pointer(&b[0]))
	prefetchLines(&b[0], int((start&63+uintptr(len(b))+63)/64))
}

// prefetchCacheRows hints that the KV cache rows at offs (hd elements of
// x16 for the 16-bit caches, else of x32) are read soon.
func prefetchCacheRows(x16 []uint16, x32 []float32, offs []int, hd int) {
	if len(offs) == 0 {
		return
	}
	base, size := unsafe.Pointer(unsafe.SliceData(x32)), 4
	if x16 != nil {
		base, size = unsafe.Pointer(unsafe.SliceData(x16)), 2
	}
	prefetchRows((*byte)(base), &offs[0], len(offs), size, (hd*size+63)/64)
}
