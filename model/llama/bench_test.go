package llama

import (
	"testing"

	"pagoda/internal/testmodel"
	"pagoda/model"
)

// BenchmarkSmolLM2Decode measures single-sequence decode steps of the
// default model against a 64-token context (tok/s).
func BenchmarkSmolLM2Decode(b *testing.B) {
	m := openModel(b, testmodel.Default(b), Options{})
	kv, err := m.NewKVCache(8, 16, model.KVF16)
	if err != nil {
		b.Fatal(err)
	}
	prompt := make([]int32, 64)
	for i := range prompt {
		prompt[i] = int32(100 + i)
	}
	d := newDecoder(m, kv, &blockAlloc{total: 8}, prompt)
	d.next(b)
	d.push(42)
	d.alloc.grow(b, d.s, len(d.s.tokens), kv.BlockSize)
	batch := &model.Batch{}
	addSeq(batch, d.s, kv.BlockSize, true)
	logits := make([]float32, m.Config().VocabSize)
	b.ResetTimer()
	for b.Loop() {
		if err := m.Forward(batch, kv, logits); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "tok/s")
}
