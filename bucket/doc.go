// Package bucket maps every step shape the engine can produce to one of a
// bounded set of buckets, so that warm-up can capture one plan per bucket and
// a steady-state step can reuse the plan of the smallest bucket that holds it.
//
// # Shapes
//
// A shape is (batch size, query length, blocks). Its meaning depends on the
// phase and, for prompts, on merged prefill, exactly as in vllm-gaudi:
//
//	prompt (default)   bs sequences, each padded to QueryLen query tokens and
//	                   Blocks context blocks (context = tokens already in the
//	                   KV cache before this step, from prefix-cache hits,
//	                   earlier chunks or recompute):
//	                     seq 0 |ctx ctx ctx|q q q q|      Blocks   = 3
//	                     seq 1 |ctx ·   ·  |q q · ·|      QueryLen = 4
//	prompt (merged)    the step's prompts concatenated into one flat sequence:
//	                   BatchSize 1, QueryLen = Σ query tokens, Blocks = Σ
//	                   context blocks; up to MaxNumPrefillSeqs sequences share
//	                   the QueryLen tokens.
//	decode             bs sequences of one query token each; Blocks is the
//	                   total number of KV blocks of the batch (the length of
//	                   the flattened block list), so bs ≤ Blocks.
//
// Set.StepShape builds the shape of a real step in these terms, Set.Find maps
// it to a bucket and Set.PaddingCost says how many padding tokens that costs.
//
// # Ranges
//
// Each dimension has a warm-up range produced by one of two strategies from a
// per-dimension config:
//
//   - Exponential (the default, vllm-gaudi's ExponentialBucketingStrategy):
//     (min, step, max, limit); values
//     min·(max/min)^(i/(limit−1)), i < limit, rounded up to a multiple of step
//     and deduplicated. Its configs are derived from the engine limits with
//     vllm-gaudi's formulas; user overrides are ignored with a warning.
//   - Linear (vLLM's warmup_range): (min, step, max); values double from min
//     while below step, then grow by step up to max. Every field can be
//     overridden from flags or PAGODA_{PROMPT,DECODE}_{BS,SEQ,BLOCK}_BUCKET_
//     {MIN,STEP,MAX} environment variables.
//
// The buckets of a phase are the cartesian product of its three ranges,
// filtered to shapes a step can have (see New).
//
// # Attention tiles
//
// A plan sized for a bucket must launch enough query tiles for the worst
// step that fits it. When N sequences share M query tokens (merged prefill),
// the worst split gives N−1 sequences one token and the last the rest
// (the case FastDeploy's captured prefill graphs met); MaxTiles counts its
// tiles.
package bucket
