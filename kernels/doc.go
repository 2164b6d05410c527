// Package kernels holds the numeric kernels of the forward pass: matrix
// multiplication on weights of every GGUF type, embedding lookup, RMSNorm,
// RoPE, softmax, SwiGLU, elementwise ops and paged attention, plus the
// persistent worker Pool that runs them on several cores.
//
// # Generated kernels
//
// The assembly is generated with avo by the module in _asm, one family per
// file pair (family_amd64.s, family_stubs_amd64.go; see generate.go). The
// avx512 implementation needs AVX-512 F/BW/DQ/VL with VNNI, the avx2 one
// AVX2 and FMA (accel_amd64.go); each weight type's kernels are chosen in
// accelTypes.
//
//	family      ISA             serves
//	gemm32      AVX-512 VNNI    MatMul on Q4_0, Q4_1, Q8_0 (rows as stored, and Pack's four-row layout)
//	gemm32avx2  AVX2            MatMul on Q4_0, Q4_1, Q8_0
//	gemm5       AVX-512 VNNI    MatMul on Q5_0, Q5_1
//	gemmk       AVX-512 VNNI    MatMul on Q4_K, Q5_K, Q6_K
//	kq23        AVX-512 VNNI    MatMul on Q2_K, Q3_K
//	gemmr       AVX2            MatMul on repacked Q4_0 (Repack; fast Q4_0 under avx2)
//	gemmq       AVX-512 VNNI    fast-arithmetic MatMul (Fast) on Q4_0, Q4_1, Q5_0, Q5_1, Q8_0
//	gemmqavx2   AVX2            fast-arithmetic MatMul on Q4_1, Q5_0, Q5_1, Q8_0
//	mxfp4       AVX-512 VNNI,   fast-arithmetic MatMul on MXFP4 (its 17-byte interleaved nibbles,
//	            AVX2            values by byte shuffle; VPERMB with AVX512_VBMI)
//	moe         AVX-512         gpt-oss's expert activation (swiglu_oai, glibc's expf in float64 lanes)
//	kfast       AVX-512 VNNI    fast-arithmetic MatMul on Q2_K, Q3_K, Q4_K, Q5_K, Q6_K (16-row groups;
//	            (GFNI)          Q5_K's one-token kernel moves its fifth bits by VGF2P8AFFINEQB)
//	kfastavx2   AVX2            the same
//	gemmf       AVX-512         MatMul on F32, F16, BF16; the BF16 pairwise dot
//	quant       AVX-512         activation quantizers Q8_0, Q8_1, Q8_K; gemm32 and fast records
//	quantavx2   AVX2            the same
//	vec         AVX-512         F32/F16/BF16 dot products (float-weight rows), axpy,
//	                            scale, RMSNorm, SiLU, SwiGLU, softmax exp, add, mul
//	vecavx2     AVX2            the same
//	rope        AVX-512, AVX2   RoPE, normal and NeoX
//	attn        AVX-512         attention over the F16 cache: scores, scaling, values
//	attnavx2    AVX2            the same, and float32 to F16 rows
//	tiled       AVX-512         AttnTiled: F16 and Q8_0 blocks to float32, block scores, values;
//	                            scores and values on F16 rows in place
//	tiledavx2   AVX2            the same
//	prefetch    any amd64       cache hints: weight lines, gathered KV rows
//	ceil        AVX-512, AVX2   bandwidth and peak probes of `pagoda bench ceilings`
//
// In the exact arithmetic, types without a kernel in an implementation
// (Q5_0, Q5_1 and the K-quants under avx2; MXFP4 everywhere, mxfp4.go)
// use the generic dot product with that implementation's activation
// quantizers. MXFP4's fast arithmetic, which is also llama.cpp's
// repacked MXFP4 (Repack), is Q8_0's (exact: E2M1 values are integers
// once doubled, E8M0 scales powers of two), run by the mxfp4 family on an
// interleaved copy as large as the weights.
//
// # Implementations
//
// Every kernel has a portable Go reference in a *_generic.go file, which is
// always built. The hot loops are reached through a small table of function
// values (impl); at start-up the package picks the best table the CPU
// supports (see dispatch.go). The `noasm` build tag, or the environment
// variable PAGODA_NOASM=1, forces the generic reference. Tests run every case
// against every available implementation.
//
// # Numerics: the fast arithmetic and the bit-exact contract with llama.cpp
//
// Quantized weights have two arithmetics. Both quantize each activation
// row once per block into the weight type's vec_dot format (Q8_0 for Q4_0,
// Q5_0 and Q8_0; Q8_1 for Q4_1 and Q5_1; Q8_K for the K-quants) and sum
// every block's products exactly in integers; they differ in how the
// blocks' sums meet the scales.
//
// The fast arithmetic (fast.go; Fast; the default of model loading) is,
// per (row, token) and block in block order, acc = fma(float(isum),
// dw·da, acc), plus acc = fma(m, d_a·Σq_a, acc) for the types with a
// minimum: one conversion and one or two FMAs per block, so that a SIMD
// lane can be a weight row of an interleaved row group. For Q4_0 it is
// llama.cpp's repacked arithmetic (ggml_gemv/gemm_q4_0_8x8_q8_0) bit for
// bit. It differs from the exact one by float rounding only; `pagoda bench
// kld` measures what that does to a model's outputs.
//
// The exact arithmetic (model.LoadOptions.ExactArithmetic) computes
// exactly what ggml's CPU backend computes in llama.cpp's single-token
// decode path on an AVX-512 x86 build (llama-cpp-python 0.3.36, GCC 12,
// glibc 2.36), operation by operation, so greedy outputs and
// log-probabilities are identical to llama.cpp's. Each kernel's doc
// comment states its part of the contract ("bit-exact contract: …");
// golden_test.go checks them against vectors produced by ggml's own
// functions and glibc (testdata/ggml/make_golden.py), and the model tests
// check whole generations against llama.cpp. The float kernels below
// (norms, RoPE, softmax, attention) follow this contract in both modes.
//
// Whichever arithmetic, accelerated implementations reproduce the generic
// results bit for bit.
//
//   - Exact quantized matmul: every block adds its exact integer dot
//     product times its scales to eight float32 lanes (ggml's AVX2 layout:
//     lane k takes elements 4k..4k+3 of each 32 elements; K-quants add once
//     per 256-element super-block), reduced by
//     hsum8 = ((l0+l4)+(l2+l6))+((l1+l5)+(l3+l7)); minimum terms as each
//     type's ggml kernel (dot_generic.go, kquant_generic.go).
//   - Repacked Q4_0 (Repack; llama.cpp's default on x86 with AVX2, where it
//     repacks Q4_0 matrices of a multiple of 8 rows): Q4_0's fast
//     arithmetic, so the exact mode keeps it where llama.cpp does
//     (repack.go); `--no-repack` keeps the plain vec_dot arithmetic.
//   - Fast K-quants (kfast_generic.go): one int32 per super-block,
//     isum = Σ_g sc_g·Σ_{e∈g} q·y, acc = fma(float(isum), d·da, acc), then
//     for Q2_K/Q4_K/Q5_K acc = fma(float(Σ_g m_g·bsum_g), −(dmin·da), acc).
//   - F32/F16 rows (F16 and F32 weights, attention scores and values):
//     ggml_vec_dot_f32/f16 with AVX-512, 64 lanes (lane i mod 64) reduced by
//     reduce64; BF16: VDPBF16PS's pairwise layout (dotBF16Generic).
//   - RMSNorm: squares summed in float64 in index order. Softmax: 16-wide
//     blocks of ggml_v_expf, each block summed in float32 then in float64.
//     SiLU/SwiGLU: ggml_v_silu on 16-wide blocks from each row's start.
//   - RoPE: glibc's sincosf on ggml's float32 angle recurrence; flash
//     attention and scalar tails use glibc's expf (libm.go).
//   - Attention: llama.cpp's unfused path or flash attention (AttnMode).
//
// Fused multiply-adds round once, as VFMADD does (fma32); where ggml's
// compiled code does not fuse (GCC contracts some expressions and not
// others), the kernels round the product first.
//
// # Fixed reduction orders
//
// Every reduction has one order that never depends on the batch size, the
// thread count or where a row sits in the batch, so every output element is
// bit-identical however the work is partitioned (batch invariance). Orders
// that ggml ties to positions (attention values, softmax blocks) use the
// position in the sequence, which is llama.cpp's KV cell for a sequence
// that starts at cell 0.
package kernels
