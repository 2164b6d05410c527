package grammar

import (
	"testing"
)

// TestRealVocabMasksOnCorpus checks the masks of real vocabularies (the default model's
// 49,152 tokens and llama-bpe's 128,256) against Accept on the benchmark corpus: at sampled
// steps of each instance, every token is in the mask exactly when Accept of it succeeds.
// This covers the walk's shortcuts (loops, relaxed counters, whole characters, dead control
// bytes, tokens checked one by one) on the states schemas produce.
func TestRealVocabMasksOnCorpus(t *testing.T) {
	vocabs := []func(testing.TB) defaultModel{loadDefault, loadLlamaBPE}
	every := 8
	if testing.Short() {
		vocabs, every = vocabs[:1], 16
	}
	for _, load := range vocabs {
		dm := load(t)
		mask := make([]uint64, (dm.vocab.Size()+63)/64)
		for _, cs := range benchCorpus(t) {
			g, err := FromJSONSchema(cs.Schema, false)
			if err != nil {
				t.Fatalf("%s: %v", cs.Name, err)
			}
			c := Compile(g, dm.vocab)
			v, err := parseJSON(cs.Instance)
			if err != nil {
				t.Fatal(err)
			}
			m := c.NewMatcher()
			ids := dm.tok.Encode(spaced(v), false, false)
			text := ""
			for step, id := range ids {
				if (step+every-1)%every == 0 { // steps 1, 1+every, …
					if !t.Run(cs.Name, func(t *testing.T) { checkMaskStep(t, m, mask, dm.vocab) }) {
						t.Fatalf("%s after %q", cs.Name, text)
					}
				}
				text += dm.vocab.pieces[id]
				if err := m.Accept(id); err != nil {
					t.Fatalf("%s: step %d: %v", cs.Name, step, err)
				}
			}
			checkMaskStep(t, m, mask, dm.vocab)
		}
	}
}
