// Package refmath holds float64 reference versions of the float32 math that
// tests compare pagoda's results with.
package refmath

import "math"

// LogSoftmax is the float64 log-softmax of x: each value minus the maximum
// minus the log of the sum of the shifted exponentials.
func LogSoftmax(x []float32) []float64 {
	mx := math.Inf(-1)
	for _, v := range x {
		mx = math.Max(mx, float64(v))
	}
	var sum float64
	for _, v := range x {
		sum += math.Exp(float64(v) - mx)
	}
	out := make([]float64, len(x))
	for i, v := range x {
		out[i] = float64(v) - mx - math.Log(sum)
	}
	return out
}
