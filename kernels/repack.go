package kernels

import "pagoda/gguf"

// Repacked Q4_0: llama.cpp's CPU_REPACK arithmetic.
//
// On x86 machines with AVX2, llama.cpp by default copies every Q4_0 matmul
// weight of a multiple of 8 rows into an interleaved layout (block_q4_0x8)
// and multiplies it with kernels of a different arithmetic than the plain
// vec_dot path: every block's whole integer dot product is converted once,
//
//	dst = fma(float(Σ_block (q−8)·y), f16(dw)·f16(da), dst)   block by block
//
// (ggml_gemv_q4_0_8x8_q8_0 and ggml_gemm_q4_0_8x8_q8_0, with AVX2 or
// AVX-512). That is Q4_0's fast arithmetic (fast.go), so a repacked Weight
// (Repack) is a Q4_0 weight marked Fast: MatMul matches llama.cpp's default
// configuration on it, and the plain arithmetic (and so llama.cpp's
// --no-repack) is kept for weights that are not repacked.
//
// The accelerated kernels (_asm/gemmr.go) read the rows in groups of
// repackRows, block by block: per group-block the 8 f16 scales, then four
// 32-byte chunks, chunk c holding bytes 4c..4c+3 of each row's quants.
const (
	repackRows  = 8
	repackBlock = repackRows * 18
	gemmRRec    = 40 // activation record: qs [32]int8, −8·Σqs int32, d float32
)

// Repack returns w marked for llama.cpp's repacked arithmetic when
// llama.cpp would repack it (Q4_0 and MXFP4 with a multiple of 8 rows;
// see Fast), otherwise w unchanged. Call it once, at load time, instead of
// Pack. MXFP4's block_mxfp4x8 kernels (gemv/gemm_q4_b32_8x8_q8_0_lut_avx,
// MoE experts included) have the same arithmetic with the block's
// E8M0Half(e) for f16(dw): MXFP4's fast arithmetic (mxfp4.go).
func Repack(w Weight) Weight {
	if w.Type != gguf.Q4_0 && w.Type != gguf.MXFP4 {
		return w
	}
	return fast(def, w)
}

// fastQ4_0 is Q4_0's fast record: llama.cpp's block_q4_0x8 arithmetic.
var fastQ4_0 = fastTraits{act: actQ8_0, block: 32, rows: repackRows, groupBlock: repackBlock,
	interleave: interleaveQ4(2), dot: dotQ4_0RGeneric, rec: recordsBias8}

// interleaveQ4 returns the group-block writer of a 4-bit type whose blocks
// start with hdr bytes of f16 fields: each field of the 8 rows, then
// four 32-byte chunks, chunk c holding bytes 4c..4c+3 of each row's quants
// (low nibbles elements 4c..4c+3, high nibbles 16+4c..16+4c+3).
func interleaveQ4(hdr int) func(dst []byte, src [][]byte) {
	return func(dst []byte, src [][]byte) {
		for i, blk := range src {
			for f := 0; f < hdr; f += 2 {
				copy(dst[8*f+2*i:][:2], blk[f:f+2])
			}
			for c := range 4 {
				copy(dst[8*hdr+32*c+4*i:][:4], blk[hdr+4*c:][:4])
			}
		}
	}
}

// dotQ4_0RGeneric is one (row, token) of the repacked arithmetic.
func dotQ4_0RGeneric(w []byte, a *actRow) float32 {
	var acc float32
	for b := range len(a.qs) / 32 {
		blk := (*[18]byte)(w[b*18:])
		y := (*[32]int8)(a.qs[b*32:])
		var sum int32
		for j, q := range blk[2:] {
			sum += (int32(q&15)-8)*int32(y[j]) + (int32(q>>4)-8)*int32(y[j+16])
		}
		acc = fma32(float32(sum), f16Table[le16(blk[0:])]*a.d[b], acc)
	}
	return acc
}
