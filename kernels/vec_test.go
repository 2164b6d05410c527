package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// Equality tests of the accelerated float vector kernels against the
// generic ones: every length 0..67 and some large ones, slices starting at
// misaligned offsets, NaN guards around outputs, and inputs with special
// values (zeros of both signs, infinities, NaN, subnormals, values that
// saturate exp).

// vecLens are the lengths every vector kernel is checked at.
var vecLens = func() []int {
	var l []int
	for n := range 68 {
		l = append(l, n)
	}
	return append(l, 127, 128, 129, 576, 1000, 1536+13)
}()

// specialVec returns n values: mostly normal with the given scale, with
// specials mixed in when special is set.
func specialVec(r *rand.Rand, n int, scale float64, special bool) []float32 {
	v := randVec(r, n, scale)
	if !special {
		return v
	}
	sp := []float32{0, float32(math.Copysign(0, -1)), float32(math.Inf(1)), float32(math.Inf(-1)),
		float32(math.NaN()), 1e-42, -3e-40, 1e30, -1e30, 88.7, -87.4, 190, -200}
	for i := range v {
		if r.IntN(6) == 0 {
			v[i] = sp[r.IntN(len(sp))]
		}
	}
	return v
}

// halves returns n half-precision values of the given scale.
func halves(r *rand.Rand, n int, scale float64, special bool) []uint16 {
	v := specialVec(r, n, scale, special)
	h := make([]uint16, n)
	for i, x := range v {
		h[i] = F32ToF16(x)
	}
	return h
}

// guarded returns a copy of v at offset off of a buffer with NaN guards
// before and after it, and a check that the guards are intact.
func guarded[T float32 | uint16](v []T, off int, nan T) ([]T, func(t *testing.T)) {
	const g = 4
	buf := make([]T, off+len(v)+2*g)
	for i := range buf {
		buf[i] = nan
	}
	s := buf[off+g : off+g+len(v)]
	copy(s, v)
	return s, func(t *testing.T) {
		t.Helper()
		for i := range buf[:off+g] {
			if !isNaNBits(buf[i], nan) {
				t.Fatalf("wrote before the output at %d", i-off-g)
			}
		}
		for i := off + g + len(v); i < len(buf); i++ {
			if !isNaNBits(buf[i], nan) {
				t.Fatalf("wrote after the output at %d", i-off-g-len(v))
			}
		}
	}
}

func isNaNBits[T float32 | uint16](v, nan T) bool { return v == nan || v != v }

var nanF32 = float32(math.NaN())

const nanF16 = uint16(0x7e01)

// sameF16 compares halves bit for bit, NaNs equal.
func sameF16(a, b uint16) bool {
	return a == b || a&0x7c00 == 0x7c00 && a&0x3ff != 0 && b&0x7c00 == 0x7c00 && b&0x3ff != 0
}

func checkSameF32(t *testing.T, what string, got, want []float32) {
	t.Helper()
	for i := range want {
		if !sameFloat(got[i], want[i]) {
			t.Fatalf("%s[%d] = %v (%#x), generic %v (%#x)", what, i, got[i], math.Float32bits(got[i]), want[i], math.Float32bits(want[i]))
		}
	}
}

func checkSameF16(t *testing.T, what string, got, want []uint16) {
	t.Helper()
	for i := range want {
		if !sameF16(got[i], want[i]) {
			t.Fatalf("%s[%d] = %#x, generic %#x", what, i, got[i], want[i])
		}
	}
}

// vecCase runs one kernel on k and on the generic table with the same
// inputs and compares the outputs.
type vecCase struct {
	name string
	run  func(t *testing.T, k *impl, r *rand.Rand, n, off int, special bool)
}

// sameOut runs op on a copy of dst with the generic table, then on a
// guarded copy at offset off with k, checks k wrote only its output and
// matched the generic result bit for bit.
func sameOut[T float32 | uint16](t *testing.T, k *impl, what string, dst []T, off int, op func(k *impl, d []T)) {
	t.Helper()
	want := append([]T(nil), dst...)
	op(generic, want)
	var nan T
	switch p := any(&nan).(type) {
	case *float32:
		*p = nanF32
	case *uint16:
		*p = nanF16
	}
	got, ok := guarded(dst, off, nan)
	op(k, got)
	ok(t)
	switch g := any(got).(type) {
	case []float32:
		checkSameF32(t, what, g, any(want).([]float32))
	case []uint16:
		checkSameF16(t, what, g, any(want).([]uint16))
	}
}

