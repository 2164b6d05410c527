//go:build unix

package gguf

import (
	"fmt"
	"math"
	"os"
	"syscall"
)

// mapFile maps the whole of fh read-only and shared; the returned unmap
// releases it. The mapping outlives fh.
func mapFile(fh *os.File) ([]byte, func() error, error) {
	st, err := fh.Stat()
	if err != nil {
		return nil, nil, err
	}
	size := st.Size()
	if size == 0 {
		return nil, nil, &FormatError{Msg: "empty file", Err: ErrTruncated}
	}
	if size > math.MaxInt {
		return nil, nil, fmt.Errorf("gguf: file of %d bytes is too large to map", size)
	}
	data, err := syscall.Mmap(int(fh.Fd()), 0, int(size), syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		return nil, nil, fmt.Errorf("gguf: mmap: %w", err)
	}
	return data, func() error { return syscall.Munmap(data) }, nil
}
