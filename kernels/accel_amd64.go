//go:build amd64 && !noasm

package kernels

import (
	"golang.org/x/sys/cpu"

	"pagoda/gguf"
)

// accelerated returns the CPU-specific implementations usable on this
// machine, best first (the same tables on every call).
func accelerated() []*impl { return accel }

// accel is built once at start-up and never written again. Each table
// starts as a copy of the generic one and replaces the kernels it
// accelerates; all of them reproduce the generic results bit for bit, which
// needs fma32 to round once, as FMA instructions do.
var accel = func() []*impl {
	if !fmaRoundsOnce() {
		return nil
	}
	var ks []*impl
	if hasAVX512() {
		ks = append(ks, avx512())
	}
	if hasAVX2() {
		ks = append(ks, avx2())
	}
	return ks
}()

// unavailable names the accelerated implementations this build knows but
// this machine cannot run, with why (tests skip them visibly).
func unavailable() map[string]string {
	out := map[string]string{}
	switch {
	case !fmaRoundsOnce():
		out["avx512"], out["avx2"] = "FMA does not round once here", "FMA does not round once here"
	default:
		if !hasAVX512() {
			out["avx512"] = "not supported by this CPU (needs AVX-512 F/BW/DQ/VL with VNNI)"
		}
		if !hasAVX2() {
			out["avx2"] = "not supported by this CPU (needs AVX2 and FMA)"
		}
	}
	return out
}

// hasAVX512 reports AVX-512 F/BW/DQ/VL with VNNI (Ice Lake, Zen 4 and
// later), BMI2 and FMA, with the OS saving the ZMM state.
func hasAVX512() bool {
	x := cpu.X86
	return x.HasAVX512F && x.HasAVX512BW && x.HasAVX512DQ && x.HasAVX512VL &&
		x.HasAVX512VNNI && x.HasBMI2 && x.HasFMA && x.HasAVX2
}

// hasAVX2 reports AVX2 and FMA with the OS saving the YMM state (every
// such CPU also has F16C).
func hasAVX2() bool { return cpu.X86.HasAVX2 && cpu.X86.HasFMA }

// accelKernels is what one accelerated implementation has for one weight
// type: a dot product that replaces the generic one (nil: keep it) and a
// tiled matmul that MatMul prefers to the dot product (nil: none).
type accelKernels struct {
	dot  func(w []byte, a *actRow) float32
	gemm *blockGEMM
	// fast multiplies the type's weights marked for the fast arithmetic
	// (fast.go); its fast field is the type's fastTraits record.
	fast *blockGEMM
}

