package kernels

import (
	"encoding/binary"
	"math"
)

// Portable versions of the ceiling probes, doing the same work as the
// assembly ones with scalar Go.

// readGo XORs the 64-bit words of b in eight independent chains.
func readGo(b []byte) uint64 {
	var acc [8]uint64
	for i := 0; i+64 <= len(b); i += 64 {
		for k := range acc {
			acc[k] ^= binary.LittleEndian.Uint64(b[i+8*k:])
		}
	}
	return acc[0] ^ acc[1] ^ acc[2] ^ acc[3] ^ acc[4] ^ acc[5] ^ acc[6] ^ acc[7]
}

// fmaGo runs iters rounds of 16×16 fused multiply-adds.
func fmaGo(iters int) uint32 {
	var acc [16]float32
	x := float32(1.0000001)
	for range iters {
		for l := range 16 {
			for k := range acc {
				acc[k] = fma32(x, x, acc[k]) + float32(l)*0
			}
		}
	}
	return math.Float32bits(acc[0])
}

// dotGo runs iters rounds of 16×64 int8 multiply-adds.
func dotGo(iters int) uint32 {
	var acc [16]int32
	for i := range iters {
		y := int32(int8(i))
		for l := range 64 {
			for k := range acc {
				acc[k] += y * int32(int8(l))
			}
		}
	}
	return uint32(acc[0])
}