var vecCases = []vecCase{
	{"axpyF32", func(t *testing.T, k *impl, r *rand.Rand, n, off int, sp bool) {
		dst, x, a := specialVec(r, n, 1, sp), specialVec(r, n, 1, sp), float32(r.NormFloat64())
		sameOut(t, k, "dst", dst, off, func(k *impl, d []float32) { k.axpyF32(d, a, x) })
	}},
	{"axpyF16", func(t *testing.T, k *impl, r *rand.Rand, n, off int, sp bool) {
		dst, x, a := specialVec(r, n, 1, sp), halves(r, n, 1, sp), float32(r.NormFloat64())
		sameOut(t, k, "dst", dst, off, func(k *impl, d []float32) { k.axpyF16(d, a, x) })
	}},
	{"axpyBF16", func(t *testing.T, k *impl, r *rand.Rand, n, off int, sp bool) {
		dst, a := specialVec(r, n, 1, sp), float32(r.NormFloat64())
		x := make([]uint16, n)
		for i, v := range specialVec(r, n, 1, sp) {
			x[i] = F32ToBF16(v)
		}
		sameOut(t, k, "dst", dst, off, func(k *impl, d []float32) { k.axpyB16(d, a, x) })
	}},
	{"madF16", func(t *testing.T, k *impl, r *rand.Rand, n, off int, sp bool) {
		acc, x, a := halves(r, n, 4, sp), halves(r, n, 1, sp), float32(r.NormFloat64())
		sameOut(t, k, "acc", acc, off, func(k *impl, d []uint16) { k.madF16(d, a, x) })
	}},
	{"scaleF16", func(t *testing.T, k *impl, r *rand.Rand, n, off int, sp bool) {
		acc, a := halves(r, n, 4, sp), float32(r.ExpFloat64())
		sameOut(t, k, "acc", acc, off, func(k *impl, d []uint16) { k.scaleF16(d, a) })
	}},
	{"toF16", func(t *testing.T, k *impl, r *rand.Rand, n, off int, sp bool) {
		x := specialVec(r, n, 1e4, sp) // past the half range too
		sameOut(t, k, "dst", make([]uint16, n), off, func(k *impl, d []uint16) { k.toF16(d, x) })
	}},
	{"rope", func(t *testing.T, k *impl, r *rand.Rand, n, off int, sp bool) {
		half := n / 2
		cos, sin := specialVec(r, half, 1, sp), specialVec(r, half, 1, sp)
		for _, neox := range []bool{false, true} {
			v := specialVec(r, 2*half, 3, sp)
			sameOut(t, k, fmt.Sprintf("neox=%v v", neox), v, off, func(k *impl, d []float32) { k.rope(d, neox, cos, sin) })
		}
	}},
	{"scaleF32", func(t *testing.T, k *impl, r *rand.Rand, n, off int, sp bool) {
		x, a := specialVec(r, n, 1, sp), float32(r.NormFloat64())
		sameOut(t, k, "x", x, off, func(k *impl, d []float32) { k.scaleF32(d, a) })
	}},
	{"add", binaryCase(func(k *impl) func(d, x []float32) { return k.add })},
	{"mul", binaryCase(func(k *impl) func(d, x []float32) { return k.mul })},
	{"rmsNorm", func(t *testing.T, k *impl, r *rand.Rand, n, off int, sp bool) {
		x, w := specialVec(r, n, 3, sp), specialVec(r, n, 1, false)
		sameOut(t, k, "dst", make([]float32, n), off, func(k *impl, d []float32) { k.rmsNorm(d, x, w, 1e-5) })
	}},
	{"silu", func(t *testing.T, k *impl, r *rand.Rand, n, off int, sp bool) {
		x := specialVec(r, n, 4, sp)
		sameOut(t, k, "dst", make([]float32, n), off, func(k *impl, d []float32) { k.silu(d, x) })
	}},
	{"swiGLU", func(t *testing.T, k *impl, r *rand.Rand, n, off int, sp bool) {
		g, u := specialVec(r, n, 4, sp), specialVec(r, n, 2, sp)
		sameOut(t, k, "dst", make([]float32, n), off, func(k *impl, d []float32) { k.swiGLU(d, g, u) })
	}},
	{"swigluOAI", func(t *testing.T, k *impl, r *rand.Rand, n, off int, sp bool) {
		// Gates past ±52 take expf's special cases (|1.702·x| ≥ 88).
		g, u := specialVec(r, n, []float64{4, 40}[r.IntN(2)], sp), specialVec(r, n, 6, sp)
		sameOut(t, k, "dst", make([]float32, n), off, func(k *impl, d []float32) { k.swigluOAI(d, g, u) })
	}},
	{"softmax", func(t *testing.T, k *impl, r *rand.Rand, n, off int, sp bool) {
		x := specialVec(r, n, 8, sp && r.IntN(2) == 0)
		sameOut(t, k, "x", x, off, func(k *impl, d []float32) { k.softmax(d) })
	}},
	{"softmaxExp", func(t *testing.T, k *impl, r *rand.Rand, n, off int, sp bool) {
		x := specialVec(r, n, 30, sp)
		mx := float32(r.NormFloat64() * 10)
		var sums []float64 // generic's, then k's
		sameOut(t, k, "x", x, off, func(k *impl, d []float32) { sums = append(sums, k.softmaxExp(d, mx)) })
		if ws, gs := sums[0], sums[1]; math.Float64bits(ws) != math.Float64bits(gs) && !(math.IsNaN(ws) && math.IsNaN(gs)) {
			t.Fatalf("sum %v, generic %v", gs, ws)
		}
	}},
	{"dotF32", func(t *testing.T, k *impl, r *rand.Rand, n, off int, sp bool) {
		a, b := specialVec(r, n+off, 1, sp), specialVec(r, n+off, 1, sp)
		if got, want := k.dotF32(a[off:], b[off:]), generic.dotF32(a[off:], b[off:]); !sameFloat(got, want) {
			t.Fatalf("%v, generic %v", got, want)
		}
	}},
	{"dotF16", func(t *testing.T, k *impl, r *rand.Rand, n, off int, sp bool) {
		b := halves(r, n+off, 1, sp)
		a := make([]float32, n+off)
		for i, h := range halves(r, n+off, 1, sp) {
			a[i] = F16ToF32(h) // callers round a to half precision
		}
		if got, want := k.dotF16(a[off:], b[off:]), generic.dotF16(a[off:], b[off:]); !sameFloat(got, want) {
			t.Fatalf("%v, generic %v", got, want)
		}
	}},
	{"reduceLanes", func(t *testing.T, k *impl, r *rand.Rand, n, off int, sp bool) {
		lanes := specialVec(r, 64*n+off, 1, sp)[off:]
		sameOut(t, k, "out", make([]float32, n), off, func(k *impl, d []float32) { k.reduceLanes(d, lanes) })
	}},
}

