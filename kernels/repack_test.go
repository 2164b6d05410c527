package kernels

import (
	"math"
	"testing"

	"pagoda/gguf"
)

// TestRepackOnlyWhatLlamaCppRepacks: other types and row counts that are
// not a multiple of 8 keep the plain arithmetic.
func TestRepackOnlyWhatLlamaCppRepacks(t *testing.T) {
	checkKeptPlain(t, Repack, "repacked", []typeRows{{gguf.Q4_0, 12}, {gguf.Q4_1, 16}, {gguf.Q8_0, 16}, {gguf.F32, 16}})
}

// TestMatMulNMixesRepacked: one MatMulN call over a repacked and a plain
// Q4_0 weight (same type, different records) gives each MatMul's result.
func TestMatMulNMixesRepacked(t *testing.T) {
	forEachImpl(t, func(t *testing.T, k *impl) {
		r := newRand(14)
		plain, _ := quantWeight(t, r, gguf.Q4_0, 24, 128)
		other, _ := quantWeight(t, r, gguf.Q4_0, 32, 128)
		rep := fast(k, other)
		const n = 5
		x := randVec(r, n*128, 1)
		p := newPool(2, k)
		defer p.Close()
		outs := []MatMulOut{{Dst: make([]float32, n*24), W: plain}, {Dst: make([]float32, n*32), W: rep}}
		p.MatMulN(outs, x, n)
		for _, o := range outs {
			want := make([]float32, len(o.Dst))
			p.MatMul(want, o.W, x, n)
			for i := range want {
				if math.Float32bits(o.Dst[i]) != math.Float32bits(want[i]) {
					t.Fatalf("repacked %v: element %d = %v, MatMul %v", o.W.Repacked(), i, o.Dst[i], want[i])
				}
			}
		}
	})
}

// TestGoldenRepack: every implementation reproduces llama.cpp's repacked
// Q4_0 kernels (ggml_gemv_q4_0_8x8_q8_0 token by token and
// ggml_gemm_q4_0_8x8_q8_0 four tokens at a time, which agree) bit for bit,
// through MatMul on one thread and on three.
func TestGoldenRepack(t *testing.T) {
	forEachImpl(t, func(t *testing.T, k *impl) {
		g := openGolden(t, "repack_q4_0.bin")
		for g.more() {
			rows, n, nt := g.u32(), g.u32(), g.u32()
			w := fast(k, Weight{Type: gguf.Q4_0, Data: g.take(rows * n / 32 * 18), Rows: rows, Cols: n})
			x := g.f32s(nt * n)
			gemv, gemm := g.f32s(nt*rows), g.f32s(nt*rows)
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
	})
}
