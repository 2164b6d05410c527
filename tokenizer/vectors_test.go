package tokenizer

import (
	"fmt"
	"slices"
	"testing"

	"pagoda/internal/testmodel"
)

// TestGGMLVocabVectors runs llama.cpp's tokenizer test vectors (test-tokenizer-0: no BOS, no
// special-token parsing) and checks that decoding gives the input back.
func TestGGMLVocabVectors(t *testing.T) {
	for _, name := range []string{"llama-spm", "phi-3", "gpt-2", "deepseek-llm"} {
		t.Run(name, func(t *testing.T) {
			tk := vocabTokenizer(t, name)
			for i, v := range readVocabVectors(t, name) {
				t.Run(fmt.Sprintf("%02d", i), func(t *testing.T) {
					wantRoundTrip(t, tk, v.input, tk.Encode(v.input, false, false), v.want)
				})
			}
		})
	}
}

// TestStoriesPromptTokens reproduces the prompt ids llama.cpp produced for stories260K (BOS
// added, as llama-server does).
func TestStoriesPromptTokens(t *testing.T) {
	ref := testmodel.ReadReference(t, testmodel.StoriesReference(t))
	tk := storiesTokenizer(t)
	for i, p := range ref.Cases {
		t.Run(fmt.Sprintf("%02d", i), func(t *testing.T) {
			got := tk.Encode(p.Prompt, true, true)
			if !slices.Equal(got, p.PromptTokens) {
				t.Fatalf("Encode(%q)\n got %v\nwant %v", p.Prompt, got, p.PromptTokens)
			}
		})
	}
}
