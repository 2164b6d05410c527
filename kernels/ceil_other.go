//go:build !amd64 || noasm

package kernels

func readProbe(b []byte) uint64 { return readGo(b) }
func fmaProbe(iters int) uint32 { return fmaGo(iters) }
func dotProbe(iters int) uint32 { return dotGo(iters) }
