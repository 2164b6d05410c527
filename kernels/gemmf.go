package kernels

import "unsafe"

// floatBytes views converted float activations as the bytes the tiled
// float-weight kernels read (blockGEMM.float).
func floatBytes(f []float32) []byte {
	if len(f) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&f[0])), 4*len(f))
}