func binaryCase(op func(k *impl) func(d, x []float32)) func(t *testing.T, k *impl, r *rand.Rand, n, off int, sp bool) {
	return func(t *testing.T, k *impl, r *rand.Rand, n, off int, sp bool) {
		dst, x := specialVec(r, n, 1, sp), specialVec(r, n, 1, sp)
		sameOut(t, k, "dst", dst, off, func(k *impl, d []float32) { op(k)(d, x) })
	}
}

func TestVecSameAsGeneric(t *testing.T) {
	forEachAccel(t, func(t *testing.T, k *impl) {
		for ci, c := range vecCases {
			t.Run(c.name, func(t *testing.T) {
				r := newRand(uint64(100 + ci))
				for _, n := range vecLens {
					for off := range 3 {
						for _, sp := range []bool{false, true} {
							t.Run(fmt.Sprintf("n%d/off%d/special=%v", n, off, sp), func(t *testing.T) {
								c.run(t, k, r, n, off, sp)
							})
						}
					}
				}
			})
		}
	})
}

// FuzzVec runs a random kernel at a random length and offset.
func FuzzVec(f *testing.F) {
	f.Add(uint8(0), uint16(17), uint8(1), uint64(5), true)
	f.Add(uint8(11), uint16(64), uint8(0), uint64(6), false)
	f.Fuzz(func(t *testing.T, ci uint8, n uint16, off uint8, seed uint64, sp bool) {
		c := vecCases[int(ci)%len(vecCases)]
		for _, k := range implementations() {
			if k != generic {
				c.run(t, k, newRand(seed), int(n)%2000, int(off)%4, sp)
			}
		}
	})
}