// accelTypes is the accelerated part of each weight type's record (see
// typeTraits): per type, the kernels of each implementation. avx512() and
// avx2() build their dot and gemm tables from it; doc.go maps the
// generator families to these kernels.
var accelTypes = map[gguf.Type]struct{ avx512, avx2 accelKernels }{
	gguf.F32: {
		avx512: accelKernels{dot: isaAVX512.DotF32W, gemm: &blockGEMM{float: true, tiles: []gemmFunc{gemmF32_1, gemmF32_2, gemmF32_3, gemmF32_4, gemmF32_5, gemmF32_6}}},
		avx2:   accelKernels{dot: isaAVX2.DotF32W},
	},
	gguf.F16: {
		avx512: accelKernels{dot: isaAVX512.DotF16W, gemm: &blockGEMM{float: true, tiles: []gemmFunc{gemmF16_1, gemmF16_2, gemmF16_3, gemmF16_4, gemmF16_5, gemmF16_6}}},
		avx2:   accelKernels{dot: isaAVX2.DotF16W},
	},
	gguf.BF16: {
		avx512: accelKernels{dot: isaAVX512.DotBF16W, gemm: &blockGEMM{float: true, tiles: []gemmFunc{gemmBF16_1, gemmBF16_2, gemmBF16_3, gemmBF16_4, gemmBF16_5, gemmBF16_6}}},
		avx2:   accelKernels{dot: isaAVX2.DotBF16W},
	},
	gguf.Q4_0: {
		avx512: accelKernels{gemm: &blockGEMM{bias: 8,
			tiles:  []gemmFunc{gemmQ4_0_1, gemmQ4_0_2, gemmQ4_0_3, gemmQ4_0_4, gemmQ4_0_5, gemmQ4_0_6, gemmQ4_0_7, gemmQ4_0_8},
			packed: []gemmFunc{gemmQ4_0p_1, gemmQ4_0p_2, gemmQ4_0p_3, gemmQ4_0p_4, gemmQ4_0p_5, gemmQ4_0p_6, gemmQ4_0p_7, gemmQ4_0p_8}},
			fast: &blockGEMM{fast: &fastQ4_0, pairs: true, tiles: []gemmFunc{gemmFQ4_0_1, gemmFQ4_0_2, gemmFQ4_0_3, gemmFQ4_0_4,
				gemmFQ4_0_5, gemmFQ4_0_6, gemmFQ4_0_7, gemmFQ4_0_8}}},
		avx2: accelKernels{gemm: &blockGEMM{bias: 8, tiles: []gemmFunc{gemmQ4_0_avx2_1, gemmQ4_0_avx2_2, gemmQ4_0_avx2_3,
			gemmQ4_0_avx2_4, gemmQ4_0_avx2_5, gemmQ4_0_avx2_6, gemmQ4_0_avx2_7, gemmQ4_0_avx2_8}}, fast: gemmRAVX2},
	},
	gguf.Q4_1: {
		avx512: accelKernels{gemm: &blockGEMM{
			tiles:  []gemmFunc{gemmQ4_1_1, gemmQ4_1_2, gemmQ4_1_3, gemmQ4_1_4, gemmQ4_1_5, gemmQ4_1_6, gemmQ4_1_7},
			packed: []gemmFunc{gemmQ4_1p_1, gemmQ4_1p_2, gemmQ4_1p_3, gemmQ4_1p_4, gemmQ4_1p_5, gemmQ4_1p_6, gemmQ4_1p_7}},
			fast: &blockGEMM{fast: &fastQ4_1, pairs: true, tiles: []gemmFunc{gemmFQ4_1_1, gemmFQ4_1_2, gemmFQ4_1_3, gemmFQ4_1_4,
				gemmFQ4_1_5, gemmFQ4_1_6, gemmFQ4_1_7, gemmFQ4_1_8}}},
		avx2: accelKernels{gemm: &blockGEMM{sAhead: true, tiles: []gemmFunc{gemmQ4_1_avx2_1, gemmQ4_1_avx2_2, gemmQ4_1_avx2_3,
			gemmQ4_1_avx2_4, gemmQ4_1_avx2_5, gemmQ4_1_avx2_6, gemmQ4_1_avx2_7, gemmQ4_1_avx2_8}},
			fast: &blockGEMM{fast: &fastQ4_1, tiles: []gemmFunc{gemmFQ4_1_avx2_1, gemmFQ4_1_avx2_2, gemmFQ4_1_avx2_3, gemmFQ4_1_avx2_4, gemmFQ4_1_avx2_5, gemmFQ4_1_avx2_6}}},
	},
	gguf.Q5_0: {avx512: accelKernels{gemm: &blockGEMM{bias: 16, tiles: []gemmFunc{
		gemmQ5_0_1, gemmQ5_0_2, gemmQ5_0_3, gemmQ5_0_4, gemmQ5_0_5, gemmQ5_0_6, gemmQ5_0_7, gemmQ5_0_8}},
		fast: &blockGEMM{fast: &fastQ5_0, pairs: true, tiles: []gemmFunc{gemmFQ5_0_1, gemmFQ5_0_2, gemmFQ5_0_3, gemmFQ5_0_4,
			gemmFQ5_0_5, gemmFQ5_0_6, gemmFQ5_0_7, gemmFQ5_0_8}}},
		avx2: accelKernels{fast: &blockGEMM{fast: &fastQ5_0, tiles: []gemmFunc{gemmFQ5_0_avx2_1, gemmFQ5_0_avx2_2, gemmFQ5_0_avx2_3, gemmFQ5_0_avx2_4, gemmFQ5_0_avx2_5, gemmFQ5_0_avx2_6}}}},
	gguf.Q5_1: {avx512: accelKernels{gemm: &blockGEMM{tiles: []gemmFunc{
		gemmQ5_1_1, gemmQ5_1_2, gemmQ5_1_3, gemmQ5_1_4, gemmQ5_1_5, gemmQ5_1_6, gemmQ5_1_7}},
		fast: &blockGEMM{fast: &fastQ5_1, pairs: true, tiles: []gemmFunc{gemmFQ5_1_1, gemmFQ5_1_2, gemmFQ5_1_3, gemmFQ5_1_4,
			gemmFQ5_1_5, gemmFQ5_1_6, gemmFQ5_1_7, gemmFQ5_1_8}}},
		avx2: accelKernels{fast: &blockGEMM{fast: &fastQ5_1, tiles: []gemmFunc{gemmFQ5_1_avx2_1, gemmFQ5_1_avx2_2, gemmFQ5_1_avx2_3, gemmFQ5_1_avx2_4, gemmFQ5_1_avx2_5, gemmFQ5_1_avx2_6}}}},
	gguf.Q8_0: {
		avx512: accelKernels{gemm: &blockGEMM{bias: 128,
			tiles:  []gemmFunc{gemmQ8_0_1, gemmQ8_0_2, gemmQ8_0_3, gemmQ8_0_4, gemmQ8_0_5, gemmQ8_0_6, gemmQ8_0_7, gemmQ8_0_8},
			packed: []gemmFunc{gemmQ8_0p_1, gemmQ8_0p_2, gemmQ8_0p_3, gemmQ8_0p_4, gemmQ8_0p_5, gemmQ8_0p_6, gemmQ8_0p_7, gemmQ8_0p_8}},
			fast: &blockGEMM{fast: &fastQ8_0, pairs: true, tiles: []gemmFunc{gemmFQ8_0_1, gemmFQ8_0_2, gemmFQ8_0_3, gemmFQ8_0_4,
				gemmFQ8_0_5, gemmFQ8_0_6, gemmFQ8_0_7, gemmFQ8_0_8}}},
		avx2: accelKernels{gemm: &blockGEMM{tiles: []gemmFunc{gemmQ8_0_avx2_1, gemmQ8_0_avx2_2, gemmQ8_0_avx2_3,
			gemmQ8_0_avx2_4, gemmQ8_0_avx2_5, gemmQ8_0_avx2_6, gemmQ8_0_avx2_7, gemmQ8_0_avx2_8}},
			fast: &blockGEMM{fast: &fastQ8_0, tiles: []gemmFunc{gemmFQ8_0_avx2_1, gemmFQ8_0_avx2_2, gemmFQ8_0_avx2_3, gemmFQ8_0_avx2_4, gemmFQ8_0_avx2_5, gemmFQ8_0_avx2_6}}},
	},
	// MXFP4: its own kernels on its interleaved nibbles (mxfp4.go)
	gguf.MXFP4: {
		avx512: accelKernels{fast: mxfp4GEMM512(hasVBMI())},
		avx2: accelKernels{fast: &blockGEMM{fast: &fastMXFP4, tiles: []gemmFunc{gemmFMXFP4_avx2_1, gemmFMXFP4_avx2_2,
			gemmFMXFP4_avx2_3, gemmFMXFP4_avx2_4, gemmFMXFP4_avx2_5, gemmFMXFP4_avx2_6}}},
	},
	gguf.Q2_K: {avx512: accelKernels{gemm: &blockGEMM{kq: true, tiles: []gemmFunc{gemmQ2_K_1, gemmQ2_K_2, gemmQ2_K_3, gemmQ2_K_4, gemmQ2_K_5, gemmQ2_K_6}},
		fast: &blockGEMM{fast: &fastQ2K, tiles: []gemmFunc{kfastQ2_K_1, kfastQ2_K_2, kfastQ2_K_3, kfastQ2_K_4}}},
		avx2: accelKernels{fast: &blockGEMM{fast: &fastQ2K, tiles: []gemmFunc{kfastQ2_K_avx2_1, kfastQ2_K_avx2_2, kfastQ2_K_avx2_3}}}},
	gguf.Q3_K: {avx512: accelKernels{gemm: &blockGEMM{kq: true, tiles: []gemmFunc{gemmQ3_K_1, gemmQ3_K_2, gemmQ3_K_3, gemmQ3_K_4, gemmQ3_K_5, gemmQ3_K_6}},
		fast: &blockGEMM{fast: &fastQ3K, tiles: []gemmFunc{kfastQ3_K_1, kfastQ3_K_2, kfastQ3_K_3, kfastQ3_K_4}}},
		avx2: accelKernels{fast: &blockGEMM{fast: &fastQ3K, tiles: []gemmFunc{kfastQ3_K_avx2_1, kfastQ3_K_avx2_2, kfastQ3_K_avx2_3}}}},
	gguf.Q4_K: {avx512: accelKernels{gemm: &blockGEMM{kq: true, tiles: []gemmFunc{gemmQ4_K_1, gemmQ4_K_2, gemmQ4_K_3, gemmQ4_K_4, gemmQ4_K_5, gemmQ4_K_6}},
		fast: &blockGEMM{fast: &fastQ4K, tiles: []gemmFunc{kfastQ4_K_1, kfastQ4_K_2, kfastQ4_K_3, kfastQ4_K_4}}},
		avx2: accelKernels{fast: &blockGEMM{fast: &fastQ4K, tiles: []gemmFunc{kfastQ4_K_avx2_1, kfastQ4_K_avx2_2, kfastQ4_K_avx2_3}}}},
	gguf.Q5_K: {avx512: accelKernels{gemm: &blockGEMM{kq: true, tiles: []gemmFunc{gemmQ5_K_1, gemmQ5_K_2, gemmQ5_K_3, gemmQ5_K_4, gemmQ5_K_5, gemmQ5_K_6}},
		fast: kfastGEMM512(gguf.Q5_K, hasGFNI())},
		avx2: accelKernels{fast: &blockGEMM{fast: &fastQ5K, tiles: []gemmFunc{kfastQ5_K_avx2_1, kfastQ5_K_avx2_2, kfastQ5_K_avx2_3}}}},
	gguf.Q6_K: {avx512: accelKernels{gemm: &blockGEMM{kq: true, tiles: []gemmFunc{gemmQ6_K_1, gemmQ6_K_2, gemmQ6_K_3, gemmQ6_K_4, gemmQ6_K_5, gemmQ6_K_6}},
		fast: &blockGEMM{fast: &fastQ6K, tiles: []gemmFunc{kfastQ6_K_1, kfastQ6_K_2, kfastQ6_K_3, kfastQ6_K_4}}},
		avx2: accelKernels{fast: &blockGEMM{fast: &fastQ6K, tiles: []gemmFunc{kfastQ6_K_avx2_1, kfastQ6_K_avx2_2, kfastQ6_K_avx2_3}}}},
}

