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

// avx2 accelerates the 32-element block matmuls only.
func avx2() *impl {
	k := *generic
	k.name = "avx2"
	k.gemm[gguf.Q4_0] = &blockGEMM{bias: 8, tiles: []gemmFunc{gemmQ4_0_avx2_1, gemmQ4_0_avx2_2, gemmQ4_0_avx2_3, gemmQ4_0_avx2_4}}
	k.gemm[gguf.Q4_1] = &blockGEMM{tiles: []gemmFunc{gemmQ4_1_avx2_1, gemmQ4_1_avx2_2, gemmQ4_1_avx2_3, gemmQ4_1_avx2_4}}
	k.gemm[gguf.Q8_0] = &blockGEMM{tiles: []gemmFunc{gemmQ8_0_avx2_1, gemmQ8_0_avx2_2, gemmQ8_0_avx2_3, gemmQ8_0_avx2_4}}
	return &k
}

func avx512() *impl {
	k := *generic
	k.name = "avx512"
	k.gemm[gguf.Q4_0] = &blockGEMM{bias: 8, tiles: []gemmFunc{
		gemmQ4_0_1, gemmQ4_0_2, gemmQ4_0_3, gemmQ4_0_4, gemmQ4_0_5, gemmQ4_0_6, gemmQ4_0_7, gemmQ4_0_8}}
	k.gemm[gguf.Q4_1] = &blockGEMM{tiles: []gemmFunc{
		gemmQ4_1_1, gemmQ4_1_2, gemmQ4_1_3, gemmQ4_1_4, gemmQ4_1_5, gemmQ4_1_6, gemmQ4_1_7}}
	k.gemm[gguf.Q8_0] = &blockGEMM{bias: 128, tiles: []gemmFunc{
		gemmQ8_0_1, gemmQ8_0_2, gemmQ8_0_3, gemmQ8_0_4, gemmQ8_0_5, gemmQ8_0_6, gemmQ8_0_7, gemmQ8_0_8}}
	k.gemm[gguf.Q4_K] = &blockGEMM{kq: true, tiles: []gemmFunc{gemmQ4_K_1, gemmQ4_K_2, gemmQ4_K_3, gemmQ4_K_4, gemmQ4_K_5, gemmQ4_K_6}}
	k.gemm[gguf.Q5_K] = &blockGEMM{kq: true, tiles: []gemmFunc{gemmQ5_K_1, gemmQ5_K_2, gemmQ5_K_3, gemmQ5_K_4, gemmQ5_K_5, gemmQ5_K_6}}
	k.gemm[gguf.Q6_K] = &blockGEMM{kq: true, tiles: []gemmFunc{gemmQ6_K_1, gemmQ6_K_2, gemmQ6_K_3, gemmQ6_K_4, gemmQ6_K_5, gemmQ6_K_6}}
	k.dotF32, k.dotF16 = dotF32AVX, dotF16AVX
	k.axpyF32, k.axpyF16, k.axpyB16 = axpyF32AVX, axpyF16AVX, axpyBF16AVX
	k.madF16, k.scaleF16, k.scaleF32 = madF16AVX, scaleF16AVX, scaleF32AVX
	k.rmsNorm, k.softmax, k.softmaxExp = rmsNormAVX, softmaxAVX, softmaxExpAVX
	k.silu, k.swiGLU, k.add, k.mul = siluAVX, swiGLUAVX, addAVX, mulAVX
	k.reduceLanes = reduceLanesAVX
	k.attn = attnKernels{scores: scoresF16AVX, round: roundF16AVX, values: valuesF16AVX}
	k.quantize[actQ8_0], k.quantize[actQ8_1] = quantizeQ8_0AVX, quantizeQ8_1AVX
	k.quantize[actQ8K] = quantizeQ8KAVX
	k.records = records32AVX
	return &k
}
