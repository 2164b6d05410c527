package refmath

import (
	"math"
	"testing"
)

func TestLogSoftmax(t *testing.T) {
	got := LogSoftmax([]float32{0, 0, float32(math.Log(2)), float32(math.Inf(-1))})
	want := []float64{math.Log(0.25), math.Log(0.25), math.Log(0.5), math.Inf(-1)}
	for i := range want {
		if math.Abs(got[i]-want[i]) > 1e-7 || math.IsInf(want[i], -1) != math.IsInf(got[i], -1) {
			t.Errorf("LogSoftmax[%d] = %v, want %v", i, got[i], want[i])
		}
	}
}
