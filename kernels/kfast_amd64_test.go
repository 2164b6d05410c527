//go:build amd64 && !noasm

package kernels

import (
	"fmt"
	"math"
	"testing"

	"pagoda/gguf"
)

// kfastKernels are the generated fast K-quant kernels by type, tile width
// − 1, with the type's interleaver and group-block size.
var kfastKernels = map[gguf.Type]struct {
	tiles, avx2 []gemmFunc
	interleave  func(dst []byte, src [][]byte)
	block       int
}{
	gguf.Q4_K: {[]gemmFunc{kfastQ4_K_1, kfastQ4_K_2, kfastQ4_K_3, kfastQ4_K_4},
		[]gemmFunc{kfastQ4_K_avx2_1, kfastQ4_K_avx2_2, kfastQ4_K_avx2_3}, interleaveQ4K, kfQ4KBlock},
	gguf.Q5_K: {[]gemmFunc{kfastQ5_K_1, kfastQ5_K_2, kfastQ5_K_3, kfastQ5_K_4},
		[]gemmFunc{kfastQ5_K_avx2_1, kfastQ5_K_avx2_2, kfastQ5_K_avx2_3}, interleaveQ5K, kfQ5KBlock},
	gguf.Q6_K: {[]gemmFunc{kfastQ6_K_1, kfastQ6_K_2, kfastQ6_K_3, kfastQ6_K_4},
		[]gemmFunc{kfastQ6_K_avx2_1, kfastQ6_K_avx2_2, kfastQ6_K_avx2_3}, interleaveQ6K, kfQ6KBlock},
	gguf.Q2_K: {[]gemmFunc{kfastQ2_K_1, kfastQ2_K_2, kfastQ2_K_3, kfastQ2_K_4},
		[]gemmFunc{kfastQ2_K_avx2_1, kfastQ2_K_avx2_2, kfastQ2_K_avx2_3}, interleaveQ2K, kfQ2KBlock},
	gguf.Q3_K: {[]gemmFunc{kfastQ3_K_1, kfastQ3_K_2, kfastQ3_K_3, kfastQ3_K_4},
		[]gemmFunc{kfastQ3_K_avx2_1, kfastQ3_K_avx2_2, kfastQ3_K_avx2_3}, interleaveQ3K, kfQ3KBlock},
}

// interleaveK lays out w's rows (a multiple of kfRows) in groups.
func interleaveK(w Weight, interleave func(dst []byte, src [][]byte), gb int) []byte {
	nb, rb, size := w.Cols/256, w.RowBytes(), w.Type.TypeSize()
	out := make([]byte, w.Rows/kfRows*nb*gb)
	src := make([][]byte, kfRows)
	for g := range w.Rows / kfRows {
		for b := range nb {
			for i := range src {
				src[i] = w.Data[(kfRows*g+i)*rb+b*size:][:size]
			}
			interleave(out[(g*nb+b)*gb:][:gb], src)
		}
	}
	return out
}

// TestKFastKernels: every generated kernel, on random raw blocks of every
// scale distribution, equals the generic fast dot of each (row, token) bit
// for bit, and writes nothing outside its tile.
func TestKFastKernels(t *testing.T) {
	for _, isa := range []struct {
		name  string
		ok    bool
		tiles func(gguf.Type) []gemmFunc
	}{
		{"avx512", hasAVX512(), func(t gguf.Type) []gemmFunc { return kfastKernels[t].tiles }},
		{"avx2", hasAVX2(), func(t gguf.Type) []gemmFunc { return kfastKernels[t].avx2 }},
	} {
		t.Run(isa.name, func(t *testing.T) {
			if !isa.ok {
				t.Skipf("%s: not supported by this CPU", isa.name)
			}
			for _, tc := range kFastDots {
				checkKFastKernels(t, tc.typ, tc.dot, isa.tiles(tc.typ))
			}
		})
	}
}

