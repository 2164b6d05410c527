package tokenizer

import (
	"fmt"
	"slices"
	"testing"
)

// TestWPMVocabVectors runs llama.cpp's tokenizer test vectors for BGE's WordPiece vocabulary
// (ggml-vocab-bert-bge: lower-casing, accent stripping, punctuation split, [UNK] words). The
// text does not come back from the ids (case and accents are gone), so only the ids are
// compared.
func TestWPMVocabVectors(t *testing.T) {
	tk := vocabTokenizer(t, "bert-bge")
	if tk.Model() != ModelWPM {
		t.Fatalf("model %q, want %q", tk.Model(), ModelWPM)
	}
	for i, v := range readVocabVectors(t, "bert-bge") {
		t.Run(fmt.Sprintf("%02d", i), func(t *testing.T) {
			if got := tk.Encode(v.input, false, false); !slices.Equal(got, v.want) {
				t.Fatalf("Encode(%q)\n got %v\nwant %v", v.input, got, v.want)
			}
		})
	}
}

// TestWPMSpecial checks [CLS] … [SEP] around the text with special tokens (llama.cpp's
// add_bos and add_sep for WPM), the special ids and the decoding of word pieces.
func TestWPMSpecial(t *testing.T) {
	tk := vocabTokenizer(t, "bert-bge")
	ids := tk.Encode("Hello, World!", true, true)
	want := []int32{101, 7592, 1010, 2088, 999, 102}
	if !slices.Equal(ids, want) {
		t.Fatalf("Encode = %v, want %v", ids, want)
	}
	if tk.BOS() != 101 || tk.SEP() != 102 || tk.UNK() != 100 {
		t.Errorf("BOS %d SEP %d UNK %d, want 101 102 100", tk.BOS(), tk.SEP(), tk.UNK())
	}
	if got := tk.Encode("naïve Café", false, false); !slices.Equal(got, tk.Encode("naive cafe", false, false)) {
		t.Errorf("accents and case kept: %v", got)
	}
	if n := tk.MinTokens("supercalifragilistic"); n > len(tk.Encode("supercalifragilistic", false, false)) {
		t.Errorf("MinTokens %d above the real count", n)
	}
}
