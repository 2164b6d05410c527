package kernels

import (
	"testing"

	"pagoda/gguf"
)

// TestGoldenRepackMXFP4: MXFP4 weights marked for the repacked (fast)
// arithmetic multiply exactly as llama.cpp's repacked MXFP4 kernels
// (ggml_gemv_mxfp4_8x8_q8_0 token by token, ggml_gemm_mxfp4_8x8_q8_0 four
// tokens at a time: its default for gpt-oss's experts on AVX2), bit for
// bit, through MatMul on one thread and on three, with and without the
// Q8_0 copy the accelerated kernels read.
func TestGoldenRepackMXFP4(t *testing.T) {
	forEachImpl(t, func(t *testing.T, k *impl) {
		g := openGolden(t, "repack_mxfp4.bin")
		for g.more() {
			rows, n, nt := g.u32(), g.u32(), g.u32()
			plain := Weight{Type: gguf.MXFP4, Data: g.take(rows * n / 32 * 17), Rows: rows, Cols: n}
			w := fast(k, plain)
			if !w.Repacked() || k.fast[gguf.MXFP4] != nil && w.repacked == nil {
				t.Fatalf("%d×%d MXFP4 not marked fast (copy %v)", rows, n, w.repacked != nil)
			}
			x := g.f32s(nt * n)
			gemv, gemm := g.f32s(nt*rows), g.f32s(nt*rows)
			for _, w := range []Weight{w, Repack(plain)} {
				for threads := 1; threads <= 3; threads += 2 {
					p := newPool(threads, k)
					got := make([]float32, nt*rows)
					p.MatMul(got, w, x, nt)
					p.Close()
					for i := range got {
						if !sameFloat(got[i], gemv[i]) || !sameFloat(got[i], gemm[i]) {
							t.Fatalf("%d×%d, %d tokens, %d threads: element %d = %v, llama.cpp gemv %v gemm %v",
								rows, n, nt, threads, i, got[i], gemv[i], gemm[i])
						}
					}
				}
			}
		}
	})
}
