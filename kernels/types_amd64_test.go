//go:build amd64 && !noasm

package kernels

import "testing"

// TestAccelTypesSupported checks that every accelerated kernel belongs to a
// weight type with a record: MatMul validates weights against the records,
// so a kernel for a type without one would never run.
func TestAccelTypesSupported(t *testing.T) {
	for typ, a := range accelTypes {
		if !Supported(typ) {
			t.Errorf("%v has accelerated kernels but no record in weightTypes", typ)
		}
		for _, k := range []accelKernels{a.avx512, a.avx2} {
			if k.gemm != nil && len(k.gemm.tiles) == 0 {
				t.Errorf("%v: a gemm with no tiles", typ)
			}
			if k.fast != nil && (len(k.fast.tiles) == 0 || k.fast.fast != weightTypes[typ].fast) {
				t.Errorf("%v: a fast gemm with no tiles or another type's record", typ)
			}
		}
	}
}

// TestFastKernelsEverywhere: every type with a fast arithmetic has fast
// kernels in both accelerated implementations.
func TestFastKernelsEverywhere(t *testing.T) {
	for _, typ := range fastTypes() {
		a := accelTypes[typ]
		if a.avx512.fast == nil || a.avx2.fast == nil {
			t.Errorf("%v: fast kernels avx512 %v, avx2 %v", typ, a.avx512.fast != nil, a.avx2.fast != nil)
		}
	}
}
