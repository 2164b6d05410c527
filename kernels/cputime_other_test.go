//go:build !unix

package kernels

// processCPU is unknown here: 0.
func processCPU() int64 { return 0 }