// withTypes sets k's per-type kernels from accelTypes, as of picks them.
func (k *impl) withTypes(of func(t gguf.Type) accelKernels) {
	for t := range accelTypes {
		a := of(t)
		if a.dot != nil {
			k.dot[t] = a.dot
		}
		k.gemm[t] = a.gemm
		k.fast[t] = a.fast
	}
}

// avx2 accelerates the 32-element block matmuls, the float vector and
// exp kernels, the float-weight dot products and the activation quantizers.
func avx2() *impl {
	k := *generic
	k.name = "avx2"
	k.withTypes(func(t gguf.Type) accelKernels { return accelTypes[t].avx2 })
	// float vector kernels (vecavx2_amd64.go)
	v := isaAVX2
	k.dotF32, k.dotF16, k.dotBF16 = v.DotF32, v.DotF16, v.DotBF16
	k.axpyF32, k.axpyF16, k.axpyB16 = axpyF32AVX2w, axpyF16AVX2w, axpyBF16AVX2w
	k.madF16, k.scaleF16, k.scaleF32 = madF16AVX2w, scaleF16AVX2w, scaleF32AVX2w
	k.rmsNorm, k.add, k.mul = rmsNormAVX2, addAVX2w, mulAVX2w
	k.reduceLanes = reduceLanesAVX2w
	k.attn = attnKernels{scores: scoresF16AVX2w, round: roundF16AVX2w, values: valuesF16AVX2w}
	k.tiled = tiledAVX2
	k.toF16 = toF16AVX2w
	k.rope = ropeAVX2
	k.silu, k.swiGLU, k.softmax, k.softmaxExp = v.SiLU, v.SwiGLU, v.Softmax, v.SoftmaxExp
	q := quantAVX2
	k.quantize[actQ8_0], k.quantize[actQ8_1], k.quantize[actQ8K] = q.Q8_0, q.Q8_1, q.Q8K
	k.records, k.fastRecords = q.Records, q.FastRecords
	return &k
}

