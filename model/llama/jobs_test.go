package llama

import (
	"testing"

	"pagoda/model"
)

// TestDecodeStepPoolJobs: a decode step runs three pool jobs per layer
// (RMSNorm+Q/K/V, attention+output projection, the feed-forward block)
// and one for the logits; a prefill whose last token alone wants logits
// runs one more, in the last layer (whose output projection runs on the
// gathered logit rows only).
func TestDecodeStepPoolJobs(t *testing.T) {
	m, kv, b, logits := tinyDecodeStep(t, 0)
	layers := m.Config().Layers
	before := m.Jobs()
	if err := m.Forward(b, kv, logits); err != nil {
		t.Fatal(err)
	}
	if got, want := m.Jobs()-before, uint64(3*layers+1); got != want {
		t.Fatalf("a decode step of %d layers ran %d pool jobs, want %d", layers, got, want)
	}
	b = &model.Batch{
		Tokens: []int32{5, 6, 7}, Positions: []int32{1, 2, 3}, SlotMapping: []int32{1, 2, 3},
		QueryStart: []int32{0, 3}, ContextLens: []int32{4}, BlockTables: [][]int32{{0}},
		LogitIndices: []int32{2},
	}
	before = m.Jobs()
	if err := m.Forward(b, kv, logits); err != nil {
		t.Fatal(err)
	}
	if got, want := m.Jobs()-before, uint64(3*layers+2); got != want {
		t.Fatalf("a prefill of %d layers ran %d pool jobs, want %d", layers, got, want)
	}
}
