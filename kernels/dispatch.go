package kernels

import "os"

// numTypes bounds the gguf.Type values the per-type tables (weightTypes,
// impl.dot, impl.gemm) are indexed by.
const numTypes = 40

// impl is one implementation of the hot loops. The generic one is always
// present; CPU-specific ones (assembly) are listed by accelerated() and must
// reduce in the same documented orders.
type impl struct {
	name string
	// dot[t] multiplies one row of a type-t weight with one activation row
	// converted by quantize[actKindOf(t)]. Nil for unsupported types. The
	// generic table is the records' dot products (types.go); accelerated
	// implementations replace entries (accelTypes).
	dot      [numTypes]func(w []byte, a *actRow) float32
	quantize [numActKinds]func(dst *actRow, x []float32)
	// gemm[t], when set, replaces dot[t] in MatMul: a tiled kernel over
	// several weight and activation rows (accelerated implementations).
	gemm [numTypes]*blockGEMM
	// fast[t], when set, multiplies type-t weights marked for the fast
	// arithmetic (fast.go), reading their interleaved copy.
	fast [numTypes]*blockGEMM
	// records writes one quantized row's gemm32 records (see gemm.go).
	records func(rec []byte, row *actRow, bias int32)
	// fastRecords, if set, writes the fastRec records of the 32-element
	// fast types (fast_records.go) as their writers do.
	fastRecords func(rec []byte, row *actRow, bias int32, min bool)

	dotF32   func(a, b []float32) float32
	dotF16   func(a []float32, b []uint16) float32
	dotBF16  func(a []float32, b []uint16) float32
	axpyF32  func(dst []float32, a float32, x []float32)
	axpyF16  func(dst []float32, a float32, x []uint16)
	axpyB16  func(dst []float32, a float32, x []uint16)
	madF16   func(acc []uint16, a float32, x []uint16)
	scaleF16 func(acc []uint16, a float32)
	scaleF32 func(x []float32, a float32)
	toF16    func(dst []uint16, x []float32) // dst[i] = F32ToF16(x[i])
	rope     func(v []float32, neox bool, cos, sin []float32)

	rmsNorm func(dst, x, w []float32, eps float32)
	softmax func(x []float32)
	// softmaxExp replaces x by exp(x−mx) and returns the float64 sum, as
	// softmax's first pass; reduceLanes sets out[d] = reduce64(lanes[k·len(out)+d]).
	softmaxExp  func(x []float32, mx float32) float64
	reduceLanes func(out, lanes []float32)
	attn        attnKernels // whole-context attention kernels, if any
	tiled       tiledKernels
	silu        func(dst, x []float32)
	swiGLU      func(dst, gate, up []float32)
	swigluOAI   func(dst, gate, up []float32) // gpt-oss's experts' activation
	add         func(dst, x []float32)
	mul         func(dst, x []float32)
}

// generic is the portable reference implementation.
var generic = &impl{
	name:    "generic",
	dot:     genericDots(),
	records: records32Go,
	quantize: [numActKinds]func(*actRow, []float32){
		actF32:  quantizeF32Generic,
		actF16:  quantizeF16Generic,
		actBF16: quantizeBF16Generic,
		actQ8_0: quantizeQ8_0Generic,
		actQ8_1: quantizeQ8_1Generic,
		actQ8K:  quantizeQ8KGeneric,
	},
	dotF32:      dotF32Generic,
	dotF16:      dotF16Generic,
	dotBF16:     dotBF16Generic,
	axpyF32:     axpyF32Generic,
	axpyF16:     axpyF16Generic,
	axpyB16:     axpyBF16Generic,
	madF16:      madF16Generic,
	scaleF16:    scaleF16Generic,
	toF16:       toF16Generic,
	rope:        ropeGeneric,
	scaleF32:    scaleF32Generic,
	rmsNorm:     rmsNormGeneric,
	softmax:     softmaxGeneric,
	softmaxExp:  softmaxExp,
	reduceLanes: reduceLanes,
	tiled:       genericTiled,
	silu:        siluGeneric,
	swiGLU:      swiGLUGeneric,
	swigluOAI:   swigluOAIGeneric,
	add:         addGeneric,
	mul:         mulGeneric,
}

// implementations lists every implementation usable on this machine, best
// first, the generic reference last. With the noasm build tag only the
// reference is listed.
func implementations() []*impl {
	if noasm {
		return []*impl{generic}
	}
	ks := accelerated()
	return append(ks[:len(ks):len(ks)], generic) // never append into accel
}

// chooseImpl picks the implementation used by default: the best available,
// or the generic reference when noasmEnv is "1".
func chooseImpl(noasmEnv string) *impl {
	if noasmEnv == "1" {
		return generic
	}
	return implementations()[0]
}

// def is the implementation chosen at start-up; it is never reassigned.
var def = chooseImpl(os.Getenv("PAGODA_NOASM"))

// Implementation names the implementation in use ("generic" when the
// reference is forced by the noasm tag or PAGODA_NOASM=1).
func Implementation() string { return def.name }
