package llama

import (
	"fmt"
	"testing"

	"pagoda/gguf"
	"pagoda/kernels"
	"pagoda/model/synth"
)

// The families on the model layer (qwen3, qwen3moe, gemma3, phi3, gpt-oss, and Llama 3.x's
// scaling) through the block stack's harness: tiny synthetic models of each
// at its family's layout (model/synth), 4 query heads over 2 KV heads
// (Gemma: 1, as its small models), so that a two-rank split divides.
//
// tpBound is the bound on |logprob(TP=2) − logprob(TP=1)|: a two-rank
// split sums the row-parallel products in two partial sums, another
// rounding, which the int8 activation quantization of the next layer can
// turn into a whole quantization step. Gemma's post-norms scale the block
// outputs (here of RMS 0.002–0.02) up to the residual's before the add, so
// such a step is ~100× more visible there (measured: 0.0135 on a
// 300-token vocabulary, 0 on this one; the greedy tokens stay equal).
var familyDims = []struct {
	family, dims string
	window       int
	tpBound      float64
}{
	{"qwen3", "128,256,2,4,2,512", 0, tpBound},
	{"qwen3moe", "128,256,2,4,2,512", 0, tpBound}, // 16 experts of 256, 4 per token
	{"gemma3", "128,256,6,4,2,512,64", 8, 0.05},   // 6 layers: five local, one global
	{"phi3", "128,256,2,4,2,512", 0, tpBound},
	{"llama3", "128,256,2,4,2,512", 0, tpBound},
	// 8 MXFP4 experts of 64, 4 per token; layer 0 local, 1 global; sinks
	{"gpt-oss", "128,64,2,4,2,512", 8, tpBound},
}

// writeFamily writes a tiny synthetic model of a family.
func writeFamily(t *testing.T, family, dims string, window int, typ gguf.Type) string {
	t.Helper()
	shape, err := synth.ParseArchDims(family, dims)
	if err != nil {
		t.Fatal(err)
	}
	if window > 0 {
		shape.SlidingWindow = window
	}
	shape.ContextLen = 512
	return writeSynth(t, synth.Options{Shape: shape, Type: typ, Seed: 11})
}

// TestFamiliesBatchInvariance: each family's logits are bit-identical
// alone and batched (a full prefill, a chunk on cached tokens, a decode),
// for every attention path, 1 and 3 threads; the prompts cross Gemma's
// 8-position window.
func TestFamiliesBatchInvariance(t *testing.T) {
	for _, f := range familyDims {
		path := writeFamily(t, f.family, f.dims, f.window, gguf.Q8_0)
		for _, mode := range []kernels.AttnMode{kernels.AttnMatMul, kernels.AttnFlash, kernels.AttnTiled} {
			for _, threads := range []int{1, 3} {
				t.Run(fmt.Sprintf("%s/mode%d/threads%d", f.family, mode, threads), func(t *testing.T) {
					m := openModel(t, path, Options{Threads: threads, Attention: mode, ExactArithmetic: mode != kernels.AttnTiled})
					checkBatchInvariance(t, m)
				})
			}
		}
	}
}

// TestFamiliesTensorParallel: each family split over two in-process ranks
// decodes the same greedy tokens as one, log-probabilities within tpBound;
// and two micro-batches (dual-batch overlap) equal one batch bit for bit
// at two ranks.
func TestFamiliesTensorParallel(t *testing.T) {
	for _, f := range familyDims {
		t.Run(f.family, func(t *testing.T) {
			path := writeFamily(t, f.family, f.dims, f.window, gguf.Q8_0)
			prompts := [][]int32{{1, 2, 3}, {7, 100, 250, 9, 4, 17, 33, 8, 90, 12, 5}}
			checkTP(t, path, 2, Options{Threads: 1}, prompts, 16, f.tpBound)
			checkDBO(t, path, 2, 6)
		})
	}
}

// TestFamiliesFastArithmetic: the fast arithmetic (records, tiled
// attention) stays within the exact arithmetic's own spread (llama.cpp's
// two attention paths) on every family, Q4_0 and Q4_K.
func TestFamiliesFastArithmetic(t *testing.T) {
	for _, f := range familyDims {
		for _, typ := range []gguf.Type{gguf.Q4_0, gguf.Q4_K} {
			t.Run(f.family+"/"+typ.String(), func(t *testing.T) {
				dims := f.dims
				if typ == gguf.Q4_K {
					dims = "256" + dims[3:] // K-quant rows of 256
				}
				path := writeFamily(t, f.family, dims, f.window, typ)
				var logits [3][]float32
				for i, opt := range []Options{{ExactArithmetic: true}, {ExactArithmetic: true, Attention: kernels.AttnFlash}, {Attention: kernels.AttnTiled}} {
					opt.Threads = 2
					logits[i] = prefillLogits(t, openModel(t, path, opt), []int32{1, 17, 42, 99, 7, 3, 250, 11, 12, 13, 14})
				}
				floor, scale := maxDiff(logits[1], logits[0])
				diff, _ := maxDiff(logits[2], logits[0])
				if diff > max(2*floor, 2e-3*scale) {
					t.Errorf("fast and exact logits differ by %g (exact vs flash: %g; largest |logit| %g)", diff, floor, scale)
				}
			})
		}
	}
}
