package gguf

import (
	"math"
	"math/rand/v2"
	"sort"
	"testing"
)

// f16Ref is the value of a half computed in float64 from its fields.
func f16Ref(h uint16) float64 {
	sign := 1.0
	if h&0x8000 != 0 {
		sign = -1
	}
	exp, mant := int(h>>10&0x1f), float64(h&0x3ff)
	switch {
	case exp == 0x1f && mant == 0:
		return sign * math.Inf(1)
	case exp == 0x1f:
		return math.NaN()
	case exp == 0:
		return sign * mant * math.Ldexp(1, -24)
	}
	return sign * (1 + mant/1024) * math.Ldexp(1, exp-15)
}

func TestF16Exhaustive(t *testing.T) {
	for i := range 1 << 16 {
		h := uint16(i)
		f := F16ToF32(h)
		want := f16Ref(h)
		if math.IsNaN(want) {
			if !math.IsNaN(float64(f)) || !math.IsNaN(float64(F16ToF32(F32ToF16(f)))) {
				t.Fatalf("NaN %#04x → %v → %#04x", h, f, F32ToF16(f))
			}
			continue
		}
		if float64(f) != want || math.Signbit(float64(f)) != (h&0x8000 != 0) {
			t.Fatalf("F16ToF32(%#04x) = %v, want %v", h, f, want)
		}
		if back := F32ToF16(f); back != h {
			t.Fatalf("F32ToF16(F16ToF32(%#04x)) = %#04x", h, back)
		}
	}
}

// f16Nearest rounds x to the nearest half by search over the finite
// positive halves (ascending in bit order), ties to the even pattern.
func f16Nearest(x float64) uint16 {
	sign := uint16(0)
	if x < 0 {
		sign, x = 0x8000, -x
	}
	i := sort.Search(0x7c00, func(i int) bool { return f16Ref(uint16(i)) >= x })
	if i == 0x7c00 { // beyond 65504: ties at 65520 go to Inf
		if x >= 65520 {
			return sign | 0x7c00
		}
		return sign | 0x7bff
	}
	if i == 0 || f16Ref(uint16(i)) == x {
		return sign | uint16(i)
	}
	lo, hi := f16Ref(uint16(i-1)), f16Ref(uint16(i))
	if x-lo < hi-x || x-lo == hi-x && (i-1)%2 == 0 {
		return sign | uint16(i-1)
	}
	return sign | uint16(i)
}

func TestF32ToF16Rounding(t *testing.T) {
	cases := []struct {
		f    float64
		want uint16
	}{
		{1, 0x3c00}, {-2, 0xc000}, {0, 0}, {math.Copysign(0, -1), 0x8000},
		{1 + math.Ldexp(1, -11), 0x3c00},   // tie → even
		{1 + 3*math.Ldexp(1, -11), 0x3c02}, // tie → even (up)
		{65504, 0x7bff}, {65519.99, 0x7bff}, {65520, 0x7c00}, {1e10, 0x7c00}, {-1e10, 0xfc00},
		{math.Ldexp(1, -24), 0x0001}, {math.Ldexp(1, -25), 0}, {math.Ldexp(1.0001, -25), 0x0001},
		{3 * math.Ldexp(1, -25), 0x0002}, {1023.5 * math.Ldexp(1, -24), 0x0400}, {math.Ldexp(1, -14), 0x0400},
		{1e-10, 0}, {math.Inf(1), 0x7c00}, {math.Inf(-1), 0xfc00},
	}
	for _, c := range cases {
		if got := F32ToF16(float32(c.f)); got != c.want {
			t.Errorf("F32ToF16(%g) = %#04x, want %#04x", c.f, got, c.want)
		}
	}
	if h := F32ToF16(float32(math.NaN())); h&0x7c00 != 0x7c00 || h&0x3ff == 0 {
		t.Errorf("NaN → %#04x", h)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 20000 {
		f := math.Float32frombits(rng.Uint32())
		if math.IsNaN(float64(f)) || math.IsInf(float64(f), 0) {
			continue
		}
		f = float32(math.Ldexp(float64(f), -int(math.Ilogb(float64(f)))+rng.IntN(40)-26)) // bring into half range
		if got, want := F32ToF16(f), f16Nearest(float64(f)); got != want {
			t.Fatalf("F32ToF16(%g) = %#04x, want %#04x", f, got, want)
		}
	}
}

func TestBF16(t *testing.T) {
	for i := range 1 << 16 {
		h := uint16(i)
		f := BF16ToF32(h)
		if math.IsNaN(float64(f)) {
			if !math.IsNaN(float64(BF16ToF32(F32ToBF16(f)))) {
				t.Fatalf("NaN %#04x not kept", h)
			}
			continue
		}
		if back := F32ToBF16(f); back != h {
			t.Fatalf("F32ToBF16(BF16ToF32(%#04x)) = %#04x", h, back)
		}
	}
	cases := []struct {
		f    float64
		want uint16
	}{
		{1, 0x3f80}, {-5, 0xc0a0},
		{1 + math.Ldexp(1, -8), 0x3f80},   // tie → even
		{1 + 3*math.Ldexp(1, -8), 0x3f82}, // tie → even (up)
		{1 + math.Ldexp(1.5, -8), 0x3f81},
		{math.MaxFloat32, 0x7f80}, // rounds up to Inf
	}
	for _, c := range cases {
		if got := F32ToBF16(float32(c.f)); got != c.want {
			t.Errorf("F32ToBF16(%g) = %#04x, want %#04x", c.f, got, c.want)
		}
	}
	if h := F32ToBF16(math.Float32frombits(0x7f800001)); h&0x7f80 != 0x7f80 || h&0x7f == 0 {
		t.Errorf("signalling NaN → %#04x, want a NaN", h)
	}
}
