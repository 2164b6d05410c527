package gguf

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"math/rand/v2"
	"testing"
)

// ramp returns n values start, start+step, ….
func ramp(n int, start, step float32) []float32 {
	x := make([]float32, n)
	for i := range x {
		x[i] = start + float32(i)*step
	}
	return x
}

// TestQuantizeReference checks the ggml reference rounding of the 4- and
// 5-bit types on blocks whose codes are worked out by hand.
func TestQuantizeReference(t *testing.T) {
	t.Run("Q4_0", func(t *testing.T) {
		// x = j-16: max magnitude -16 at j=0, d = -16/-8 = 2, code =
		// min(15, trunc((j-16)/2 + 8.5)) = min(15, (j+1)/2).
		got, _ := Quantize(Q4_0, ramp(32, -16, 1))
		code := func(j int) byte { return byte(min(15, (j+1)/2)) }
		want := block(uint16(h2), seq(16, func(j int) byte { return code(j) | code(j+16)<<4 }))
		if !bytes.Equal(got, want) {
			t.Errorf("got % x\nwant % x", got, want)
		}
	})
	t.Run("Q4_1", func(t *testing.T) {
		// x = j%16 - 3: min -3, max 12, d = 1, code = j%16.
		x := make([]float32, 32)
		for j := range x {
			x[j] = float32(j%16 - 3)
		}
		got, _ := Quantize(Q4_1, x)
		want := block(uint16(h1), uint16(0xc200), seq(16, func(j int) byte { return byte(j | j<<4) })) // m = -3
		if !bytes.Equal(got, want) {
			t.Errorf("got % x\nwant % x", got, want)
		}
	})
	t.Run("Q5_0", func(t *testing.T) {
		// x = j-16: the signed max is -16, d = -16/-16 = 1, code =
		// min(31, trunc(j-16+16.5)) = j; the 5th bit is set for j >= 16.
		got, _ := Quantize(Q5_0, ramp(32, -16, 1))
		want := block(uint16(h1), uint32(0xffff0000), seq(16, func(j int) byte { return byte(j | j<<4) }))
		if !bytes.Equal(got, want) {
			t.Errorf("got % x\nwant % x", got, want)
		}
	})
}

// TestQuantizeReference8 checks the 8-bit reference quantizers.
func TestQuantizeReference8(t *testing.T) {
	t.Run("Q8_0", func(t *testing.T) {
		// x = j-16: d = 16/127, q = roundf((j-16)·127/16), ties away from zero.
		got, _ := Quantize(Q8_0, ramp(32, -16, 1))
		for j, want := range map[int]int8{0: -127, 16: 0, 31: 119, 8: -64, 24: 64, 1: -119} {
			if q := int8(got[2+j]); q != want {
				t.Errorf("q[%d] = %d, want %d", j, q, want)
			}
		}
		if d := f16At(got, 0); !near(float64(d), 16.0/127, 16.0/127/1024) {
			t.Errorf("d = %v", d)
		}
	})
	t.Run("Q8_1", func(t *testing.T) {
		got, _ := Quantize(Q8_1, ramp(32, -16, 1))
		sum := 0
		for _, q := range got[4:36] {
			sum += int(int8(q))
		}
		if s, want := f16At(got, 2), float32(sum)*f16At(got, 0); !near(float64(s), float64(want), math.Abs(float64(want))/1024) {
			t.Errorf("s = %v, want d·Σq = %v", s, want)
		}
	})
	t.Run("Q8_K", func(t *testing.T) {
		// x = j-128: max magnitude -128, iscale = 127/128, q = min(127, nearest(iscale·x))
		// with ties to even (x = -64 gives -63.5 → -64).
		got, _ := Quantize(Q8_K, ramp(256, -128, 1))
		if d := math.Float32frombits(binary.LittleEndian.Uint32(got)); d != 128.0/127 {
			t.Errorf("d = %v, want 128/127", d)
		}
		for j, want := range map[int]int8{0: -127, 128: 0, 255: 126, 64: -64, 65: -63} {
			if q := int8(got[4+j]); q != want {
				t.Errorf("q[%d] = %d, want %d", j, q, want)
			}
		}
		for k := range 16 {
			sum := 0
			for _, q := range got[4+16*k : 4+16*k+16] {
				sum += int(int8(q))
			}
			if bs := int16(binary.LittleEndian.Uint16(got[260+2*k:])); int(bs) != sum {
				t.Errorf("bsums[%d] = %d, want %d", k, bs, sum)
			}
		}
	})
}

// quantBounds holds the largest error a round trip may make, as a fraction of
// the block's largest magnitude, and the largest relative RMS error on
// Gaussian data.
var quantBounds = map[Type]struct{ maxErr, rmse float64 }{
	// Simple types: half a step (a full step at the clamped end for the
	// symmetric types), plus the rounding of d (and m) to half precision.
	Q8_0: {1.0/254 + 1.0/2048, 0.006},
	Q8_1: {1.0/254 + 1.0/2048, 0.006},
	Q8_K: {1.0/254 + 1e-6, 0.0075},
	Q4_0: {1.0/8 + 1.0/1024, 0.095},
	Q5_0: {1.0/16 + 1.0/1024, 0.047},
	Q4_1: {1.0/15 + 1.0/512, 0.085},
	Q5_1: {1.0/31 + 1.0/512, 0.042},
	// K-quants: least-squares fits trade the extremes for the mean error, and
	// sub-block scales are themselves quantized against the largest one.
	Q2_K: {0.5, 0.30},
	Q3_K: {0.30, 0.16},
	Q4_K: {0.14, 0.08},
	Q5_K: {0.07, 0.04},
	Q6_K: {0.035, 0.02},
}

