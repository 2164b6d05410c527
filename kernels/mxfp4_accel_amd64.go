//go:build amd64 && !noasm

package kernels

import "golang.org/x/sys/cpu"

// mxfp4GEMM512 returns MXFP4's AVX-512 fast kernels (_asm/mxfp4.go): with
// vbmi the ones that look the values up by VPERMB (AVX512_VBMI: Ice Lake,
// Zen 4 and later), otherwise the VPSHUFB ones (Cascade Lake). Both
// compute the same bits.
func mxfp4GEMM512(vbmi bool) *blockGEMM {
	if vbmi {
		return &blockGEMM{fast: &fastMXFP4, pairs: true, tiles: []gemmFunc{gemmFMXFP4_vbmi_1, gemmFMXFP4_vbmi_2,
			gemmFMXFP4_vbmi_3, gemmFMXFP4_vbmi_4, gemmFMXFP4_vbmi_5, gemmFMXFP4_vbmi_6, gemmFMXFP4_vbmi_7, gemmFMXFP4_vbmi_8}}
	}
	return &blockGEMM{fast: &fastMXFP4, pairs: true, tiles: []gemmFunc{gemmFMXFP4_1, gemmFMXFP4_2,
		gemmFMXFP4_3, gemmFMXFP4_4, gemmFMXFP4_5, gemmFMXFP4_6, gemmFMXFP4_7, gemmFMXFP4_8}}
}

// hasVBMI reports AVX512_VBMI (VPERMB).
func hasVBMI() bool { return cpu.X86.HasAVX512VBMI }
