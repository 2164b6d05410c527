package kernels

import "pagoda/gguf"

// typeTraits is one weight type's record on the compute side, as ggml-cpu's
// type_traits_cpu. The format side of the same type (name, block size,
// bytes per block, dequantizer, reference quantizer) is its record in gguf
// (gguf/type.go); the kernels never repeat those facts: they read
// t.BlockSize and t.TypeSize, and DequantizeRow is gguf's dequantizer.
//
// Every per-type table of this package is built from weightTypes:
// Supported, actKindOf, the generic implementation's dot table (dispatch.go),
// Pack's layouts (weight.go) and the fast arithmetic (fast.go).
// Accelerated implementations add their kernels per type in accelTypes
// (accel_amd64.go). Adding a weight type is
// its gguf record, its record here with a generic dot product, and
// optionally a row of accelTypes; the generator families that emit
// accelerated kernels are listed in doc.go.
type typeTraits struct {
	// act is the format activations are converted to before they meet a
	// row of this type (ggml's vec_dot_type); the quantizer is the
	// implementation's quantize[act].
	act actKind
	// dot is the portable reference: one weight row times one activation
	// row in format act, in the order the package doc's contract states.
	dot func(w []byte, a *actRow) float32
	// packHeader is the bytes before the quants in one block, for Pack's
	// four-row interleaved layout (packRows32); 0 when Pack leaves rows of
	// this type as they are.
	packHeader int
	// fast is the type's fast arithmetic (fast.go), nil when it has none:
	// its weights then always take the exact arithmetic.
	fast *fastTraits
}

// weightTypes holds the record of every weight type MatMul and
// DequantizeRow support, indexed by gguf.Type; the zero record (nil dot)
// marks an unsupported type.
var weightTypes = [numTypes]typeTraits{
	gguf.F32:  {act: actF32, dot: dotF32WGeneric},
	gguf.F16:  {act: actF16, dot: dotF16WGeneric},
	gguf.BF16: {act: actBF16, dot: dotBF16WGeneric},
	gguf.Q4_0: {act: actQ8_0, dot: dotQ4_0Generic, packHeader: 2, fast: &fastQ4_0}, // d
	gguf.Q4_1: {act: actQ8_1, dot: dotQ4_1Generic, packHeader: 4, fast: &fastQ4_1}, // d, m
	gguf.Q5_0: {act: actQ8_0, dot: dotQ5_0Generic, fast: &fastQ5_0},
	gguf.Q5_1: {act: actQ8_1, dot: dotQ5_1Generic, fast: &fastQ5_1},
	gguf.Q8_0: {act: actQ8_0, dot: dotQ8_0Generic, packHeader: 2, fast: &fastQ8_0}, // d
	gguf.Q2_K: {act: actQ8K, dot: dotQ2KGeneric, fast: &fastQ2K},
	gguf.Q3_K: {act: actQ8K, dot: dotQ3KGeneric, fast: &fastQ3K},
	gguf.Q4_K: {act: actQ8K, dot: dotQ4KGeneric, fast: &fastQ4K},
	gguf.Q5_K: {act: actQ8K, dot: dotQ5KGeneric, fast: &fastQ5K},
	gguf.Q6_K: {act: actQ8K, dot: dotQ6KGeneric, fast: &fastQ6K},
	// MXFP4: the exact arithmetic generic; the fast one Q8_0's (mxfp4.go).
	gguf.MXFP4: {act: actQ8_0, dot: dotMXFP4Generic, fast: &fastMXFP4},
}

// traitsOf returns t's record, or nil when the kernels do not support t.
func traitsOf(t gguf.Type) *typeTraits {
	if int(t) >= numTypes || weightTypes[t].dot == nil {
		return nil
	}
	return &weightTypes[t]
}

// Supported reports whether MatMul and DequantizeRow handle weights of type t.
func Supported(t gguf.Type) bool { return traitsOf(t) != nil }

// actKindOf returns the activation format for weights of type t (actF32
// for a type the kernels do not support).
func actKindOf(t gguf.Type) actKind {
	if tr := traitsOf(t); tr != nil {
		return tr.act
	}
	return actF32
}

// genericDots is the generic implementation's dot table, one entry per
// record of weightTypes.
func genericDots() (d [numTypes]func([]byte, *actRow) float32) {
	for t, tr := range weightTypes {
		d[t] = tr.dot
	}
	return d
}
