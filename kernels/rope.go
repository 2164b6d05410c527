package kernels

import (
	"fmt"
	"math"
)

// RopeConfig configures rotary position embeddings as ggml's rope_ext.
type RopeConfig struct {
	Dims int     // rotated dimensions per head: even, ≤ head dim
	NeoX bool    // rotate pairs (i, i+Dims/2) instead of (2i, 2i+1)
	Base float32 // frequency base θ
	// FreqScale multiplies every angle: 1/factor for linear and YaRN
	// scaling, 1 (or 0, meaning 1) otherwise.
	FreqScale float32
	// ExtFactor mixes extrapolated angles back in on the YaRN ramp: 1 for
	// YaRN, 0 otherwise.
	ExtFactor float32
	// AttnFactor scales cos and sin (0 means 1). With ExtFactor ≠ 0 it is
	// further multiplied by 1 + 0.1·ln(1/FreqScale), as ggml.
	AttnFactor float32
	// BetaFast, BetaSlow and OrigCtx place the YaRN ramp (defaults 32, 1).
	BetaFast, BetaSlow float32
	OrigCtx            int
	// FreqFactors, if set, has Dims/2 divisors of the angles, one per
	// frequency (llama3 scaling's rope_freqs.weight).
	FreqFactors []float32
}

// Rope computes and applies rotary embeddings for one configuration.
// Angles follow ggml's rope cache exactly: θ starts at the position and is
// multiplied by base^(−2/Dims) in float32 once per pair.
type Rope struct {
	c          RopeConfig
	thetaScale float32
	mscale     float32
	corr       [2]float32 // YaRN ramp start and end, in pair indices
}

// NewRope validates c and fills its defaults.
func NewRope(c RopeConfig) (*Rope, error) {
	if c.Dims <= 0 || c.Dims%2 != 0 {
		return nil, fmt.Errorf("kernels: rope dims %d must be positive and even", c.Dims)
	}
	if !(c.Base > 0) {
		return nil, fmt.Errorf("kernels: rope base %v must be positive", c.Base)
	}
	if c.FreqFactors != nil && len(c.FreqFactors) != c.Dims/2 {
		return nil, fmt.Errorf("kernels: rope has %d frequency factors, want %d", len(c.FreqFactors), c.Dims/2)
	}
	if c.FreqScale == 0 {
		c.FreqScale = 1
	}
	if !(c.FreqScale > 0) {
		return nil, fmt.Errorf("kernels: rope freq scale %v must be positive", c.FreqScale)
	}
	if c.AttnFactor == 0 {
		c.AttnFactor = 1
	}
	if c.BetaFast == 0 {
		c.BetaFast = 32
	}
	if c.BetaSlow == 0 {
		c.BetaSlow = 1
	}
	r := &Rope{c: c, mscale: c.AttnFactor}
	r.thetaScale = powf(c.Base, -2/float32(c.Dims))
	if c.ExtFactor != 0 {
		if c.OrigCtx <= 0 {
			return nil, fmt.Errorf("kernels: YaRN rope needs the original context length, got %d", c.OrigCtx)
		}
		r.mscale *= 1 + 0.1*log32(1/c.FreqScale)
		lo := float32(math.Floor(float64(corrDim(c.Dims, c.OrigCtx, c.BetaFast, c.Base))))
		hi := float32(math.Ceil(float64(corrDim(c.Dims, c.OrigCtx, c.BetaSlow, c.Base))))
		r.corr = [2]float32{max(0, lo), min(float32(c.Dims-1), hi)}
	}
	return r, nil
}

// corrDim is the pair index at which a frequency rotates nRot times over
// the original context (ggml_rope_yarn_corr_dim).
func corrDim(dims, origCtx int, nRot, base float32) float32 {
	return float32(dims) * log32(float32(origCtx)/(nRot*2*math.Pi)) / (2 * log32(base))
}

func log32(v float32) float32 { return float32(math.Log(float64(v))) }

// Dims is the number of rotated dimensions per head.
func (r *Rope) Dims() int { return r.c.Dims }

// Angles fills cos and sin (Dims/2 each) with the scaled rotation of every
// pair at position pos.
//
// bit-exact contract (ggml_rope_cache_init): θ₀ = float32(pos), θᵢ₊₁ =
// θᵢ·thetaScale in float32 with thetaScale = powf(base, −2/Dims);
// t = FreqScale·(θᵢ/FreqFactors[i]); cos = cosf(t)·mscale, sin =
// sinf(t)·mscale with glibc's sincosf (see libm.go). Checked against
// llama.cpp for plain, linear and frequency-factor RoPE; YaRN's ramp mixing
// follows ggml's formula but its fused-multiply-add contraction is not
// reproduced.
func (r *Rope) Angles(cos, sin []float32, pos int32) {
	half := r.c.Dims / 2
	cos, sin = cos[:half], sin[:half]
	theta := float32(pos)
	for i := range half {
		extrap := theta
		if r.c.FreqFactors != nil {
			extrap = theta / r.c.FreqFactors[i]
		}
		t := r.c.FreqScale * extrap
		ms := r.mscale
		if r.c.ExtFactor != 0 {
			y := (float32(i) - r.corr[0]) / max(0.001, r.corr[1]-r.corr[0])
			mix := (1 - min(1, max(0, y))) * r.c.ExtFactor
			t = t*(1-mix) + extrap*mix
		}
		sn, cs := sincosf(t)
		cos[i] = cs * ms
		sin[i] = sn * ms
		theta *= r.thetaScale
	}
}

// Apply rotates the first Dims values of every head of x (heads of headDim
// values, laid end to end) in place by the angles from Angles.
//
// bit-exact contract (ggml's rotate_pairs as GCC contracts it): x0' =
// fma(x0, cos, −(x1·sin)), x1' = fma(x0, sin, x1·cos), the inner products
// rounded to float32.
func (r *Rope) Apply(x []float32, headDim int, cos, sin []float32) {
	d := r.c.Dims
	if headDim < d || len(x)%headDim != 0 {
		panic(fmt.Sprintf("kernels: rope of %d dims on %d values of head dim %d", d, len(x), headDim))
	}
	half := d / 2
	cos, sin = cos[:half], sin[:half]
	for h := 0; h < len(x); h += headDim {
		def.rope(x[h:h+d], r.c.NeoX, cos, sin)
	}
}

// ropeGeneric rotates the pairs of one head's v (2·len(cos) values):
// (v[i], v[i+half]) for NeoX, else (v[2i], v[2i+1]), by (cos[i], sin[i]),
// with Apply's contract.
func ropeGeneric(v []float32, neox bool, cos, sin []float32) {
	ropeFrom(v, neox, cos, sin, 0)
}

// ropeFrom is ropeGeneric on the pairs from the i0-th on (the tails of the
// vector kernels).
func ropeFrom(v []float32, neox bool, cos, sin []float32, i0 int) {
	half := len(cos)
	v, sin = v[:2*half], sin[:half]
	for i := i0; i < half; i++ {
		a, b := 2*i, 2*i+1
		if neox {
			a, b = i, i+half
		}
		x0, x1 := v[a], v[b]
		v[a] = fma32(x0, cos[i], -float32(x1*sin[i]))
		v[b] = fma32(x0, sin[i], float32(x1*cos[i]))
	}
}
