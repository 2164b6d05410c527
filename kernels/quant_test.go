package kernels

import (
	"math"
	"testing"
)

// quantizeOne converts one row with k's quantizer.
func quantizeOne(k *impl, kind actKind, x []float32) *actRow {
	var a actRows
	a.prepare(k, kind, x, 1, len(x))
	return &a.rows[0]
}

// TestQuantizeQ8_0Rounding pins ggml's x86 semantics: d = amax/127 stored
// as f16, multiplier 127/amax, round half to even.
func TestQuantizeQ8_0Rounding(t *testing.T) {
	forEachImpl(t, func(t *testing.T, k *impl) {
		x := make([]float32, 32)
		copy(x, []float32{127, 63.5, -63.5, 0.5, 1.5, 2.5, -2.5, -127, 0.49999997})
		a := quantizeOne(k, actQ8_0, x)
		want := []int8{127, 64, -64, 0, 2, 2, -2, -127, 0}
		for i, w := range want {
			if a.qs[i] != w {
				t.Errorf("q[%d] = %d, want %d", i, a.qs[i], w)
			}
		}
		if a.d[0] != 1 {
			t.Errorf("d = %v, want 1", a.d[0])
		}
	})
}

// TestQuantizeQ8Blocks checks Q8_0 and Q8_1 on random blocks against the
// formulas written out directly.
func TestQuantizeQ8Blocks(t *testing.T) {
	forEachImpl(t, func(t *testing.T, k *impl) {
		r := newRand(5)
		x := randVec(r, 32*40, 0.7)
		clear(x[64:96]) // an all-zero block
		for _, kind := range []actKind{actQ8_0, actQ8_1} {
			a := quantizeOne(k, kind, x)
			for b := range 40 {
				xb := x[b*32 : (b+1)*32]
				var amax float32
				for _, v := range xb {
					amax = max(amax, float32(math.Abs(float64(v))))
				}
				d := amax / 127
				id := float32(0)
				if amax != 0 {
					id = 127 / amax
				}
				sum := 0
				for i, v := range xb {
					q := int8(math.RoundToEven(float64(v * id)))
					if a.qs[b*32+i] != q {
						t.Fatalf("kind %d block %d elem %d: q=%d want %d", kind, b, i, a.qs[b*32+i], q)
					}
					sum += int(q)
				}
				if a.d[b] != F16ToF32(F32ToF16(d)) {
					t.Fatalf("block %d: d=%v want f16(%v)", b, a.d[b], d)
				}
				if kind == actQ8_1 && a.s[b] != F16ToF32(F32ToF16(d*float32(sum))) {
					t.Fatalf("block %d: s=%v want f16(%v)", b, a.s[b], d*float32(sum))
				}
			}
		}
	})
}

// TestQuantizeQ8K checks ggml's quantize_row_q8_K: the signed maximum maps
// to −127, min(127, ·) clamps the opposite side, d = 1/iscale, bsums.
func TestQuantizeQ8K(t *testing.T) {
	forEachImpl(t, func(t *testing.T, k *impl) {
		r := newRand(6)
		x := randVec(r, 3*256, 1)
		x[5] = -100
		x[6] = 100 // same magnitude, later: the first one is the signed max
		clear(x[256:512])
		a := quantizeOne(k, actQ8K, x)
		if a.qs[5] != -127 || a.qs[6] != 127 {
			t.Errorf("q[5], q[6] = %d, %d, want -127, 127", a.qs[5], a.qs[6])
		}
		for b := range 3 {
			xb := x[b*256 : (b+1)*256]
			var mx, amax float32
			for _, v := range xb {
				if av := float32(math.Abs(float64(v))); av > amax {
					amax, mx = av, v
				}
			}
			var iscale float32
			if amax != 0 {
				iscale = -127 / mx
			}
			for i, v := range xb {
				q := int8(min(127, math.RoundToEven(float64(iscale*v))))
				if a.qs[b*256+i] != q {
					t.Fatalf("block %d elem %d: q=%d want %d", b, i, a.qs[b*256+i], q)
				}
			}
			wantD := float32(0)
			if amax != 0 {
				wantD = 1 / iscale
			}
			if a.d[b] != wantD {
				t.Fatalf("block %d: d=%v want %v", b, a.d[b], wantD)
			}
			for g := range 16 {
				s := 0
				for _, q := range a.qs[b*256+g*16 : b*256+(g+1)*16] {
					s += int(q)
				}
				if int(a.bsums[b*16+g]) != s {
					t.Fatalf("block %d: bsums[%d]=%d want %d", b, g, a.bsums[b*16+g], s)
				}
			}
		}
	})
}

// TestActivationError bounds how far converted activations stand from x:
// half a quantization step plus the scale's f16 rounding.
func TestActivationError(t *testing.T) {
	forEachImpl(t, func(t *testing.T, k *impl) {
		r := newRand(7)
		x := randVec(r, 1024, 2)
		for kind := range numActKinds {
			a := quantizeOne(k, kind, x)
			deq := dequantAct(kind, a, len(x))
			bl := kind.block()
			for i, v := range x {
				var amax float64
				for _, u := range x[i/bl*bl : (i/bl+1)*bl] {
					amax = math.Max(amax, math.Abs(float64(u)))
				}
				tol := map[actKind]float64{
					actF32: 0, actF16: math.Abs(float64(v)) / 2048, actBF16: math.Abs(float64(v)) / 256,
					actQ8_0: amax/254*1.001 + amax/2048, actQ8_1: amax/254*1.001 + amax/2048, actQ8K: amax / 254 * 1.001,
				}[kind]
				if !closeTo(float64(deq[i]), float64(v), tol) {
					t.Fatalf("kind %d elem %d: %v stands for %v (tol %v)", kind, i, deq[i], v, tol)
				}
			}
		}
	})
}
