//go:build !linux

package gguf

// releasePages does nothing here: only Linux's madvise is used.
func releasePages([]byte) error { return nil }
