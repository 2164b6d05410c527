package kernels

import "pagoda/gguf"

// MXFP4 weights (gguf.MXFP4, gpt-oss's experts) meet Q8_0 activations, as
// ggml's vec_dot_type for the type: every block's 32 products of a
// doubled E2M1 value (gguf.KValuesMXFP4, |v| ≤ 12) and an int8 are summed
// exactly in integers, then scaled by d = E8M0Half(e)·d_a. Plain (Pack,
// llama.cpp's --no-repack), its rows are multiplied by dotMXFP4Generic in
// every implementation (no accelerated kernel reproduces ggml's pairwise
// accumulators yet). Marked Fast or Repack, they take the fast arithmetic,
// which is also llama.cpp's repacked one (its default on AVX2), run by
// MXFP4's own kernels on a copy as large as the weights (below).

// dotMXFP4Generic: block = e u8, qs[16]; element j = kvalue(qs[j]&15),
// element j+16 = kvalue(qs[j]>>4).
//
// bit-exact contract (ggml_vec_dot_mxfp4_q8_0's AVX2 loop, which the
// AVX-512 build runs; llama.cpp's ggml-cpu/arch/x86/quants.c): blocks go
// in pairs to two sets of eight float32 lanes, lane k taking elements
// 4k..4k+3 of the block (the low nibbles' products in lanes 0–3, the high
// nibbles' in 4–7), each lane's exact integer sum times d = d_a·E8M0Half(e)
// (an exact product) added by a fused multiply-add, the even blocks' to
// the first set, the odd blocks' to the second; the sets are added lane
// by lane and reduced by hsum8. An odd last block adds d·(its integer
// sum) to that by a fused multiply-add.
func dotMXFP4Generic(w []byte, a *actRow) float32 {
	var acc [2][8]float32
	nb := len(a.qs) / 32
	ib := 0
	for ; ib+1 < nb; ib += 2 {
		for s := range 2 {
			blk := (*[17]byte)(w[(ib+s)*17:])
			y := (*[32]int8)(a.qs[(ib+s)*32:])
			var lanes [8]int32
			mxfp4Lanes(blk, y, &lanes)
			addLanes(&acc[s], a.d[ib+s]*gguf.E8M0Half(blk[0]), &lanes)
		}
	}
	var sum [8]float32
	for l := range sum {
		sum[l] = acc[0][l] + acc[1][l]
	}
	r := hsum8(&sum)
	if ib < nb {
		blk := (*[17]byte)(w[ib*17:])
		var lanes [8]int32
		mxfp4Lanes(blk, (*[32]int8)(a.qs[ib*32:]), &lanes)
		var isum int32
		for _, v := range lanes {
			isum += v
		}
		r = fma32(a.d[ib]*gguf.E8M0Half(blk[0]), float32(isum), r)
	}
	return r
}

// mxfp4Lanes sets lanes[k] to the integer sum of elements 4k..4k+3 of the
// block's products with y (elements 16.. are the high nibbles).
func mxfp4Lanes(blk *[17]byte, y *[32]int8, lanes *[8]int32) {
	lo, hi := &mxfp4Lo, &mxfp4Hi
	for k := range 4 {
		q := (*[4]byte)(blk[1+4*k:])
		a := (*[4]int8)(y[4*k:])
		b := (*[4]int8)(y[16+4*k:])
		lanes[k] = int32(lo[q[0]])*int32(a[0]) + int32(lo[q[1]])*int32(a[1]) +
			int32(lo[q[2]])*int32(a[2]) + int32(lo[q[3]])*int32(a[3])
		lanes[k+4] = int32(hi[q[0]])*int32(b[0]) + int32(hi[q[1]])*int32(b[1]) +
			int32(hi[q[2]])*int32(b[2]) + int32(hi[q[3]])*int32(b[3])
	}
}

// mxfp4Lo and mxfp4Hi are the doubled E2M1 values of a byte's low and
// high nibbles (indexed by the byte: no bounds checks).
var mxfp4Lo, mxfp4Hi = func() (lo, hi [256]int8) {
	for q := range 256 {
		lo[q], hi[q] = gguf.KValuesMXFP4[q&15], gguf.KValuesMXFP4[q>>4]
	}
	return lo, hi
}()

// The fast arithmetic of MXFP4 is Q8_0's (fast_generic.go): per (row,
// token) and block in block order, acc = fma(float(isum), d·d_a, acc),
// isum the exact integer dot of the block's doubled E2M1 values
// (gguf.KValuesMXFP4) and the activation quants, d = E8M0Half(e) (a power
// of two, subnormal for e < 2, exact in float32 for every e) and d·d_a a
// float32 product. It is llama.cpp's repacked MXFP4 (block_mxfp4x8,
// gemv/gemm_q4_b32_8x8_q8_0_lut_avx in ggml-cpu/arch/x86/repack.cpp) bit
// for bit (TestGoldenRepackMXFP4), so Repack marks MXFP4 weights too.
//
// The accelerated kernels (gemmFMXFP4_*, _asm/mxfp4.go) read MXFP4's own
// interleaved copy, 17 bytes per row and block as in the file (17/32 bytes
// per weight, no other records): per group of repackRows rows and block,
// the rows' scale bytes e xor 0x80 (e − 128 as an int8), then four
// 32-byte chunks of nibbles laid out as Q4_0's (interleaveQ4). They expand
// the nibbles to the doubled E2M1 values with a byte shuffle (VPSHUFB, or
// VPERMB with AVX512_VBMI: mxfp4GEMM512) and build d exactly from e,
// for every e, so every MXFP4 weight with a multiple of repackRows rows
// takes them. The activation records are Q8_0's
// (recordsBias128): the AVX-512 kernels feed the values as w + 128 to
// VPDPBUSD, the record's −128·Σy making the sum exactly Σ w·y (the AVX2
// ones multiply |w| by sign(w)·y, as Q8_0's, and leave it unused).
var fastMXFP4 = fastTraits{act: actQ8_0, block: 32, rows: repackRows, groupBlock: repackRows * 17,
	interleave: interleaveMXFP4, dot: dotMXFP4FGeneric, rec: recordsBias128}

// dotMXFP4FGeneric is the fast arithmetic's dot product of an MXFP4 row
// as stored in the file.
func dotMXFP4FGeneric(w []byte, a *actRow) float32 {
	var acc float32
	for b := range len(a.qs) / 32 {
		blk := (*[17]byte)(w[b*17:])
		y := (*[32]int8)(a.qs[b*32:])
		var sum int32
		for j, q := range (*[16]byte)(blk[1:]) {
			sum += int32(mxfp4Lo[q])*int32(y[j]) + int32(mxfp4Hi[q])*int32(y[j+16])
		}
		acc = fma32(float32(sum), gguf.E8M0Half(blk[0])*a.d[b], acc)
	}
	return acc
}

// interleaveMXFP4 writes a group-block of MXFP4's interleaved layout: the
// rows' scale bytes xor 0x80, then four 32-byte chunks, chunk c holding
// bytes 4c..4c+3 of each row's nibbles (low nibbles elements 4c..4c+3,
// high nibbles 16+4c..16+4c+3).
func interleaveMXFP4(dst []byte, src [][]byte) {
	for i, blk := range src {
		dst[i] = blk[0] ^ 0x80
		for c := range 4 {
			copy(dst[repackRows+32*c+4*i:][:4], blk[1+4*c:][:4])
		}
	}
}
