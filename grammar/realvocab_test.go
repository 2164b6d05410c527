package grammar

import (
	"sync"
	"testing"

	"pagoda/internal/modelcache"
	"pagoda/internal/testmodel"
	"pagoda/tokenizer"
)

// defaultModel is the default model's tokenizer and its masking vocabulary.
type defaultModel struct {
	tok   *tokenizer.Tokenizer
	vocab *Vocab
}

var (
	modelsMu sync.Mutex
	models   = map[string]defaultModel{}
)

// loadDefault loads the default model's vocabulary (once): pieces of the non-special tokens,
// the end-of-generation ids.
func loadDefault(t testing.TB) defaultModel {
	t.Helper()
	return loadModelVocab(t, modelcache.Require(t, modelcache.DefaultFile))
}

// loadLlamaBPE loads llama.cpp's ggml-vocab-llama-bpe (Llama 3's 128,256 tokens).
func loadLlamaBPE(t testing.TB) defaultModel {
	t.Helper()
	return loadModelVocab(t, testmodel.Vocab(t, "llama-bpe"))
}

// loadModelVocab loads the tokenizer of the GGUF file at path and its masking vocabulary
// (once per path).
func loadModelVocab(t testing.TB, path string) defaultModel {
	t.Helper()
	modelsMu.Lock()
	defer modelsMu.Unlock()
	if m, ok := models[path]; ok {
		return m
	}
	tok, err := tokenizer.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	pieces := make([]string, tok.VocabSize())
	for id := range pieces {
		ty := tok.TokenType(int32(id))
		if tok.IsSpecial(int32(id)) || ty == tokenizer.TypeControl || ty == tokenizer.TypeUnknown || ty == tokenizer.TypeUnused {
			continue
		}
		pieces[id] = tok.Piece(int32(id))
	}
	m := defaultModel{tok: tok, vocab: NewVocab(pieces, tok.EOGs())}
	models[path] = m
	return m
}

func bit(mask []uint64, id int32) bool { return mask[id>>6]>>(id&63)&1 != 0 }

// TestRealVocabMaskAgreesWithAccept runs documents' tokens through the matcher; at every step
// each of the 49,152 tokens is in the mask exactly when Accept of it succeeds (on a clone).
func TestRealVocabMaskAgreesWithAccept(t *testing.T) {
	dm := loadDefault(t)
	if testing.Short() {
		t.Log("short: checking two steps per document")
	}
	docs := []struct{ schema, doc string }{
		{personSchema, `{"name": "Zoë Ünal", "age": 42, "height": 1.75, "role": "admin", "tags": ["x", "日本"], "active": false}`},
		{`{"type":"string","pattern":"^[a-z]{2,5}-[0-9]+$"}`, `"abc-123"`},
		// counted strings: a token that fills the count exactly, escapes and multi-byte
		// characters inside the count, alternatives with different counts (e-mail)
		{`{"type":"array","items":{"type":"string","maxLength":20}}`, `["NotImplementedError", " NotImplementedError", "日本語のテキスト"]`},
		{`{"type":"string","minLength":3,"maxLength":12}`, `"ab\u0041cdé\u00e9fgh"`},
		{`{"type":"string","format":"email"}`, `"margaret.h.hamilton@example.com"`},
	}
	for _, d := range docs {
		g, err := FromJSONSchema([]byte(d.schema), false)
		if err != nil {
			t.Fatal(err)
		}
		c := Compile(g, dm.vocab)
		m := c.NewMatcher()
		ids := dm.tok.Encode(d.doc, false, false)
		mask := make([]uint64, (dm.vocab.Size()+63)/64)
		for step, want := range ids {
			if !testing.Short() || step < 2 {
				checkMaskStep(t, m, mask, dm.vocab)
			}
			if err := m.Accept(want); err != nil {
				t.Fatalf("%s: step %d: %v", d.doc, step, err)
			}
		}
		if !m.CanEnd() {
			t.Fatalf("%s: not complete at the end", d.doc)
		}
		checkMaskStep(t, m, mask, dm.vocab)
		eog := dm.tok.EOGs()[0]
		if err := m.Accept(eog); err != nil || !m.Terminated() {
			t.Fatalf("EOG at the end: %v, terminated %v", err, m.Terminated())
		}
	}
}

func checkMaskStep(t *testing.T, m *Matcher, mask []uint64, v *Vocab) {
	t.Helper()
	m.FillMask(mask)
	n := 0
	for id := int32(0); int(id) < v.Size(); id++ {
		err := m.Clone().Accept(id)
		if bit(mask, id) != (err == nil) || m.Allows(id) != (err == nil) {
			t.Fatalf("token %d (%q): in mask %v, Accept: %v", id, v.pieces[id], bit(mask, id), err)
		}
		if err == nil {
			n++
		}
	}
	if n == 0 {
		t.Fatal("empty mask")
	}
}