// testData makes n values of a distribution, scaled to magnitudes where the
// half-precision block scales are normal numbers.
func testData(rng *rand.Rand, dist string, n int) []float32 {
	x := make([]float32, n)
	for i := range x {
		switch dist {
		case "normal":
			x[i] = float32(rng.NormFloat64() * 0.05)
		case "uniform":
			x[i] = float32(rng.Float64()*2 - 1)
		case "outliers":
			x[i] = float32(rng.NormFloat64() * 0.02)
			if rng.IntN(50) == 0 {
				x[i] *= 20
			}
		case "positive":
			x[i] = float32(rng.Float64()*3 + 1)
		case "negative":
			x[i] = -float32(rng.Float64() * 100)
		case "sparse":
			if rng.IntN(10) == 0 {
				x[i] = float32(rng.NormFloat64())
			}
		}
	}
	return x
}

func TestQuantizeRoundTrip(t *testing.T) {
	for typ, bound := range quantBounds {
		for _, dist := range []string{"normal", "uniform", "outliers", "positive", "negative", "sparse"} {
			t.Run(typ.String()+"/"+dist, func(t *testing.T) {
				rng := rand.New(rand.NewPCG(uint64(typ), uint64(len(dist))))
				x := testData(rng, dist, 256*16)
				_, y := mustRoundTrip(t, typ, x)
				checkQuantError(t, typ, x, y, bound.maxErr)
				if dist == "normal" {
					var se, sx float64
					for i := range x {
						se += float64(x[i]-y[i]) * float64(x[i]-y[i])
						sx += float64(x[i]) * float64(x[i])
					}
					if rel := math.Sqrt(se / sx); rel > bound.rmse {
						t.Errorf("relative RMS error %.4f > %.4f", rel, bound.rmse)
					}
				}
			})
		}
	}
}

// checkQuantError checks |x−y| ≤ bound·(largest |x| of the block).
func checkQuantError(t *testing.T, typ Type, x, y []float32, bound float64) {
	t.Helper()
	bs := typ.BlockSize()
	for b := 0; b < len(x); b += bs {
		var amax float64
		for _, v := range x[b : b+bs] {
			amax = math.Max(amax, math.Abs(float64(v)))
		}
		for i := b; i < b+bs; i++ {
			if e := math.Abs(float64(x[i] - y[i])); e > bound*amax+1e-30 {
				t.Fatalf("element %d: %v → %v, error %.3g > %.3g × block max %.3g", i, x[i], y[i], e, bound, amax)
			}
		}
	}
}

func TestQuantizeSpecialBlocks(t *testing.T) {
	blocks := map[string][]float32{
		"zeros":    make([]float32, 256),
		"constant": ramp(256, 0.3, 0),
		"negative": ramp(256, -0.7, 0),
		"spike":    append(make([]float32, 255), 5),
		"ramp":     ramp(256, -1, 1.0/128),
	}
	for typ, bound := range quantBounds {
		for name, x := range blocks {
			t.Run(typ.String()+"/"+name, func(t *testing.T) {
				q, y := mustRoundTrip(t, typ, x)
				checkQuantError(t, typ, x, y, bound.maxErr)
				again, _ := Quantize(typ, x)
				if !bytes.Equal(q, again) {
					t.Error("quantization is not deterministic")
				}
			})
		}
	}
}

func TestQuantizeFloat(t *testing.T) {
	x := []float32{0, -1.5, 3.14159, 1e-3, 65504, -1e-7}
	for _, c := range []struct {
		t   Type
		rel float64
	}{{F32, 0}, {F64, 0}, {F16, 1.0 / 2048}, {BF16, 1.0 / 256}} {
		_, y := mustRoundTrip(t, c.t, x)
		for i := range x {
			tol := c.rel * math.Abs(float64(x[i]))
			if c.t == F16 {
				tol += math.Ldexp(1, -25) // subnormal spacing
			}
			if !near(float64(y[i]), float64(x[i]), tol) {
				t.Errorf("%s: %v → %v", c.t, x[i], y[i])
			}
		}
	}
}

func TestQuantizeErrors(t *testing.T) {
	cases := []struct {
		name     string
		t        Type
		x        []float32
		sentinel error
	}{
		{"unsupported I8", I8, ramp(4, 0, 1), ErrBadType},
		{"unknown type", Type(99), ramp(4, 0, 1), ErrBadType},
		{"partial block", Q4_0, ramp(48, 0, 1), ErrBadLength},
		{"partial K block", Q4_K, ramp(128, 0, 1), ErrBadLength},
		{"NaN", Q8_0, append(ramp(31, 0, 1), float32(math.NaN())), ErrNotFinite},
		{"Inf", Q6_K, append(ramp(255, 0, 1), float32(math.Inf(-1))), ErrNotFinite},
		{"Q4_0 scale overflow", Q4_0, ramp(32, 1e6, 0), ErrNotFinite},
		{"Q8_0 scale overflow", Q8_0, ramp(32, 1e7, 0), ErrNotFinite},
		{"Q4_K scale overflow", Q4_K, ramp(256, 0, 1e7), ErrNotFinite},
		{"Q6_K scale overflow", Q6_K, ramp(256, 0, 1e7), ErrNotFinite},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if _, err := Quantize(c.t, c.x); !errors.Is(err, c.sentinel) {
				t.Errorf("got %v, want %v", err, c.sentinel)
			}
		})
	}
}