func avx512() *impl {
	k := *generic
	k.name = "avx512"
	k.withTypes(func(t gguf.Type) accelKernels { return accelTypes[t].avx512 })
	v := isaAVX512
	k.dotF32, k.dotF16, k.dotBF16 = v.DotF32, v.DotF16, v.DotBF16
	k.axpyF32, k.axpyF16, k.axpyB16 = axpyF32AVX, axpyF16AVX, axpyBF16AVX
	k.madF16, k.scaleF16, k.scaleF32, k.toF16 = madF16AVX, scaleF16AVX, scaleF32AVX, toF16AVX
	k.rope = ropeAVX
	k.rmsNorm, k.softmax, k.softmaxExp = rmsNormAVX, v.Softmax, v.SoftmaxExp
	k.silu, k.swiGLU, k.add, k.mul = v.SiLU, v.SwiGLU, addAVX, mulAVX
	k.swigluOAI = swigluOAIAVX
	k.reduceLanes = reduceLanesAVX
	k.attn = attnKernels{scores: scoresF16AVX, round: roundF16AVX, values: valuesF16AVX}
	k.tiled = tiledAVX512
	q := quantAVX512
	k.quantize[actQ8_0], k.quantize[actQ8_1], k.quantize[actQ8K] = q.Q8_0, q.Q8_1, q.Q8K
	k.records, k.fastRecords = q.Records, q.FastRecords
	return &k
}

// gemmRAVX2 multiplies repacked Q4_0 weights, up to 6 tokens a pass (AVX2 kernels: the same on
// AVX-512 machines, whose extra width the 8-row groups would not fill).
var gemmRAVX2 = &blockGEMM{fast: &fastQ4_0, tiles: []gemmFunc{gemmRQ4_0_1, gemmRQ4_0_2, gemmRQ4_0_3, gemmRQ4_0_4, gemmRQ4_0_5, gemmRQ4_0_6}}
