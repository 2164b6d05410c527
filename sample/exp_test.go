package sample

import (
	"math"
	"testing"

	"pagoda/internal/refmath"
)

func TestExpWeightsAccuracy(t *testing.T) {
	// y from −87 to 0 in steps that hit every reduction interval many times.
	const n = 200000
	x := make([]float32, n)
	for i := range x {
		x[i] = -87 * float32(i) / (n - 1)
	}
	w := make([]float32, n)
	expWeights(w, x, 0, 1, -math.MaxFloat32)
	worst := 0.0
	for i, v := range x {
		want := math.Exp(float64(v))
		worst = math.Max(worst, math.Abs(float64(w[i])-want)/want)
	}
	if worst > 2e-7 {
		t.Fatalf("worst relative error %g, want ≤ 2e-7", worst)
	}
	if w[0] != 1 {
		t.Fatalf("e^0 = %v, want exactly 1", w[0])
	}
}

func TestExpWeightsEdges(t *testing.T) {
	inf := float32(math.Inf(-1))
	tests := []struct {
		name     string
		x        []float32
		m, s, fl float32
		want     []float64 // 0 = exactly 0
		relTol   float64
	}{
		{"max and scale", []float32{2, 1, 0}, 2, 0.5, -math.MaxFloat32,
			[]float64{1, math.Exp(-0.5), math.Exp(-1)}, 2e-7},
		{"floor zeroes below, keeps equal", []float32{3, 2, 1, 2.5}, 3, 1, 2,
			[]float64{1, math.Exp(-1), 0, math.Exp(-0.5)}, 2e-7},
		{"-Inf is zero", []float32{0, inf, -1}, 0, 1, -math.MaxFloat32,
			[]float64{1, 0, math.Exp(-1)}, 2e-7},
		{"far below clamps to e^-87", []float32{0, -1000}, 0, 1, -math.MaxFloat32,
			[]float64{1, math.Exp(-87)}, 1e-6},
		{"huge scale", []float32{0, -1}, 0, 1e6, -math.MaxFloat32,
			[]float64{1, math.Exp(-87)}, 1e-6},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := make([]float32, len(tt.x))
			expWeights(w, tt.x, tt.m, tt.s, tt.fl)
			for i, want := range tt.want {
				if want == 0 {
					if w[i] != 0 {
						t.Fatalf("w[%d] = %v, want 0", i, w[i])
					}
					continue
				}
				if math.Abs(float64(w[i])-want) > tt.relTol*want {
					t.Fatalf("w[%d] = %v, want %v", i, w[i], want)
				}
			}
		})
	}
}

func TestSum32(t *testing.T) {
	for _, n := range []int{0, 1, 3, 63, 64, 65, 1000, 150000} {
		w := make([]float32, n)
		ref := 0.0
		for i := range w {
			w[i] = float32(math.Exp(-float64(i%97) / 7))
			ref += float64(w[i])
		}
		if got := sum32(w); math.Abs(got-ref) > 2e-7*ref {
			t.Errorf("n=%d: sum32 = %v, want %v", n, got, ref)
		}
	}
}

func TestLogSumExp(t *testing.T) {
	inf := float32(math.Inf(-1))
	tests := []struct {
		name string
		x    []float32
		want float64
	}{
		{"one", []float32{3}, 3},
		{"two equal", []float32{1, 1}, 1 + math.Ln2},
		{"large", []float32{1000, 1000, 1000, 1000}, 1000 + math.Log(4)},
		{"with -Inf", []float32{0, inf, 0}, math.Ln2},
		{"all -Inf", []float32{inf, inf}, math.Inf(-1)},
		{"+Inf", []float32{0, float32(math.Inf(1))}, math.Inf(1)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := logSumExp(tt.x)
			if math.IsInf(tt.want, 0) {
				if got != tt.want {
					t.Fatalf("logSumExp = %v, want %v", got, tt.want)
				}
				return
			}
			if !closeTo(got, tt.want, 1e-7) {
				t.Fatalf("logSumExp = %v, want %v", got, tt.want)
			}
		})
	}
	t.Run("random vocabulary", func(t *testing.T) {
		x := randLogits(6, 49152, 3)
		ref := refmath.LogSoftmax(x)
		// log-softmax of x[0] = x[0] − lse.
		if got := float64(x[0]) - logSumExp(x); !closeTo(got, ref[0], 1e-7) {
			t.Fatalf("x[0] − logSumExp = %v, want %v", got, ref[0])
		}
	})
}
