package gguf

import (
	"encoding/binary"
	"math"
	"os"
	"testing"
)

// TestMXFP4Golden checks Quantize and Dequantize of MXFP4 against ggml's
// quantize_row_mxfp4_ref and dequantize_row_mxfp4 on the same rows
// (testdata/mxfp4.bin, made by kernels/testdata/ggml/make_golden.py's
// mxfp4 group): random rows at three scales and edge cases (zero blocks,
// powers of two and the floats just below them, ties between codes, huge
// and tiny values).
func TestMXFP4Golden(t *testing.T) {
	b, err := os.ReadFile("testdata/mxfp4.bin")
	if err != nil {
		t.Fatal(err)
	}
	for rec := 0; len(b) > 0; rec++ {
		n := int(binary.LittleEndian.Uint32(b))
		b = b[4:]
		x := make([]float32, n)
		for i := range x {
			x[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
		}
		b = b[4*n:]
		size := n / 32 * 17
		want := b[:size]
		b = b[size:]
		wantDeq := make([]float32, n)
		for i := range wantDeq {
			wantDeq[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
		}
		b = b[4*n:]
		got, err := Quantize(MXFP4, x)
		if err != nil {
			t.Fatal(err)
		}
		for i := range got {
			if got[i] != want[i] {
				t.Fatalf("record %d (n=%d): byte %d (block %d) = %#02x, ggml %#02x", rec, n, i, i/17, got[i], want[i])
			}
		}
		deq := make([]float32, n)
		if err := Dequantize(MXFP4, want, deq); err != nil {
			t.Fatal(err)
		}
		for i := range deq {
			if math.Float32bits(deq[i]) != math.Float32bits(wantDeq[i]) {
				t.Fatalf("record %d: element %d dequantized %v, ggml %v", rec, i, deq[i], wantDeq[i])
			}
		}
	}
}

// TestMXFP4Values: the code table and the scale (ggml's kvalues_mxfp4,
// ggml_e8m0_to_fp32_half), and a block round trip of representable values.
func TestMXFP4Values(t *testing.T) {
	for e, want := range map[uint8]float32{0: 0x1p-128, 1: 0x1p-127, 2: 0x1p-126, 127: 0.5, 128: 1, 254: 0x1p126} {
		if got := E8M0Half(e); got != want {
			t.Errorf("E8M0Half(%d) = %g, want %g", e, got, want)
		}
	}
	x := make([]float32, 32)
	for i := range x {
		x[i] = float32(KValuesMXFP4[i%16]) * 0.25 // codes times d = 0.25 (amax 3 → e = 126)
	}
	q, err := Quantize(MXFP4, x)
	if err != nil {
		t.Fatal(err)
	}
	if q[0] != 126 || MXFP4.TypeSize() != 17 || MXFP4.BlockSize() != 32 || MXFP4.String() != "MXFP4" {
		t.Fatalf("scale byte %d, block %d bytes of %d, name %s", q[0], MXFP4.TypeSize(), MXFP4.BlockSize(), MXFP4)
	}
	y := make([]float32, 32)
	if err := Dequantize(MXFP4, q, y); err != nil {
		t.Fatal(err)
	}
	for i := range x {
		if y[i] != x[i] {
			t.Fatalf("element %d: %g, want %g", i, y[i], x[i])
		}
	}
}
