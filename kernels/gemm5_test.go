package kernels

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"pagoda/gguf"
)

// Tests of the tiled kernels for Q5_0, Q5_1 (gemm32 records) and Q2_K,
// Q3_K (K-quant records) against the generic dot products.

// gemm5KQ23Types are the weight types of the gemm5 and kq23 kernel families
// (tiled matmuls the avx512 implementation has; see doc.go).
var gemm5KQ23Types = []gguf.Type{gguf.Q5_0, gguf.Q5_1, gguf.Q2_K, gguf.Q3_K}

// TestGEMM5KQ23SameAsGeneric sweeps rows (tails of the 4-row groups),
// blocks per row, activation rows (tiles and their tails), misaligned
// weights, scale distributions and thread counts.
func TestGEMM5KQ23SameAsGeneric(t *testing.T) {
	sweepGEMM(t, gemm5KQ23Types, 17, 4, []int{1, 2, 3, 4, 5, 7, 9, 17},
		func(bl int) []int { return []int{bl, 2 * bl, 3 * bl, 6 * bl} }, []int{0, 1, 2, 3, 5, 6, 7, 8, 9, 13})
}

// TestGEMM5KQ23Large checks model-sized shapes and quantizer-made
// weights.
func TestGEMM5KQ23Large(t *testing.T) {
	forEachAccelType(t, gemm5KQ23Types, 21, func(t *testing.T, k *impl, p *Pool, r *rand.Rand, typ gguf.Type) {
		w := rawBlocks(r, typ, 300, 1536, 1, scaleDists["normal"](r))
		checkSameMatMul(t, k, p, w, randVec(r, 7*1536, 1), 7)
		wq, _ := quantWeight(t, r, typ, 64, 512)
		checkSameMatMul(t, k, p, wq, randVec(r, 9*512, 1), 9)
	})
}

// TestGEMM5KQ23ExtremeActivations: zero rows, spikes and huge values.
func TestGEMM5KQ23ExtremeActivations(t *testing.T) {
	forEachAccel(t, func(t *testing.T, k *impl) {
		checkExtremeActivations(t, k, 22, 512, gemm5KQ23Types, func(_ *rand.Rand, row []float32) {
			for i := range row {
				row[i] = float32(-1 + 2*(i%2)) // saturated quants, ±127
			}
		})
	})
}

// FuzzGEMM5KQ23 compares the kernels with the generic ones on
// fuzzer-chosen weight bytes.
func FuzzGEMM5KQ23(f *testing.F) {
	f.Add(uint8(0), uint8(3), uint8(2), uint64(1), []byte{1, 2, 3})
	f.Add(uint8(3), uint8(9), uint8(7), uint64(99), []byte{0xff, 0x7b, 0x00, 0x80})
	f.Fuzz(func(t *testing.T, ti, rows8, n8 uint8, seed uint64, raw []byte) {
		fuzzRawGEMM(t, gemm5KQ23Types, 10, true, ti, rows8, n8, seed, raw)
	})
}

// BenchmarkGEMM5KQ23: decode (n=1) and batched (n=8) on a 2048×2048
// weight, each accelerated implementation beside the generic one.
func BenchmarkGEMM5KQ23(b *testing.B) {
	for _, typ := range gemm5KQ23Types {
		for _, n := range []int{1, 8} {
			for _, k := range implementations() {
				b.Run(fmt.Sprintf("%v/n=%d/%s", typ, n, k.name), func(b *testing.B) {
					benchGEMMRaw(b, k, typ, 2048, 2048, n)
				})
			}
		}
	}
}

// benchGEMMRaw is benchGEMM on rawBlocks weights (any block size).
func benchGEMMRaw(b *testing.B, k *impl, typ gguf.Type, rows, cols, n int) {
	r := newRand(30)
	benchMatMul(b, k, rawBlocks(r, typ, rows, cols, 0, scaleDists["normal"](r)), randVec(r, n*cols, 1), n)
}
