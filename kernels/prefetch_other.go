//go:build !amd64 || noasm

package kernels

// prefetchBytes would hint that b is read soon; without assembly there is
// no hint to give.
func prefetchBytes([]byte) {}

// prefetchCacheRows would hint that the KV cache rows at offs are read
// soon.
func prefetchCacheRows([]uint16, []float32, []int, int) {}
