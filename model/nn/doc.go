// Package nn is the model layer between model.Model and the kernels: the
// building blocks every architecture is wired from (nano-vllm's layers/,
// Ollama's ml/nn), and the block stack that runs them on a flat paged
// batch.
//
// The building blocks:
//
//   - Linear: a weight matrix with its optional bias and tensor-parallel
//     Role (Column: rank r keeps its rows of the output; Row: its columns
//     of the input, its partial output summed over the ranks; Replicated).
//     Loading, splitting, repacking for the arithmetic and releasing
//     unread file pages live on it.
//   - RMSNorm weights, whole rows or per head (Qwen3's and Gemma's q/k
//     norms); Gemma's (1 + w) form is written into the GGUF by llama.cpp's
//     converter, so a file's norm weight is always used as w.
//   - RoPE (normal or NeoX pairs, the scalings of model.Rope, a partial
//     rotary dimension, LongRoPE factors), one kernels.Rope per distinct
//     configuration: a layer picks one (Gemma 3's local and global bases).
//   - Attention: grouped-query heads, optional per-head q/k RMSNorm, a
//     sliding window, a query scale (llama.cpp's ggml_scale of Q before a
//     unit-scaled attention: Gemma's query_pre_attn_scalar, Phi-3).
//   - FFN: a gated feed-forward, SwiGLU or GELU-tanh (kernels.GLU), run as
//     one fused pool job.
//   - MoE: a mixture of experts in place of the FFN: a router, top-k
//     gating (softmax then top-k with renormalisation; top-k then softmax),
//     gated experts run grouped by expert as one pool job (kernels.Pool.MoE),
//     each token's expert outputs summed in the rank order of its choices;
//     under tensor parallelism split like an FFN, or whole experts per
//     rank with Options.ExpertParallel (ExpertRange).
//   - Block: pre-norms, optional post-norms (Gemma 2/3: the block output
//     is normalised before the residual add), attention and FFN; or
//     BERT's post-layer-norm (LayerNorm with bias after each residual
//     add), bidirectional attention without RoPE and a plain GELU FFN.
//   - Encoder: an encoder-only model's position and token-type embeddings
//     and their LayerNorm; no head (embeddings only, encoder.go).
//
// Model is the block stack: token embeddings (optionally scaled), the
// blocks, the output norm and head (optionally soft-capped). It owns the
// scratch buffers, batch validation, the tensor-parallel all-reduces and
// the dual-batch-overlap stage interleave (stages.go). An architecture is
// a short package that reads its GGUF metadata, names its tensors and
// wires these blocks (see docs/adding-a-model.md); nothing here knows a
// family's name.
package nn
