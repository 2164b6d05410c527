package tokenizer

import (
	"runtime"
	"slices"
	"strings"
	"testing"
)

// limitTexts are the texts EncodeLimit is checked on: every vocabulary test vector, some
// special-token texts, and bytes some vocabularies drop.
func limitTexts(t *testing.T, vocab string) []string {
	var texts []string
	for _, v := range readVocabVectors(t, vocab) {
		texts = append(texts, v.input)
	}
	return append(texts, "<|im_start|>user\nhi<|im_end|>", "\xf5\xff\xfe abc \xff", strings.Repeat(" ", 300),
		strings.Repeat("Once upon a time. ", 40))
}

// EncodeLimit gives Encode's tokens when they are at most limit, and refuses otherwise; and
// MinTokens never exceeds the real count, on every vocabulary kind.
func TestEncodeLimit(t *testing.T) {
	tks := map[string]*Tokenizer{"stories": storiesTokenizer(t), "smollm2": smolTokenizer(t)}
	for _, v := range []string{"llama-spm", "phi-3", "gpt-2", "deepseek-llm"} {
		tks[v] = vocabTokenizer(t, v)
	}
	for name, tk := range tks {
		vocab := name
		if name == "stories" || name == "smollm2" {
			vocab = "gpt-2"
		}
		for _, text := range limitTexts(t, vocab) {
			for _, special := range []bool{false, true} {
				want := tk.Encode(text, special, special)
				if m := tk.MinTokens(text); m > len(want) {
					t.Fatalf("%s: MinTokens(%q) = %d > %d tokens", name, text, m, len(want))
				}
				for _, limit := range []int{0, 1, len(want) - 1, len(want), len(want) + 1} {
					got, ok := tk.EncodeLimit(text, special, special, limit)
					if ok != (len(want) <= limit) || (ok && !slices.Equal(got, want)) {
						t.Fatalf("%s: EncodeLimit(%q, %d) = %v, %v; Encode gives %d tokens", name, text, limit, got, ok, len(want))
					}
				}
			}
		}
	}
}

// A prompt of megabytes is refused by its size alone, without tokenizing: the allocation is
// independent of the text's size.
func TestEncodeLimitHugeText(t *testing.T) {
	for name, tk := range map[string]*Tokenizer{"stories": storiesTokenizer(t), "smollm2": smolTokenizer(t)} {
		text := strings.Repeat("Once upon a time, there was a little girl named Lily. ", 200000) // 10 MB
		var m0, m1 runtime.MemStats
		runtime.ReadMemStats(&m0)
		_, ok := tk.EncodeLimit(text, true, true, 8192)
		runtime.ReadMemStats(&m1)
		if ok {
			t.Fatalf("%s: a 10 MB text fits in 8192 tokens", name)
		}
		if alloc := m1.TotalAlloc - m0.TotalAlloc; alloc > 1<<20 {
			t.Fatalf("%s: refusing a 10 MB text allocated %d bytes", name, alloc)
		}
	}
}
