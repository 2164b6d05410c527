package nn

import (
	"math"

	"pagoda/kernels"
	"pagoda/model"
)

// RopeConfig turns the model's Rope into the kernel's configuration.
// freqFactors comes from rope_freqs.weight (nil if absent); for llama3
// scaling without that tensor it is computed from the scaling parameters.
func RopeConfig(r model.Rope, freqFactors []float32) kernels.RopeConfig {
	c := kernels.RopeConfig{
		Dims: r.Dim, NeoX: r.NeoX, Base: r.FreqBase, FreqScale: 1, AttnFactor: r.AttnFactor,
		BetaFast: r.BetaFast, BetaSlow: r.BetaSlow, OrigCtx: r.OrigCtx, FreqFactors: freqFactors,
	}
	switch r.Scaling {
	case model.RopeScalingLinear:
		if r.Factor > 0 {
			c.FreqScale = 1 / r.Factor
		}
	case model.RopeScalingYaRN:
		if r.Factor > 0 {
			c.FreqScale = 1 / r.Factor
		}
		c.ExtFactor = 1
	case model.RopeScalingLlama3:
		if freqFactors == nil {
			c.FreqFactors = Llama3Factors(r)
		}
	}
	return c
}

// Llama3Factors computes Llama 3.1's per-frequency divisors: 1 for short
// wavelengths, Factor for long ones, and a smooth blend in between.
func Llama3Factors(r model.Rope) []float32 {
	factor := float64(r.Factor)
	if factor <= 0 {
		factor = 1
	}
	lo, hi := float64(r.LowFreqFactor), float64(r.HighFreqFactor)
	orig := float64(r.OrigCtx)
	ff := make([]float32, r.Dim/2)
	for i := range ff {
		freq := math.Pow(float64(r.FreqBase), -2*float64(i)/float64(r.Dim))
		wavelen := 2 * math.Pi / freq
		switch {
		case wavelen < orig/hi:
			ff[i] = 1
		case wavelen > orig/lo:
			ff[i] = float32(factor)
		case hi <= lo:
			ff[i] = float32(factor)
		default:
			smooth := (orig/wavelen - lo) / (hi - lo)
			ff[i] = float32(1 / ((1-smooth)/factor + smooth))
		}
	}
	return ff
}
