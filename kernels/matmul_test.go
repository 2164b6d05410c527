package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"pagoda/gguf"
)

// q8_1Correction returns Σ_b m_b·(s_b − d_b·Σq_b) for a Q4_1/Q5_1 weight
// row: the part of the kernel's result that comes from ggml's rounding of
// s = d·Σq to half precision, which the dequantized reference lacks.
func q8_1Correction(row []byte, typ gguf.Type, a *actRow) float64 {
	if typ != gguf.Q4_1 && typ != gguf.Q5_1 {
		return 0
	}
	var c float64
	for b := range len(a.d) {
		m := float64(F16ToF32(le16(row[b*typ.TypeSize()+2:])))
		var sum int
		for _, q := range a.qs[b*32 : (b+1)*32] {
			sum += int(q)
		}
		c += m * (float64(a.s[b]) - float64(a.d[b])*float64(sum))
	}
	return c
}

// TestMatMulExact checks every weight type's dot products against a
// float64 dot of the dequantized weights (gguf.Dequantize) with the
// converted activations: only float32 accumulation error may remain.
func TestMatMulExact(t *testing.T) {
	forEachImpl(t, func(t *testing.T, k *impl) {
		p := newPool(2, k)
		defer p.Close()
		r := newRand(1)
		for _, tc := range allWeightTypes {
			for _, cols := range tc.cols {
				for _, rows := range []int{1, 3, 17} {
					name := fmt.Sprintf("%v/%dx%d", tc.typ, rows, cols)
					t.Run(name, func(t *testing.T) {
						w, deq := quantWeight(t, r, tc.typ, rows, cols)
						checkMatMulExact(t, p, k, w, deq, randVec(r, 4*cols, 1))
					})
				}
			}
		}
	})
}

func checkMatMulExact(t *testing.T, p *Pool, k *impl, w Weight, deq, x []float32) {
	t.Helper()
	n := len(x) / w.Cols
	buf := make([]float32, n*w.Rows+8)
	for i := range buf {
		buf[i] = float32(math.NaN())
	}
	dst := buf[:n*w.Rows]
	p.MatMul(dst, w, x, n)
	for i, v := range buf[n*w.Rows:] {
		if !math.IsNaN(float64(v)) {
			t.Fatalf("MatMul wrote past dst at %d", i)
		}
	}
	kind := actKindOf(w.Type)
	var act actRows
	act.prepare(k, kind, x, n, w.Cols)
	rb := w.RowBytes()
	for tok := range n {
		a := dequantAct(kind, &act.rows[tok], w.Cols)
		for row := range w.Rows {
			var ref, mag float64
			for j, av := range a {
				p := float64(deq[row*w.Cols+j]) * float64(av)
				ref += p
				mag += math.Abs(p)
			}
			ref += q8_1Correction(w.Data[row*rb:(row+1)*rb], w.Type, &act.rows[tok])
			got := float64(dst[tok*w.Rows+row])
			if !closeTo(got, ref, 4e-6*mag+1e-30) {
				t.Fatalf("token %d row %d: got %v, want %v (magnitude %v)", tok, row, got, ref, mag)
			}
		}
	}
}

// TestMatMulAgainstFloat bounds the total error against the unquantized
// activations: |got − Σ w·x| ≤ Σ |w|·|x − a| (activation quantization) plus
// accumulation error.
func TestMatMulAgainstFloat(t *testing.T) {
	forEachImpl(t, func(t *testing.T, k *impl) {
		forEachWideWeight(t, newRand(2), 9, func(t *testing.T, r *rand.Rand, w Weight, deq []float32) {
			cols := w.Cols
			x := randVec(r, 2*cols, 1)
			dst := make([]float32, 2*w.Rows)
			matMulSerial(k, dst, w, x, 2)
			var act actRows
			act.prepare(k, actKindOf(w.Type), x, 2, cols)
			for tok := range 2 {
				a := dequantAct(act.kind, &act.rows[tok], cols)
				for row := range w.Rows {
					var ref, bound, mag float64
					for j := range cols {
						wv := float64(deq[row*cols+j])
						ref += wv * float64(x[tok*cols+j])
						bound += math.Abs(wv) * math.Abs(float64(x[tok*cols+j])-float64(a[j]))
						mag += math.Abs(wv * float64(x[tok*cols+j]))
					}
					if w.Type == gguf.Q4_1 || w.Type == gguf.Q5_1 {
						bound += mag * 2e-3 // m·s with s rounded to half precision
					}
					got := float64(dst[tok*w.Rows+row])
					if !closeTo(got, ref, bound+1e-5*mag) {
						t.Fatalf("token %d row %d: got %v, want %v ± %v", tok, row, got, ref, bound)
					}
				}
			}
		})
	})
}

