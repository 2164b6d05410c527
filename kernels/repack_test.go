package kernels

import (
	"fmt"
	"math"
	"testing"

	"pagoda/gguf"
)

// TestRepackExact: on every implementation, a repacked Q4_0 matmul equals
// the generic repacked dot of every (row, token) bit for bit, for row
// counts that fill, split and pad the 16-row groups, every tile width and
// remainder, and 1, 2 and 3 threads; nothing is written past dst.
func TestRepackExact(t *testing.T) {
	forEachImpl(t, func(t *testing.T, k *impl) {
		r := newRand(11)
		for _, rows := range []int{8, 16, 24, 40, 200} {
			for _, cols := range []int{32, 96, 512} {
				w, _ := quantWeight(t, r, gguf.Q4_0, rows, cols)
				w = repack(k, w)
				if !w.Repacked() {
					t.Fatal("Q4_0 with a multiple of 8 rows not repacked")
				}
				if k.gemmR != nil && w.repacked == nil {
					t.Fatal("no interleaved copy for the accelerated kernels")
				}
				for _, n := range []int{1, 2, 7, 8, 9, 17, 33} {
					x := randVec(r, n*cols, 1)
					var act actRows
					act.prepare(k, actQ8_0, x, n, cols)
					rb := w.RowBytes()
					for threads := 1; threads <= 3; threads++ {
						t.Run(fmt.Sprintf("%dx%d/n%d/t%d", rows, cols, n, threads), func(t *testing.T) {
							p := newPool(threads, k)
							defer p.Close()
							buf := make([]float32, n*rows+8)
							for i := range buf {
								buf[i] = float32(math.NaN())
							}
							p.MatMul(buf[:n*rows], w, x, n)
							for i, v := range buf[n*rows:] {
								if !math.IsNaN(float64(v)) {
									t.Fatalf("MatMul wrote past dst at %d", i)
								}
							}
							for tok := range n {
								for row := range rows {
									want := dotQ4_0RGeneric(w.Data[row*rb:(row+1)*rb], &act.rows[tok])
									if got := buf[tok*rows+row]; math.Float32bits(got) != math.Float32bits(want) {
										t.Fatalf("token %d row %d: %v, want %v", tok, row, got, want)
									}
								}
							}
						})
					}
				}
			}
		}
	})
}

// TestRepackDotAgainstFloat: the repacked arithmetic computes the same
// product as the plain one, to within float32 accumulation error.
func TestRepackDotAgainstFloat(t *testing.T) {
	r := newRand(12)
	w, deq := quantWeight(t, r, gguf.Q4_0, 8, 4096)
	x := randVec(r, 4096, 1)
	var act actRows
	act.prepare(generic, actQ8_0, x, 1, 4096)
	a := dequantAct(actQ8_0, &act.rows[0], 4096)
	rb := w.RowBytes()
	for row := range 8 {
		var ref, mag float64
		for j, av := range a {
			ref += float64(deq[row*4096+j]) * float64(av)
			mag += math.Abs(float64(deq[row*4096+j]) * float64(av))
		}
		got := float64(dotQ4_0RGeneric(w.Data[row*rb:(row+1)*rb], &act.rows[0]))
		if !closeTo(got, ref, 1e-6*mag) {
			t.Fatalf("row %d: %v, want %v (magnitude %v)", row, got, ref, mag)
		}
	}
}

// TestRepackOnlyWhatLlamaCppRepacks: other types and row counts that are
// not a multiple of 8 keep the plain arithmetic.
func TestRepackOnlyWhatLlamaCppRepacks(t *testing.T) {
	r := newRand(13)
	for _, tc := range []struct {
		typ  gguf.Type
		rows int
	}{{gguf.Q4_0, 12}, {gguf.Q4_1, 16}, {gguf.Q8_0, 16}, {gguf.F32, 16}} {
		w, _ := quantWeight(t, r, tc.typ, tc.rows, 64)
		if Repack(w).Repacked() {
			t.Errorf("%v with %d rows repacked", tc.typ, tc.rows)
		}
	}
}

// TestMatMulNMixesRepacked: one MatMulN call over a repacked and a plain
// Q4_0 weight (same type, different records) gives each MatMul's result.
func TestMatMulNMixesRepacked(t *testing.T) {
	forEachImpl(t, func(t *testing.T, k *impl) {
		r := newRand(14)
		plain, _ := quantWeight(t, r, gguf.Q4_0, 24, 128)
		other, _ := quantWeight(t, r, gguf.Q4_0, 32, 128)
		rep := repack(k, other)
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
			w := repack(k, Weight{Type: gguf.Q4_0, Data: g.take(rows * n / 32 * 18), Rows: rows, Cols: n})
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
