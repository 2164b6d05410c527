package kernels

import (
	"math"
	"testing"

	"pagoda/gguf"
)

// TestMatMulN checks that one fused MatMulN equals separate MatMul calls
// bit for bit: every weight type alone, in same-type and mixed-type sets
// (shared and separate activation formats), for n = 0, 1, 3, 9 and 1 to 3
// threads.
func TestMatMulN(t *testing.T) {
	const cols = 512 // a whole number of blocks for every type
	var all []gguf.Type
	for _, tc := range allWeightTypes {
		all = append(all, tc.typ)
	}
	sets := map[string][]gguf.Type{
		"Q4_0x3":      {gguf.Q4_0, gguf.Q4_0, gguf.Q4_0},
		"Q4_1x2":      {gguf.Q4_1, gguf.Q4_1},
		"Q8_0-family": {gguf.Q4_0, gguf.Q8_0, gguf.Q5_0, gguf.Q4_0},
		"Q8_1-family": {gguf.Q4_1, gguf.Q5_1},
		"K-quants":    {gguf.Q4_K, gguf.Q4_K, gguf.Q6_K, gguf.Q2_K, gguf.Q3_K, gguf.Q5_K},
		"mixed":       all,
	}
	for _, typ := range all {
		sets[typ.String()] = []gguf.Type{typ}
	}
	forEachImpl(t, func(t *testing.T, k *impl) {
		r := newRand(31)
		for name, types := range sets {
			t.Run(name, func(t *testing.T) {
				ws := make([]Weight, len(types))
				for i, typ := range types {
					ws[i], _ = quantWeight(t, r, typ, 17+29*i, cols)
				}
				for _, n := range []int{0, 1, 3, 9} {
					x := randVec(r, n*cols, 1)
					want := make([][]float32, len(ws))
					ref := newPool(1, k)
					for i, w := range ws {
						want[i] = make([]float32, n*w.Rows)
						if n > 0 {
							ref.MatMul(want[i], w, x, n)
						}
					}
					ref.Close()
					for threads := 1; threads <= 3; threads++ {
						p := newPool(threads, k)
						outs := make([]MatMulOut, len(ws))
						for i, w := range ws {
							outs[i] = MatMulOut{Dst: make([]float32, n*w.Rows), W: w}
							for e := range outs[i].Dst {
								outs[i].Dst[e] = float32(math.NaN())
							}
						}
						p.MatMulN(outs, x, n)
						p.MatMulN(outs, x, n) // reused scratch
						p.Close()
						for i := range outs {
							for e, v := range outs[i].Dst {
								if math.Float32bits(v) != math.Float32bits(want[i][e]) {
									t.Fatalf("n=%d, %d threads: weight %d (%v) element %d = %v, MatMul %v",
										n, threads, i, ws[i].Type, e, v, want[i][e])
								}
							}
						}
					}
				}
			})
		}
	})
}

func TestMatMulNPanicsOnBadShape(t *testing.T) {
	p := NewPool(2)
	defer p.Close()
	defer func() {
		if recover() == nil {
			t.Fatal("no panic for a weight of another column count")
		}
	}()
	a := Weight{Type: gguf.F32, Data: make([]byte, 4*6), Rows: 2, Cols: 3}
	b := Weight{Type: gguf.F32, Data: make([]byte, 4*8), Rows: 2, Cols: 4}
	p.MatMulN([]MatMulOut{{make([]float32, 2), a}, {make([]float32, 2), b}}, make([]float32, 3), 1)
}

// TestMatMulNSteadyStateAllocs: a warmed-up Pool.MatMulN allocates nothing.
func TestMatMulNSteadyStateAllocs(t *testing.T) {
	p := NewPool(2)
	defer p.Close()
	r := newRand(16)
	wq, _ := quantWeight(t, r, gguf.Q4_1, 64, 256)
	wk, _ := quantWeight(t, r, gguf.Q4_1, 32, 256)
	wv, _ := quantWeight(t, r, gguf.Q6_K, 32, 256)
	x := randVec(r, 4*256, 1)
	outs := []MatMulOut{{make([]float32, 4*64), wq}, {make([]float32, 4*32), wk}, {make([]float32, 4*32), wv}}
	p.MatMulN(outs, x, 4)
	if a := testing.AllocsPerRun(20, func() { p.MatMulN(outs, x, 4) }); a != 0 {
		t.Fatalf("MatMulN allocates %v times per call", a)
	}
}
