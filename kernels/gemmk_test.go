package kernels

import (
	"testing"

	"pagoda/gguf"
)

// kTypes are the K-quant weight types with accelerated kernels.
var kTypes = []gguf.Type{gguf.Q4_K, gguf.Q5_K, gguf.Q6_K}

// TestGEMMKSameAsGeneric sweeps rows, super-blocks per row, activation
// rows (tiles and their tails), misaligned weights and scale
// distributions, on 1 and 3 threads.
func TestGEMMKSameAsGeneric(t *testing.T) {
	sweepGEMM(t, kTypes, 13, 3, []int{1, 2, 5, 17},
		func(int) []int { return []int{256, 512, 1536} }, []int{0, 1, 2, 5, 6, 7, 13})
}

// FuzzGEMMK compares the K-quant kernels with the generic ones on
// fuzzer-chosen weight bytes.
func FuzzGEMMK(f *testing.F) {
	f.Add(uint8(0), uint8(2), uint8(3), uint64(1), []byte{1, 2, 3})
	f.Fuzz(func(t *testing.T, ti, rows8, n8 uint8, seed uint64, raw []byte) {
		typ := kTypes[int(ti)%len(kTypes)]
		rows, n := 1+int(rows8)%5, int(n8)%8
		r := newRand(seed)
		cols := 256 * (1 + r.IntN(3))
		w := rawBlocks(r, typ, rows, cols, int(seed%3), scaleDists["wide"](r))
		copy(w.Data, raw)
		x := randVec(r, n*cols, 1)
		fuzzSameMatMul(t, w, x, n, true)
	})
}
