//go:build amd64 && !noasm

package kernels

import (
	"fmt"
	"math"
	"testing"
)

// The register-resident value kernels equal the general one on zeroed
// lanes bit for bit, whatever the lanes held before, with zero and NaN weights, infinite cache
// values and every count of positions around the 64 lanes.
func TestValuesF16Registers(t *testing.T) {
	type kernels struct {
		general func(lanes, w *float32, v *uint16, offs *int, n, hd int)
		reg     func(lanes, w *float32, v *uint16, offs *int, n int)
		hd      int
	}
	var ks []kernels
	if hasAVX512() {
		ks = append(ks, kernels{valuesF16AVX512, valuesF16x4AVX512, 64}, kernels{valuesF16AVX512, valuesF16x8AVX512, 128})
	}
	if hasAVX2() {
		ks = append(ks, kernels{valuesF16AVX2, valuesF16x8AVX2, 64})
	}
	if len(ks) == 0 {
		t.Fatal("no accelerated value kernels on this CPU")
	}
	r := newRand(70)
	for _, k := range ks {
		hd := k.hd
		for _, n := range []int{1, 3, 15, 16, 63, 64, 65, 127, 128, 129, 300} {
			t.Run(fmt.Sprintf("hd%d/n%d", hd, n), func(t *testing.T) {
				const stride = 3 // rows of KV heads between positions
				v := make([]uint16, (n+2)*stride*hd)
				for i := range v {
					v[i] = F32ToF16(float32(r.NormFloat64()))
				}
				v[hd+5] = F32ToF16(float32(math.Inf(1)))
				offs, w := make([]int, n), randVec(r, n, 1)
				for p := range offs {
					offs[p] = (p*stride+1)*hd + hd*(p%2) // misaligned rows, two heads
					switch p % 7 {
					case 2:
						w[p] = 0
					case 5:
						w[p] = float32(math.NaN())
					}
				}
				lanes := randVec(r, 64*hd, 1) // overwritten: the kernels start from zero
				want := make([]float32, 64*hd)
				k.general(&want[0], &w[0], &v[0], &offs[0], n, hd)
				k.reg(&lanes[0], &w[0], &v[0], &offs[0], n)
				checkSameF32(t, "lanes", lanes, want)
			})
		}
	}
}

// Every implementation's F32→F16 conversion rounds exactly as F32ToF16
// over a sweep of every 97th float32 bit pattern (normals, denormals,
// infinities, NaNs).
func TestToF16Sweep(t *testing.T) {
	forEachAccel(t, func(t *testing.T, k *impl) { checkToF16Sweep(t, k.toF16) })
}

func checkToF16Sweep(t *testing.T, toF16 func(dst []uint16, x []float32)) {
	const chunk = 1<<16 + 5 // a tail past the vectors
	x, got := make([]float32, chunk), make([]uint16, chunk)
	for b := uint64(0); b < 1<<32; {
		n := 0
		for ; n < chunk && b < 1<<32; n, b = n+1, b+97 {
			x[n] = math.Float32frombits(uint32(b))
		}
		toF16(got[:n], x[:n])
		for i, v := range x[:n] {
			if want := F32ToF16(v); got[i] != want {
				t.Fatalf("f16(%#x) = %#x, want %#x", math.Float32bits(v), got[i], want)
			}
		}
	}
}
