package kernels

import (
	"math"
	"testing"
)

func TestRMSNorm(t *testing.T) {
	forEachImpl(t, func(t *testing.T, k *impl) {
		r := newRand(12)
		for _, dim := range []int{1, 7, 64, 576} {
			x := randVec(r, 3*dim, 2)
			w := randVec(r, dim, 1)
			dst := make([]float32, len(x))
			rmsNormRows(k, dst, x, w, 1e-5)
			for row := range 3 {
				xr := x[row*dim : (row+1)*dim]
				var ss float64
				for _, v := range xr {
					ss += float64(v) * float64(v)
				}
				scale := 1 / math.Sqrt(ss/float64(dim)+1e-5)
				for i, v := range xr {
					want := float64(v) * scale * float64(w[i])
					if !closeTo(float64(dst[row*dim+i]), want, 1e-6*math.Abs(want)+1e-7) {
						t.Fatalf("dim %d row %d elem %d: %v, want %v", dim, row, i, dst[row*dim+i], want)
					}
				}
			}
			// in place gives the same bits
			rmsNormRows(k, x, x, w, 1e-5)
			for i := range x {
				if x[i] != dst[i] {
					t.Fatalf("in-place RMSNorm differs at %d", i)
				}
			}
		}
	})
}

func TestSoftmax(t *testing.T) {
	forEachImpl(t, func(t *testing.T, k *impl) {
		cases := []struct {
			name string
			x    []float32
		}{
			{"single", []float32{3}},
			{"equal", []float32{1, 1, 1, 1}},
			{"large", []float32{1000, 999, -1000}},
			{"with -inf", []float32{0, float32(math.Inf(-1)), 1}},
			{"random", randVec(newRand(13), 100, 3)},
		}
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				x := append([]float32(nil), c.x...)
				k.softmax(x)
				mx := math.Inf(-1)
				for _, v := range c.x {
					mx = math.Max(mx, float64(v))
				}
				var sum float64
				for _, v := range c.x {
					sum += math.Exp(float64(v) - mx)
				}
				for i, v := range c.x {
					want := math.Exp(float64(v)-mx) / sum
					if !closeTo(float64(x[i]), want, 1e-6*want+1e-9) {
						t.Fatalf("elem %d: %v, want %v", i, x[i], want)
					}
				}
			})
		}
	})
}

func TestActivations(t *testing.T) {
	forEachImpl(t, func(t *testing.T, k *impl) {
		r := newRand(14)
		gate, up := randVec(r, 300, 4), randVec(r, 300, 1)
		got := make([]float32, 300)
		sig := func(v float32) float64 { return 1 / (1 + math.Exp(-float64(v))) }
		k.silu(got, gate)
		for i, g := range gate {
			want := float64(g) * sig(g)
			if !closeTo(float64(got[i]), want, 1e-6*math.Abs(want)+1e-9) {
				t.Fatalf("silu(%v) = %v, want %v", g, got[i], want)
			}
		}
		k.swiGLU(got, gate, up)
		for i, g := range gate {
			want := float64(g) * sig(g) * float64(up[i])
			if !closeTo(float64(got[i]), want, 1e-6*math.Abs(want)+1e-9) {
				t.Fatalf("swiglu(%v, %v) = %v, want %v", g, up[i], got[i], want)
			}
		}
		a := append([]float32(nil), gate...)
		k.add(a, up)
		for i := range a {
			if a[i] != gate[i]+up[i] {
				t.Fatalf("add elem %d", i)
			}
		}
		a = append(a[:0], gate...)
		k.mul(a, up)
		for i := range a {
			if a[i] != gate[i]*up[i] {
				t.Fatalf("mul elem %d", i)
			}
		}
	})
}

func TestElementwisePanicsOnLength(t *testing.T) {
	cases := map[string]func(){
		"SwiGLU":      func() { SwiGLU(make([]float32, 2), make([]float32, 2), make([]float32, 3), 2) },
		"SwiGLU rows": func() { SwiGLU(make([]float32, 3), make([]float32, 3), make([]float32, 3), 2) },
		"Add":         func() { Add(make([]float32, 2), make([]float32, 1)) },
		"Mul":         func() { Mul(make([]float32, 1), make([]float32, 2)) },
		"SiLU":        func() { SiLU(make([]float32, 1), make([]float32, 2), 1) },
		"SiLU rows":   func() { SiLU(make([]float32, 4), make([]float32, 4), 0) },
		"RMSNorm":     func() { RMSNorm(make([]float32, 5), make([]float32, 5), make([]float32, 2), 1e-5) },
	}
	for name, f := range cases {
		t.Run(name, func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Fatal("no panic")
				}
			}()
			f()
		})
	}
}

// TestGeGLU: the table GELU agrees with the formula in float64 to half
// precision, saturates as ggml's does outside ±10, and multiplies by up.
func TestGeGLU(t *testing.T) {
	gelu := func(x float64) float64 {
		return 0.5 * x * (1 + math.Tanh(math.Sqrt(2/math.Pi)*(x+0.044715*x*x*x)))
	}
	xs := []float32{-12, -10, -9.99, -3, -1, -0.5, -1e-3, 0, 1e-3, 0.5, 1, 2.5, 9.99, 10, 30}
	up := make([]float32, len(xs))
	for i := range up {
		up[i] = float32(i) - 3.5
	}
	dst := make([]float32, len(xs))
	GeGLU(dst, xs, up)
	for i, x := range xs {
		want := gelu(float64(x)) * float64(up[i])
		switch {
		case x <= -10:
			want = 0
		case x >= 10:
			want = float64(x) * float64(up[i])
		}
		if math.Abs(float64(dst[i])-want) > 2e-3*math.Abs(want)+1e-3*math.Abs(float64(up[i])) {
			t.Errorf("gelu(%v)·%v = %v, want %v", x, up[i], dst[i], want)
		}
	}
}
