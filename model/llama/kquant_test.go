package llama

import (
	"math"
	"testing"

	"pagoda/gguf"
	"pagoda/kernels"
	"pagoda/model/synth"
)

// TestKQuantFastArithmetic: on tiny synthetic models of every K-quant,
// the default load gives every matrix (the output head included) the fast
// arithmetic and ExactArithmetic none; the fast logits are batch-invariant
// (a prefill, a chunk and a decode token batched or alone, bit for bit, on
// 3 threads) and differ from the exact ones by no more than the exact
// arithmetic's own rounding noise (its flash-attention variant, which
// rounds differently: on these random models one activation quant flipped
// by rounding moves the logits by about 1%) or 1e-3 of the largest logit.
func TestKQuantFastArithmetic(t *testing.T) {
	shape := tinyShape("tiny", 256, 512, 448)
	for _, typ := range []gguf.Type{gguf.Q4_K, gguf.Q6_K, gguf.Q5_K, gguf.Q3_K, gguf.Q2_K} {
		t.Run(typ.String(), func(t *testing.T) {
			path := writeSynth(t, synth.Options{Shape: shape, Type: typ, Seed: 5})
			var logits [3][]float32
			for i, opt := range []Options{{ExactArithmetic: true}, {ExactArithmetic: true, Attention: kernels.AttnFlash}, {}} {
				opt.Threads = 3
				m := openModel(t, path, opt)
				exact := opt.ExactArithmetic
				for _, w := range m.Matrices() {
					if w.Name != "token_embd" && w.W.Repacked() == exact {
						t.Fatalf("exact %v: matrix %s has Repacked() = %v", exact, w.Name, w.W.Repacked())
					}
				}
				logits[i] = prefillLogits(t, m, []int32{1, 17, 42, 99, 7})
				if !exact {
					checkBatchInvariance(t, m)
				}
			}
			floor, scale := maxDiff(logits[1], logits[0])
			diff, _ := maxDiff(logits[2], logits[0])
			if diff > max(floor, 1e-3*scale) {
				t.Errorf("fast and exact logits differ by %g (exact vs flash: %g; largest |logit| %g)", diff, floor, scale)
			}
		})
	}
}

// maxDiff returns max |a−b| and max |b|.
func maxDiff(a, b []float32) (diff, scale float64) {
	for j := range b {
		scale = max(scale, math.Abs(float64(b[j])))
		diff = max(diff, math.Abs(float64(a[j]-b[j])))
	}
	return diff, scale
}
