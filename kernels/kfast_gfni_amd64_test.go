//go:build amd64 && !noasm

package kernels

import (
	"reflect"
	"slices"
	"testing"
)

// TestKFastGFNI: both AVX-512 tile sets of the K-quants with a GFNI
// variant (the shift-and-mask ones and the GF2P8AFFINEQB ones) equal the
// generic fast dot bit for bit, and the table in use holds the GFNI ones
// exactly when the CPU has GFNI.
func TestKFastGFNI(t *testing.T) {
	if !hasAVX512() {
		t.Skip("no AVX-512 VNNI on this CPU")
	}
	t.Run("shift", func(t *testing.T) {
		for _, tc := range kFastDots {
			if k, ok := kfastTiles512[tc.typ]; ok {
				checkKFastKernels(t, tc.typ, tc.dot, k.tiles)
			}
		}
	})
	t.Run("gfni", func(t *testing.T) {
		if !hasGFNI() {
			t.Skip("no GFNI on this CPU")
		}
		for _, tc := range kFastDots {
			if k, ok := kfastTiles512[tc.typ]; ok {
				checkKFastKernels(t, tc.typ, tc.dot, k.gfni)
			}
		}
	})
	for typ, k := range kfastTiles512 {
		want := k.tiles
		if hasGFNI() {
			want = k.gfni
		}
		if !sameFuncs(accelTypes[typ].avx512.fast.tiles, want) {
			t.Errorf("%v: the avx512 table does not hold the kernels for gfni=%v", typ, hasGFNI())
		}
	}
}

// sameFuncs reports whether a and b hold the same functions.
func sameFuncs(a, b []gemmFunc) bool {
	return slices.EqualFunc(a, b, func(x, y gemmFunc) bool { return reflect.ValueOf(x).Pointer() == reflect.ValueOf(y).Pointer() })
}
