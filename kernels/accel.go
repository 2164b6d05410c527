//go:build !amd64 || noasm

package kernels

// accelerated returns the CPU-specific implementations usable on this
// machine, best first: none without amd64 assembly (or with the noasm tag).
func accelerated() []*impl { return nil }
