package kernels

import (
	"math"
	"testing"
)

// ropeRef rotates one head directly from the formulas, in float64.
func ropeRef(c RopeConfig, x []float32, pos int) []float64 {
	d := c.Dims
	scale, attn := float64(c.FreqScale), float64(c.AttnFactor)
	if scale == 0 {
		scale = 1
	}
	if attn == 0 {
		attn = 1
	}
	base := float64(c.Base)
	var lo, hi float64
	if c.ExtFactor != 0 {
		if c.BetaFast == 0 {
			c.BetaFast, c.BetaSlow = 32, 1
		}
		cd := func(beta float64) float64 {
			return float64(d) * math.Log(float64(c.OrigCtx)/(beta*2*math.Pi)) / (2 * math.Log(base))
		}
		lo = math.Max(0, math.Floor(cd(float64(c.BetaFast))))
		hi = math.Min(float64(d-1), math.Ceil(cd(float64(c.BetaSlow))))
		attn *= 1 + 0.1*math.Log(1/scale)
	}
	out := make([]float64, len(x))
	for i, v := range x {
		out[i] = float64(v)
	}
	for i := range d / 2 {
		extrap := float64(pos) * math.Pow(base, -2*float64(i)/float64(d))
		if c.FreqFactors != nil {
			extrap /= float64(c.FreqFactors[i])
		}
		theta := scale * extrap
		if c.ExtFactor != 0 {
			y := (float64(i) - lo) / math.Max(0.001, hi-lo)
			mix := (1 - math.Min(1, math.Max(0, y))) * float64(c.ExtFactor)
			theta = theta*(1-mix) + extrap*mix
		}
		a, b := 2*i, 2*i+1
		if c.NeoX {
			a, b = i, i+d/2
		}
		cs, sn := math.Cos(theta)*attn, math.Sin(theta)*attn
		x0, x1 := float64(x[a]), float64(x[b])
		out[a] = x0*cs - x1*sn
		out[b] = x0*sn + x1*cs
	}
	return out
}

func TestRope(t *testing.T) {
	ff := make([]float32, 8)
	for i := range ff {
		ff[i] = 1 + float32(i)*0.7
	}
	cases := []struct {
		name string
		c    RopeConfig
	}{
		{"norm", RopeConfig{Dims: 16, Base: 10000}},
		{"neox", RopeConfig{Dims: 16, NeoX: true, Base: 1e6}},
		{"partial dims", RopeConfig{Dims: 8, Base: 10000}},
		{"linear", RopeConfig{Dims: 16, Base: 10000, FreqScale: 0.25}},
		{"yarn", RopeConfig{Dims: 16, NeoX: true, Base: 10000, FreqScale: 0.25, ExtFactor: 1, OrigCtx: 4096}},
		{"yarn attn factor", RopeConfig{Dims: 16, Base: 500000, FreqScale: 0.125, ExtFactor: 1, AttnFactor: 0.9, OrigCtx: 8192, BetaFast: 16, BetaSlow: 2}},
		{"llama3 freq factors", RopeConfig{Dims: 16, Base: 500000, FreqFactors: ff}},
	}
	const headDim, heads = 20, 3
	r := newRand(9)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rp, err := NewRope(tc.c)
			if err != nil {
				t.Fatal(err)
			}
			cos, sin := make([]float32, tc.c.Dims/2), make([]float32, tc.c.Dims/2)
			for _, pos := range []int{0, 1, 7, 100, 4095} {
				x := randVec(r, heads*headDim, 1)
				orig := append([]float32(nil), x...)
				rp.Angles(cos, sin, int32(pos))
				rp.Apply(x, headDim, cos, sin)
				tol := 1e-5 + 3e-7*float64(pos)
				for h := range heads {
					want := ropeRef(tc.c, orig[h*headDim:(h+1)*headDim], pos)
					for i, w := range want {
						got := x[h*headDim+i]
						if i >= tc.c.Dims && got != orig[h*headDim+i] {
							t.Fatalf("pos %d head %d: unrotated dim %d changed", pos, h, i)
						}
						if !closeTo(float64(got), w, tol) {
							t.Fatalf("pos %d head %d dim %d: %v, want %v", pos, h, i, got, w)
						}
					}
				}
			}
		})
	}
}

func TestNewRopeRejects(t *testing.T) {
	cases := []struct {
		name string
		c    RopeConfig
	}{
		{"odd dims", RopeConfig{Dims: 7, Base: 10000}},
		{"zero base", RopeConfig{Dims: 8}},
		{"negative scale", RopeConfig{Dims: 8, Base: 10000, FreqScale: -1}},
		{"factor count", RopeConfig{Dims: 8, Base: 10000, FreqFactors: []float32{1, 2}}},
		{"yarn without context", RopeConfig{Dims: 8, Base: 10000, FreqScale: 0.5, ExtFactor: 1}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if _, err := NewRope(c.c); err == nil {
				t.Fatal("accepted")
			}
		})
	}
}
