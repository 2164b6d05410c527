package gguf

import "fmt"

// Type is a ggml tensor element type, numbered as in the GGUF specification.
type Type uint32

// Tensor types. Block layouts follow ggml (see each type's comment).
const (
	F32  Type = 0  // 4-byte float
	F16  Type = 1  // IEEE half
	Q4_0 Type = 2  // 32 elems: d f16, 16 bytes of 4-bit quants (x = d*(q-8))
	Q4_1 Type = 3  // 32 elems: d f16, m f16, 16 bytes of 4-bit quants (x = d*q + m)
	Q5_0 Type = 6  // 32 elems: d f16, qh uint32 (5th bits), 16 bytes low nibbles (x = d*(q-16))
	Q5_1 Type = 7  // 32 elems: d f16, m f16, qh uint32, 16 bytes low nibbles (x = d*q + m)
	Q8_0 Type = 8  // 32 elems: d f16, 32 int8 (x = d*q)
	Q8_1 Type = 9  // 32 elems: d f16, s f16 (= d*sum(q)), 32 int8
	Q2_K Type = 10 // 256 elems, 84 bytes
	Q3_K Type = 11 // 256 elems, 110 bytes
	Q4_K Type = 12 // 256 elems: d f16, dmin f16, 12 bytes 6-bit scales/mins, 128 bytes quants
	Q5_K Type = 13 // 256 elems: d, dmin f16, 12 bytes scales, 32 bytes high bits, 128 bytes quants
	Q6_K Type = 14 // 256 elems: 128 bytes low 4 bits, 64 bytes high 2 bits, 16 int8 scales, d f16
	Q8_K Type = 15 // 256 elems: d f32, 256 int8, 16 int16 block sums
	I8   Type = 24
	I16  Type = 25
	I32  Type = 26
	I64  Type = 27
	F64  Type = 28
	BF16 Type = 30 // bfloat16
	// MXFP4 is OCP's microscaling FP4 (gpt-oss's experts): 32 elems, e
	// (E8M0 scale) | 16 bytes of 4-bit E2M1 codes, element j the low nibble
	// of byte j, element j+16 its high nibble (ggml's block_mxfp4).
	MXFP4 Type = 39
)

// typeTraits is one tensor type's record, as ggml's type_traits: every
// fact this package has about the type lives here, and the tables behind
// Type's methods, Dequantize and Quantize are this one map. Adding a type
// is adding its constant and its record. (The kernels package keeps the
// compute side, as ggml-cpu's type_traits_cpu: kernels/types.go.)
type typeTraits struct {
	name      string
	blockSize int          // elements per block
	typeSize  int          // bytes per block
	dequant   blockDecoder // one block to float32; nil: Dequantize rejects the type
	quant     blockEncoder // float32 to one block; nil: Quantize rejects the type
}

var traits = map[Type]typeTraits{
	F32:   {"F32", 1, 4, decodeF32, quantF32},
	F16:   {"F16", 1, 2, decodeF16, quantF16},
	Q4_0:  {"Q4_0", 32, 18, dequantQ4_0, quantQ4_0},
	Q4_1:  {"Q4_1", 32, 20, dequantQ4_1, quantQ4_1},
	Q5_0:  {"Q5_0", 32, 22, dequantQ5_0, quantQ5_0},
	Q5_1:  {"Q5_1", 32, 24, dequantQ5_1, quantQ5_1},
	Q8_0:  {"Q8_0", 32, 34, dequantQ8_0, quantQ8_0},
	Q8_1:  {"Q8_1", 32, 36, dequantQ8_1, quantQ8_1},
	Q2_K:  {"Q2_K", 256, 84, dequantQ2_K, quantQ2_K},
	Q3_K:  {"Q3_K", 256, 110, dequantQ3_K, quantQ3_K},
	Q4_K:  {"Q4_K", 256, 144, dequantQ4_K, quantQ4_K},
	Q5_K:  {"Q5_K", 256, 176, dequantQ5_K, quantQ5_K},
	Q6_K:  {"Q6_K", 256, 210, dequantQ6_K, quantQ6_K},
	Q8_K:  {"Q8_K", 256, 292, dequantQ8_K, quantQ8_K},
	I8:    {"I8", 1, 1, decodeI8, nil},
	I16:   {"I16", 1, 2, decodeI16, nil},
	I32:   {"I32", 1, 4, decodeI32, nil},
	I64:   {"I64", 1, 8, decodeI64, nil},
	F64:   {"F64", 1, 8, decodeF64, quantF64},
	BF16:  {"BF16", 1, 2, decodeBF16, quantBF16},
	MXFP4: {"MXFP4", 32, 17, dequantMXFP4, quantMXFP4},
}

// Known reports whether t is a tensor type this package can size.
func (t Type) Known() bool { _, ok := traits[t]; return ok }

func (t Type) String() string {
	if tr, ok := traits[t]; ok {
		return tr.name
	}
	return fmt.Sprintf("type(%d)", uint32(t))
}

// BlockSize is the number of elements in one block of t (1 for plain types).
func (t Type) BlockSize() int { return traits[t].blockSize }

// TypeSize is the number of bytes in one block of t.
func (t Type) TypeSize() int { return traits[t].typeSize }

// RowSize returns the bytes taken by n elements of t. n must be a multiple of
// the block size.
func (t Type) RowSize(n int) (int, error) {
	tr, ok := traits[t]
	if !ok {
		return 0, fmt.Errorf("gguf: unknown tensor type %d", uint32(t))
	}
	if n < 0 || n%tr.blockSize != 0 {
		return 0, fmt.Errorf("gguf: %d elements of %s is not a whole number of %d-element blocks", n, tr.name, tr.blockSize)
	}
	return n / tr.blockSize * tr.typeSize, nil
}
