//go:build linux && amd64 && !noasm

package kernels

import (
	"fmt"
	"testing"
	"time"

	"pagoda/gguf"
)

// The K-quants' shift-and-mask AVX-512 fast kernels stay selectable in
// BenchmarkDecodeKQuant (as "shift") beside the GFNI ones in use, on CPUs
// with GFNI.
func init() {
	prev := decodeVariants
	decodeVariants = func() []decodeVariant {
		vs := prev()
		if def.name != "avx512" || !hasGFNI() {
			return vs
		}
		k := *def
		for t := range kfastTiles512 {
			k.fast[t] = kfastGEMM512(t, false)
		}
		return append(vs, decodeVariant{"shift", &k, nil})
	}
}

// BenchmarkDecodeKQuant2 is BenchmarkDecodeKQuant with two tokens (the
// two-token tiles: speculative decoding, small batches) on Q4_K, Q5_K and
// Q6_K.
func BenchmarkDecodeKQuant2(b *testing.B) {
	shapes := []struct{ rows, cols int }{{5632, 2048}, {2048, 5632}}
	for _, typ := range []gguf.Type{gguf.Q4_K, gguf.Q5_K, gguf.Q6_K} {
		for _, s := range shapes {
			b.Run(fmt.Sprintf("%v/%dx%d", typ, s.rows, s.cols), func(b *testing.B) {
				benchDecode(b, typ, s.rows, s.cols, 2)
			})
		}
	}
}

// BenchmarkKFastGFNICompute times the tiles of the K-quants with GFNI
// kernels (where they differ), shift-and-mask vs GFNI, on a 256×2048
// weight that stays in L2 (compute bound, one thread): GB/s of weights,
// the medians of alternated rounds.
func BenchmarkKFastGFNICompute(b *testing.B) {
	for typ, k := range kfastTiles512 {
		for n := 1; n <= len(k.tiles); n++ {
			if sameFuncs(k.tiles[n-1:n], k.gfni[n-1:n]) {
				continue
			}
			b.Run(fmt.Sprintf("%v/n%d", typ, n), func(b *testing.B) {
				kk := kfastKernels[typ]
				r := newRand(5)
				const rows, cols = 256, 2048
				w := rawBlocks(r, typ, rows, cols, 0, scaleDists["normal"](r))
				packed := interleaveK(w, kk.interleave, kk.block)
				x := randVec(r, n*cols, 1)
				_, rec, stride := kfastRecords(x, n, cols)
				dst := make([]float32, n*rows)
				names := []string{"shift", "gfni"}
				sets := [][]gemmFunc{k.tiles, k.gfni}
				secs := make([][]float64, len(sets))
				for b.Loop() {
					for i, s := range sets {
						t0 := time.Now()
						for range 80 {
							s[n-1](&packed[0], cols/256*kk.block, rows, &rec[0], stride, cols/256, &dst[0], rows)
						}
						secs[i] = append(secs[i], time.Since(t0).Seconds())
					}
				}
				for i := range sets {
					b.ReportMetric(float64(80*len(packed))/median(secs[i])/1e9, names[i]+"-GB/s")
				}
			})
		}
	}
}
