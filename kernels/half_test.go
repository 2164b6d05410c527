package kernels

import (
	"math"
	"testing"

	"pagoda/gguf"
)

// TestF16RoundTrip: every non-NaN half survives f16 → f32 → f16.
func TestF16RoundTrip(t *testing.T) {
	for h := range 1 << 16 {
		f := F16ToF32(uint16(h))
		if math.IsNaN(float64(f)) {
			if !math.IsNaN(float64(F16ToF32(F32ToF16(f)))) {
				t.Fatalf("NaN %#04x lost", h)
			}
			continue
		}
		if got := F32ToF16(f); got != uint16(h) {
			t.Fatalf("%#04x → %v → %#04x", h, f, got)
		}
	}
}

// TestF16Rounding checks ties to even and overflow at the edges.
func TestF16Rounding(t *testing.T) {
	cases := []struct {
		name string
		in   float32
		want uint16
	}{
		{"one", 1, 0x3c00},
		{"tie down to even", 1 + 1.0/2048, 0x3c00},
		{"tie up to even", 1 + 3.0/2048, 0x3c02},
		{"above tie", 1 + 1.0/2048 + 1.0/(1<<20), 0x3c01},
		{"max half", 65504, 0x7bff},
		{"rounds to inf", 65520, 0x7c00},
		{"just below inf tie", 65519.996, 0x7bff},
		{"min subnormal", 1.0 / (1 << 24), 0x0001},
		{"half of min subnormal ties to zero", 1.0 / (1 << 25), 0x0000},
		{"above half of min subnormal", 1.0/(1<<25) + 1.0/(1<<40), 0x0001},
		{"subnormal tie to even", 3.0 / (1 << 25), 0x0002},
		{"largest subnormal rounds to min normal", 1.0/(1<<14) - 1.0/(1<<26), 0x0400},
		{"negative", -2, 0xc000},
		{"negative zero", float32(math.Copysign(0, -1)), 0x8000},
		{"inf", float32(math.Inf(1)), 0x7c00},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := F32ToF16(c.in); got != c.want {
				t.Fatalf("F32ToF16(%v) = %#04x, want %#04x", c.in, got, c.want)
			}
		})
	}
}

// TestHalfMatchesGGUF compares the conversions with the gguf package's on
// random and edge values.
func TestHalfMatchesGGUF(t *testing.T) {
	r := newRand(8)
	for i := range 200000 {
		var f float32
		switch i % 3 {
		case 0:
			f = math.Float32frombits(r.Uint32())
		case 1:
			f = float32(r.NormFloat64() * 1e-5)
		default:
			f = float32(r.NormFloat64() * 3e4)
		}
		if math.IsNaN(float64(f)) {
			continue
		}
		if a, b := F32ToF16(f), gguf.F32ToF16(f); a != b {
			t.Fatalf("F32ToF16(%v) = %#04x, gguf %#04x", f, a, b)
		}
		if a, b := F32ToBF16(f), gguf.F32ToBF16(f); a != b {
			t.Fatalf("F32ToBF16(%v) = %#04x, gguf %#04x", f, a, b)
		}
	}
	for h := range 1 << 16 {
		a, b := F16ToF32(uint16(h)), gguf.F16ToF32(uint16(h))
		if math.Float32bits(a) != math.Float32bits(b) && !(math.IsNaN(float64(a)) && math.IsNaN(float64(b))) {
			t.Fatalf("F16ToF32(%#04x) = %v, gguf %v", h, a, b)
		}
	}
}

func TestBF16Rounding(t *testing.T) {
	cases := []struct {
		in   float32
		want uint16
	}{
		{1, 0x3f80},
		{1 + 1.0/256, 0x3f80}, // tie to even
		{1 + 3.0/256, 0x3f82}, // tie to even, upwards
		{-3.5, 0xc060},
	}
	for _, c := range cases {
		if got := F32ToBF16(c.in); got != c.want {
			t.Errorf("F32ToBF16(%v) = %#04x, want %#04x", c.in, got, c.want)
		}
		if got := BF16ToF32(c.want); got != roundBF16(c.in) {
			t.Errorf("BF16ToF32(%#04x) = %v, want %v", c.want, got, roundBF16(c.in))
		}
	}
}
