//go:build !unix

package gguf

import (
	"io"
	"os"
)

// mapFile reads the whole file on systems without mmap support here.
func mapFile(fh *os.File) ([]byte, func() error, error) {
	data, err := io.ReadAll(fh)
	if err != nil {
		return nil, nil, err
	}
	if len(data) == 0 {
		return nil, nil, &FormatError{Msg: "empty file", Err: ErrTruncated}
	}
	return data, func() error { return nil }, nil
}
