// Package kernels holds the numeric kernels of the forward pass: matrix
// multiplication on weights of every GGUF type, embedding lookup, RMSNorm,
// RoPE, softmax, SwiGLU, elementwise ops and paged attention, plus the
// persistent worker Pool that runs them on several cores.
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
// # Numerics: reproducing llama.cpp
//
// Quantized weights are multiplied the way ggml's x86 CPU backend does it,
// so greedy outputs match llama.cpp: each row of activations is quantized
// once per block into the weight type's "vec_dot" format (Q8_0 for Q4_0,
// Q5_0 and Q8_0; Q8_1 for Q4_1 and Q5_1; Q8_K for the K-quants; F16/BF16
// rounding for F16/BF16 weights), then every block contributes an exact
// integer dot product times its scales. For the 32-element block types the
// result is bit-identical to ggml's AVX2 kernels (checked against ggml's own
// mul_mat for Q4_1 and Q8_0).
//
// Attention follows one of llama.cpp's two CPU paths (AttnMode): the
// unfused one (flash attention off) or flash attention. They differ in where
// values are rounded to the cache's precision, which changes greedy choices
// of small quantized models.
//
// # Fixed reduction orders
//
// Every reduction has one order that never depends on the batch size, the
// thread count or where a row sits in the batch, so every output element is
// bit-identical however the work is partitioned (batch invariance). Dot
// products use eight float32 lanes reduced as
// ((l0+l4)+(l2+l6))+((l1+l5)+(l3+l7)): for 32-element blocks lane k takes
// elements 4k..4k+3 of every block (ggml's AVX2 layout), for K-quants and
// float rows lane k takes the elements ≡ k (mod 8). RMSNorm and softmax sum
// in float64 in index order, as ggml does.
//
// Fused multiply-add is computed as float32(float64(a)*float64(b)+float64(c)):
// the product of two float32 values is exact in float64, so this equals a
// single-rounding float32 FMA except in the vanishingly rare double-rounding
// case where accumulator and product differ in magnitude by more than 2^29.
package kernels