// checkKFastKernels runs every tile of one type's kernels on random raw
// blocks of every scale distribution (48 rows: three groups, the rows
// misaligned) against the reference dot.
func checkKFastKernels(t *testing.T, typ gguf.Type, dot func([]byte, *actRow) float32, tiles []gemmFunc) {
	kk := kfastKernels[typ]
	for dist, mk := range scaleDists {
		t.Run(fmt.Sprintf("%v/%s", typ, dist), func(t *testing.T) {
			r := newRand(uint64(typ)*31 + uint64(len(dist)))
			const rows, cols, n = 48, 768, 4
			w := rawBlocks(r, typ, rows, cols, 3, mk(r))
			packed := interleaveK(w, kk.interleave, kk.block)
			x := randVec(r, n*cols, 1)
			act, rec, stride := kfastRecords(x, n, cols)
			rb := w.RowBytes()
			for na := 1; na <= len(tiles); na++ {
				dst := make([]float32, n*rows)
				for i := range dst {
					dst[i] = float32(math.NaN())
				}
				tiles[na-1](&packed[0], cols/256*kk.block, rows, &rec[0], stride, cols/256, &dst[0], rows)
				for i, got := range dst {
					tok, row := i/rows, i%rows
					if tok >= na {
						if !math.IsNaN(float64(got)) {
							t.Fatalf("tile %d wrote token %d", na, tok)
						}
						continue
					}
					want := dot(w.Data[row*rb:(row+1)*rb], &act.rows[tok])
					if math.Float32bits(got) != math.Float32bits(want) {
						t.Fatalf("tile %d token %d row %d: %v, want %v", na, tok, row, got, want)
					}
				}
			}
		})
	}
}

// BenchmarkKFastKernel times one call of the fast kernel and of the exact
// (gemmk/kq23) kernel on the same 2048×2048 weight, 1 and 4 tokens.
func BenchmarkKFastKernel(b *testing.B) {
	if !hasAVX512() {
		b.Skip("no AVX-512 VNNI on this CPU")
	}
	exact := accelTypes
	for _, tc := range kFastDots {
		kk := kfastKernels[tc.typ]
		r := newRand(5)
		const rows, cols = 2048, 2048
		w := rawBlocks(r, tc.typ, rows, cols, 0, scaleDists["normal"](r))
		packed := interleaveK(w, kk.interleave, kk.block)
		for _, n := range []int{1, 4} {
			x := randVec(r, n*cols, 1)
			act, rec, stride := kfastRecords(x, n, cols)
			dst := make([]float32, n*rows)
			b.Run(fmt.Sprintf("%v/fast/n%d", tc.typ, n), func(b *testing.B) {
				b.SetBytes(int64(len(w.Data)))
				for b.Loop() {
					kk.tiles[n-1](&packed[0], cols/256*kk.block, rows, &rec[0], stride, cols/256, &dst[0], rows)
				}
			})
			act.rec = grow(act.rec, n*(cols/256*gemmKRec))
			act.recordsKRows(0, n)
			g := exact[tc.typ].avx512.gemm
			b.Run(fmt.Sprintf("%v/exact/n%d", tc.typ, n), func(b *testing.B) {
				b.SetBytes(int64(len(w.Data)))
				for b.Loop() {
					g.tiles[n-1](&w.Data[0], w.RowBytes(), rows, &act.rec[0], cols/256*gemmKRec, cols/256, &dst[0], rows)
				}
			})
		}
	}
}

// kfastRecords quantizes n tokens of cols activations x to Q8_K and writes
// their fast-kernel records, stride bytes a token.
func kfastRecords(x []float32, n, cols int) (act *actRows, rec []byte, stride int) {
	act = new(actRows)
	act.prepare(generic, actQ8K, x, n, cols)
	stride = cols / 256 * kfRec
	rec = make([]byte, n*stride)
	for tok := range n {
		writeRecordsKFast(rec[tok*stride:(tok+1)*stride], &act.rows[tok])
	}
	return act, rec, stride
}
