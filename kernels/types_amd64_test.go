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
		}
	}
}
