package tokenizer

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"pagoda/internal/modelcache"
	"pagoda/internal/testmodel"
)

// gemma3Tokenizer loads Gemma 3 270M's vocabulary from the model cache (`make gemma3`).
func gemma3Tokenizer(t testing.TB) *Tokenizer {
	t.Helper()
	return cachedGGUF(t, "gemma3", func() string { return testmodel.Gemma3(t) })
}

// gemma3Vectors are llama.cpp's ids and detokenized texts for Gemma 3
// (scripts/gen-gemma3-vectors.py).
type gemma3Vectors struct {
	ModelSHA256 string `json:"model_sha256"`
	Cases       []struct {
		Text         string  `json:"text"`
		AddSpecial   bool    `json:"add_special"`
		ParseSpecial bool    `json:"parse_special"`
		IDs          []int32 `json:"ids"`
		Decoded      string  `json:"decoded"`
	} `json:"cases"`
}

// TestGemma3Vectors checks pagoda's tokenizer against llama.cpp's on Gemma 3's SentencePiece
// vocabulary: every input, with and without BOS and special-token parsing, gives llama.cpp's
// ids, and those ids decode (at once, and streamed through a Detokenizer) to llama.cpp's
// detokenized text. That text is the input after the rendered <bos>, but where the input holds
// SentencePiece's space mark ▁, which llama.cpp (and so pagoda) decodes to a space.
func TestGemma3Vectors(t *testing.T) {
	var vs gemma3Vectors
	readJSON(t, "testdata/gemma3.vectors.json", &vs)
	if len(vs.Cases) < 300 {
		t.Fatalf("only %d cases", len(vs.Cases))
	}
	if vs.ModelSHA256 != modelcache.Gemma3Wheels.SHA256 {
		t.Fatalf("vectors made with model sha256 %s, the cache holds %s", vs.ModelSHA256, modelcache.Gemma3Wheels.SHA256)
	}
	tk := gemma3Tokenizer(t)
	for i, c := range vs.Cases {
		t.Run(fmt.Sprintf("%03d", i), func(t *testing.T) {
			got := tk.Encode(c.Text, c.AddSpecial, c.ParseSpecial)
			if !slices.Equal(got, c.IDs) {
				t.Fatalf("Encode(%q, addSpecial=%v, parseSpecial=%v)\n got %v\nwant %v",
					c.Text, c.AddSpecial, c.ParseSpecial, got, c.IDs)
			}
			if back := tk.Decode(c.IDs); back != c.Decoded {
				t.Fatalf("Decode(%v) = %q, llama.cpp gives %q", c.IDs, back, c.Decoded)
			}
			var streamed strings.Builder
			d := tk.NewDetokenizer(DetokenizerOptions{})
			for _, id := range c.IDs {
				streamed.WriteString(d.Add(id))
			}
			streamed.WriteString(d.Flush())
			if streamed.String() != c.Decoded {
				t.Fatalf("streamed %v: %q, llama.cpp gives %q", c.IDs, &streamed, c.Decoded)
			}
			text, bos := c.Decoded, false
			if c.AddSpecial {
				text, bos = strings.CutPrefix(text, "<bos>")
			}
			if bos != c.AddSpecial || text != c.Text && !strings.Contains(c.Text, "\u2581") {
				t.Fatalf("llama.cpp decodes %q (addSpecial=%v) as %q", c.Text, c.AddSpecial, c.Decoded)
			}
		})
	}
}

// TestGemma3Metadata checks what FromGGUF reads from Gemma 3's vocabulary: llama.cpp's
// special ids, BOS added, no space prefix, <end_of_turn> ending generation, and the chat
// markers as control tokens.
func TestGemma3Metadata(t *testing.T) {
	tk := gemma3Tokenizer(t)
	id := func(s string) int32 {
		i, ok := tk.TokenID(s)
		if !ok {
			t.Fatalf("no token %q", s)
		}
		return i
	}
	checks := []struct {
		name      string
		got, want any
	}{
		{"vocab size", tk.VocabSize(), 262144},
		{"model", tk.Model(), ModelSPM},
		{"BOS", tk.BOS(), int32(2)},
		{"EOS", tk.EOS(), int32(1)},
		{"UNK", tk.UNK(), int32(3)},
		{"PAD", tk.PAD(), int32(0)},
		{"EOT", tk.EOT(), id("<end_of_turn>")},
		{"EOGs", fmt.Sprint(tk.EOGs()), "[1 106]"},
		{"AddBOS", tk.AddBOS(), true},
		{"AddEOS", tk.AddEOS(), false},
		{"add_space_prefix", tk.addSpacePrefix, false},
		{"<start_of_turn>", tk.TokenType(id("<start_of_turn>")), TypeControl},
		{"<end_of_turn>", tk.TokenType(id("<end_of_turn>")), TypeControl},
		{"<start_of_image>", tk.TokenType(id("<start_of_image>")), TypeUserDefined},
		{"byte token", tk.Piece(id("<0x0A>")), "\n"},
		{"IsSpecial(<start_of_turn>)", tk.IsSpecial(id("<start_of_turn>")), true},
		{"Piece(▁the)", tk.Piece(id("\u2581the")), " the"},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}
}
