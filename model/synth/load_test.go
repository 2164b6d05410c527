package synth

import (
	"cmp"
	"math"
	"path/filepath"
	"testing"

	"pagoda/gguf"
	"pagoda/model"
	_ "pagoda/model/archs" // registers every architecture
)

// TestSynthModelRuns writes tiny models to disk, loads them with pagoda and
// runs a prefill step: the logits must be finite, and not flat (std ≥ 0.1
// on these unit-RMS hidden states, quantized or drawn directly).
func TestSynthModelRuns(t *testing.T) {
	qwen := tiny
	qwen.Arch = "qwen2"
	for _, c := range []struct {
		s    Shape
		typ  gguf.Type
		mix  string
		draw Draw
	}{{tiny, gguf.Q4_0, "", DrawAuto}, {tiny, gguf.Q4_K, "", DrawAuto}, {qwen, gguf.Q8_0, "", DrawAuto}, {tinyQwen3MoE, gguf.Q8_0, "", DrawAuto},
		{tiny, 0, "Q4_K_M", DrawDirect}, {tinyQwen3MoE, 0, "Q5_K_M", DrawDirect}, {qwen, gguf.Q4_1, "", DrawDirect}} {
		t.Run(c.s.Arch+"/"+cmp.Or(c.mix, c.typ.String())+"/"+c.draw.String(), func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "m.gguf")
			if err := Write(path, Options{Shape: c.s, Type: c.typ, Mix: c.mix, Draw: c.draw, Seed: 9}); err != nil {
				t.Fatal(err)
			}
			m, _, err := model.Load(path, model.LoadOptions{Threads: 1})
			if err != nil {
				t.Fatal(err)
			}
			defer m.Close()
			kv, err := m.NewKVCache(2, 16, model.KVF16)
			if err != nil {
				t.Fatal(err)
			}
			b := &model.Batch{Tokens: []int32{1, 7, 42}, Positions: []int32{0, 1, 2}, SlotMapping: []int32{0, 1, 2},
				QueryStart: []int32{0, 3}, ContextLens: []int32{3}, BlockTables: [][]int32{{0}}, LogitIndices: []int32{2}}
			logits := make([]float32, c.s.VocabSize)
			if err := m.Forward(b, kv, logits); err != nil {
				t.Fatal(err)
			}
			var sum, sq float64
			for i, v := range logits {
				if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
					t.Fatalf("logit %d = %v", i, v)
				}
				sum, sq = sum+float64(v), sq+float64(v)*float64(v)
			}
			n := float64(len(logits))
			if sd := math.Sqrt(sq/n - sum*sum/n/n); sd < 0.1 {
				t.Fatalf("logits of std %.3g: flat", sd)
			}
		})
	}
}
