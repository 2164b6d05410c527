package kernels

import (
	"testing"

	"pagoda/gguf"
)

// TestWeightTypeRecords checks that the records agree with gguf's records
// of the same types: the kernels read block sizes, bytes and dequantizers
// from gguf, so every supported type must be one gguf can size and
// dequantize, its activation blocks must tile its weight blocks, and a
// packed block header must lie inside the block.
func TestWeightTypeRecords(t *testing.T) {
	n := 0
	for i, tr := range weightTypes {
		typ := gguf.Type(i)
		if tr.dot == nil {
			if Supported(typ) {
				t.Errorf("%v: Supported without a record", typ)
			}
			continue
		}
		n++
		if !typ.Known() {
			t.Errorf("type %d has a record but gguf does not know it", i)
			continue
		}
		if err := gguf.Dequantize(typ, make([]byte, typ.TypeSize()), make([]float32, typ.BlockSize())); err != nil {
			t.Errorf("%v: gguf cannot dequantize it: %v", typ, err)
		}
		if b := tr.act.block(); b != typ.BlockSize() {
			t.Errorf("%v: activation blocks of %d, weight blocks of %d", typ, b, typ.BlockSize())
		}
		if tr.packHeader < 0 || tr.packHeader >= typ.TypeSize() {
			t.Errorf("%v: pack header of %d bytes in a %d-byte block", typ, tr.packHeader, typ.TypeSize())
		}
		if actKindOf(typ) != tr.act || generic.dot[typ] == nil {
			t.Errorf("%v: the tables built from the record disagree with it", typ)
		}
	}
	if n != 14 {
		t.Errorf("%d supported weight types, want 14 (F32, F16, BF16, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q2_K..Q6_K, MXFP4)", n)
	}
}
