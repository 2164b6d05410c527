package synth

import "math"

// Llama3Rope is the "llama3" RoPE frequency scaling.
type Llama3Rope struct {
	Factor, LowFreqFactor, HighFreqFactor float64
	OrigCtx                               int
}

// ropeFreqs returns Llama 3's per-frequency divisors (rope_freqs.weight).
func (r *Llama3Rope) ropeFreqs(headDim int, theta float32) []float32 {
	out := make([]float32, headDim/2)
	lowWave := float64(r.OrigCtx) / r.LowFreqFactor
	highWave := float64(r.OrigCtx) / r.HighFreqFactor
	for i := range out {
		freq := 1 / math.Pow(float64(theta), float64(2*i)/float64(headDim))
		wave := 2 * math.Pi / freq
		switch {
		case wave < highWave:
			out[i] = 1
		case wave > lowWave:
			out[i] = float32(r.Factor)
		default:
			smooth := (float64(r.OrigCtx)/wave - r.LowFreqFactor) / (r.HighFreqFactor - r.LowFreqFactor)
			out[i] = float32(1 / ((1-smooth)/r.Factor + smooth))
		}
	}
	return out
}

// LongRope is Phi-3's LongRoPE ("longrope", formerly "su") scaling: one
// divisor per rotated frequency for contexts up to OrigCtx (Short) and one
// for longer contexts (Long), written as the rope_factors_short.weight and
// rope_factors_long.weight tensors, and the attention factor the converter
// derives from the context lengths (rope.scaling.attn_factor).
type LongRope struct {
	Short, Long []float32 // RopeDim/2 each
	OrigCtx     int       // rope.scaling.original_context_length
}

// AttnFactor is the factor llama.cpp's converter writes for LongRoPE:
// √(1 + ln(ctx/orig) / ln(orig)) when the context is extended, else 1.
func (r *LongRope) AttnFactor(ctx int) float32 {
	scale := float64(ctx) / float64(r.OrigCtx)
	if scale <= 1 {
		return 1
	}
	return float32(math.Sqrt(1 + math.Log(scale)/math.Log(float64(r.OrigCtx))))
}

// phi4MiniLongFactor is rope_scaling.long_factor of Phi-4-mini-instruct's
// config.json (its short_factor is all ones).
var phi4MiniLongFactor = []float32{
	1, 1.118320672, 1.250641126, 1.398617824, 1.564103225, 1.74916897,
	1.956131817, 2.187582649, 2.446418898, 2.735880826, 3.059592084,
	3.421605075, 3.826451687, 4.279200023, 4.785517845, 5.351743533,
	5.984965424, 6.693110555, 7.485043894, 8.370679318, 9.36110372,
	10.4687158, 11.70738129, 13.09260651, 14.64173252, 16.37415215,
	18.31155283, 20.47818807, 22.90118105, 25.61086418, 28.64115884,
	32.03, 32.1, 32.13, 32.23, 32.6, 32.61, 32.64, 32.66, 32.7,
	32.71, 32.93, 32.97, 33.28, 33.49, 33.5, 44.16, 47.77,
}

// longRopeFor returns LongRoPE factors for ropeDim rotated dimensions:
// Phi-4-mini's own for 96, else short factors of one and long factors
// rising geometrically from 1 to 40, the shape of the real ones.
func longRopeFor(ropeDim, origCtx int) *LongRope {
	n := ropeDim / 2
	r := &LongRope{Short: make([]float32, n), Long: make([]float32, n), OrigCtx: origCtx}
	for i := range n {
		r.Short[i] = 1
		r.Long[i] = 1
		if n == len(phi4MiniLongFactor) {
			r.Long[i] = phi4MiniLongFactor[i]
		} else if n > 1 {
			r.Long[i] = float32(math.Pow(40, float64(i)/float64(n-1)))
		}
	}
	return r
}
