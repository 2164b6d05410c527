package sample

import "testing"

// BenchmarkSample samples from a SmolLM2-sized vocabulary (49152) under
// common parameter sets. Run with -benchtime=200x on a shared machine.
func BenchmarkSample(b *testing.B) {
	const vocab = 49152
	logits := randLogits(31, vocab, 3)
	prompt := make([]int32, 200)
	for i := range prompt {
		prompt[i] = int32(i * 37 % vocab)
	}
	configs := []struct {
		name string
		edit func(*Params)
	}{
		{"greedy", func(p *Params) { p.Temperature = 0 }},
		{"greedy_penalties", func(p *Params) { p.Temperature = 0; p.RepetitionPenalty = 1.1; p.PresencePenalty = 0.5 }},
		{"temperature", func(p *Params) { p.Temperature = 0.8 }},
		{"top_k50", func(p *Params) { p.TopK = 50 }},
		{"top_p0.9", func(p *Params) { p.TopP = 0.9 }},
		{"top_k50_top_p0.9", func(p *Params) { p.TopK = 50; p.TopP = 0.9 }},
		{"min_p0.05", func(p *Params) { p.MinP = 0.05 }},
		{"logprobs20", func(p *Params) { p.Temperature = 0; p.Logprobs = 20 }},
	}
	for _, c := range configs {
		b.Run(c.name, func(b *testing.B) {
			p := withSeed(DefaultParams(), 1)
			c.edit(&p)
			s := New(p, prompt)
			for i := range 100 {
				s.Accept(int32(i * 11 % vocab))
			}
			b.SetBytes(vocab * 4)
			b.ReportAllocs()
			for b.Loop() {
				s.Sample(logits)
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "samples/s")
		})
	}
}