// TestMatMulInvariance checks batch and thread invariance: every output
// element is bit-identical whether its row of x is multiplied alone or in
// a batch, on 1, 2, 3 or 5 threads.
func TestMatMulInvariance(t *testing.T) {
	forEachImpl(t, func(t *testing.T, k *impl) {
		forEachWideWeight(t, newRand(3), 37, func(t *testing.T, r *rand.Rand, w Weight, _ []float32) {
			cols := w.Cols
			const n = 6
			x := randVec(r, n*cols, 1)
			want := make([]float32, n*w.Rows)
			for tok := range n {
				matMulSerial(k, want[tok*w.Rows:(tok+1)*w.Rows], w, x[tok*cols:(tok+1)*cols], 1)
			}
			for _, threads := range []int{1, 2, 3, 5} {
				p := newPool(threads, k)
				got := make([]float32, n*w.Rows)
				p.MatMul(got, w, x, n)
				p.Close()
				for i := range got {
					if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
						t.Fatalf("%d threads: element %d = %v, alone %v", threads, i, got[i], want[i])
					}
				}
			}
		})
	})
}

func TestMatMulPanicsOnBadShape(t *testing.T) {
	w := Weight{Type: gguf.F32, Data: make([]byte, 4*6), Rows: 2, Cols: 3}
	cases := []struct {
		name   string
		dst, x []float32
		n      int
	}{
		{"short dst", make([]float32, 1), make([]float32, 3), 1},
		{"short x", make([]float32, 2), make([]float32, 2), 1},
		{"negative n", nil, nil, -1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Fatal("no panic")
				}
			}()
			MatMul(c.dst, w, c.x, c.n)
		})
	}
}

func TestWeightValidate(t *testing.T) {
	cases := []struct {
		name string
		w    Weight
		ok   bool
	}{
		{"ok q4_1", Weight{Type: gguf.Q4_1, Data: make([]byte, 2*40), Rows: 2, Cols: 64}, true},
		{"ok f32", Weight{Type: gguf.F32, Data: make([]byte, 12), Rows: 1, Cols: 3}, true},
		{"partial block", Weight{Type: gguf.Q4_0, Data: make([]byte, 18), Rows: 1, Cols: 16}, false},
		{"short data", Weight{Type: gguf.Q8_0, Data: make([]byte, 33), Rows: 1, Cols: 32}, false},
		{"unsupported", Weight{Type: gguf.Q8_K, Data: make([]byte, 292), Rows: 1, Cols: 256}, false},
		{"zero rows", Weight{Type: gguf.F16, Rows: 0, Cols: 4}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if err := c.w.Validate(); (err == nil) != c.ok {
				t.Fatalf("Validate() = %v, want ok=%v", err, c.ok)
			}
		})
	}
}

// TestDequantizeRow compares the embedding lookup of each row with
// gguf.Dequantize of the whole matrix, bit for bit.
func TestDequantizeRow(t *testing.T) {
	forEachWideWeight(t, newRand(4), 5, func(t *testing.T, _ *rand.Rand, w Weight, deq []float32) {
		cols := w.Cols
		got := make([]float32, cols)
		for row := range w.Rows {
			DequantizeRow(got, w, row)
			for j, v := range got {
				want := deq[row*cols+j]
				if !sameFloat(v, want) {
					t.Fatalf("row %d col %d: %v, want %v", row, j, v, want)
				}
			}
		}
	})
}
