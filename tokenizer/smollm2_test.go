package tokenizer

import (
	"fmt"
	"testing"

	"pagoda/internal/testmodel"
)

// TestSmolLM2Vectors checks pagoda against ids that Hugging Face's tokenizers library computed
// (testdata/gen_smollm2_vectors.py) for the default model.
func TestSmolLM2Vectors(t *testing.T) {
	var vs struct {
		Cases []struct {
			Text string  `json:"text"`
			IDs  []int32 `json:"ids"`
		} `json:"cases"`
	}
	readJSON(t, "testdata/smollm2.vectors.json", &vs)
	if len(vs.Cases) < 40 {
		t.Fatalf("only %d cases", len(vs.Cases))
	}
	tk := smolTokenizer(t)
	for i, c := range vs.Cases {
		t.Run(fmt.Sprintf("%02d", i), func(t *testing.T) {
			wantRoundTrip(t, tk, c.Text, tk.Encode(c.Text, false, true), c.IDs)
		})
	}
}

// TestSmolLM2Metadata checks what FromGGUF read from the default model against its
// tokenizer.json and config.json.
func TestSmolLM2Metadata(t *testing.T) {
	tk := smolTokenizer(t)
	var hf struct {
		Model struct {
			Vocab map[string]int32 `json:"vocab"`
		} `json:"model"`
	}
	readJSON(t, testmodel.SmolTokenizerJSON(t), &hf)
	if tk.VocabSize() != 49152 || len(hf.Model.Vocab) != tk.VocabSize() {
		t.Fatalf("vocab size %d, tokenizer.json has %d", tk.VocabSize(), len(hf.Model.Vocab))
	}
	for text, id := range hf.Model.Vocab {
		if got := tk.TokenText(id); got != text {
			t.Fatalf("token %d is %q in the GGUF, %q in tokenizer.json", id, got, text)
		}
	}
	checks := []struct {
		name      string
		got, want any
	}{
		{"model", tk.Model(), ModelBPE},
		{"pre", tk.Pre(), "smollm"},
		{"BOS", tk.BOS(), int32(1)},
		{"EOS", tk.EOS(), int32(2)},
		{"EOT", tk.EOT(), int32(2)},
		{"PAD", tk.PAD(), int32(2)},
		{"AddBOS", tk.AddBOS(), false},
		{"AddEOS", tk.AddEOS(), false},
		{"IsEOG(<|im_end|>)", tk.IsEOG(2), true},
		{"IsEOG(<|endoftext|>)", tk.IsEOG(0), true},
		{"IsEOG(<|im_start|>)", tk.IsEOG(1), false},
		{"EOGs", fmt.Sprint(tk.EOGs()), "[0 2]"},
		{"TokenType(<|im_start|>)", tk.TokenType(1), TypeControl},
		{"Piece(<|im_start|>)", tk.Piece(1), "<|im_start|>"},
		{"Piece(Ġworld)", tk.Piece(905), " world"},
		{"has chat template", tk.ChatTemplate() != "", true},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}
}
