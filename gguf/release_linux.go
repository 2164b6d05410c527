package gguf

import (
	"fmt"
	"syscall"
	"unsafe"
)

// releasePages drops the whole pages inside b, a slice of a mapping made
// by mapFile, from the process's resident memory (MADV_DONTNEED: the
// mapping is read-only and shared, so a later read faults them back in
// from the file; nothing is lost).
func releasePages(b []byte) error {
	page := uintptr(syscall.Getpagesize())
	lo := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	start := int((lo+page-1)&^(page-1) - lo)
	end := int((lo+uintptr(len(b)))&^(page-1) - lo)
	if end <= start {
		return nil
	}
	if err := syscall.Madvise(b[start:end], syscall.MADV_DONTNEED); err != nil {
		return fmt.Errorf("gguf: madvise: %w", err)
	}
	return nil
}
