package tokenizer

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzEncode checks, for any input bytes and both vocabulary kinds, that encoding terminates
// with valid ids, that decoding gives the input back (SentencePiece cannot keep a literal ▁
// or the spaces around special tokens; byte-level BPE drops bytes it has no token for), and
// that incremental detokenization equals ValidText of Decode.
func FuzzEncode(f *testing.F) {
	for _, s := range []string{"", " ", "Hello, world!", "  \n\t\r\n", "😀é中", "a\xff\xc3(", "<|im_start|>x<|im_end|>",
		"<s> x </s>", "1234567", "'s 'LL", "\u00a0\u3000\u2028"} {
		f.Add(s, false)
		f.Add(s, true)
	}
	spm, bpe := storiesTokenizer(f), smolTokenizer(f)
	f.Fuzz(func(t *testing.T, text string, parseSpecial bool) {
		for _, tk := range []*Tokenizer{spm, bpe} {
			ids := tk.Encode(text, false, parseSpecial)
			for _, id := range ids {
				if id < 0 || int(id) >= tk.VocabSize() {
					t.Fatalf("id %d out of range", id)
				}
			}
			back := tk.Decode(ids)
			exact := tk.Model() == ModelBPE || (!parseSpecial && !strings.Contains(text, "\u2581"))
			if want := droppingUntokenizable(tk, text); exact && back != want {
				t.Fatalf("%s: Decode(Encode(%q)) = %q", tk.Model(), text, back)
			}
			var streamed strings.Builder
			d := tk.NewDetokenizer(DetokenizerOptions{})
			for _, id := range ids {
				s := d.Add(id)
				if !utf8.ValidString(s) {
					t.Fatalf("invalid UTF-8 chunk %q", s)
				}
				streamed.WriteString(s)
			}
			streamed.WriteString(d.Flush())
			if streamed.String() != ValidText([]byte(back)) {
				t.Fatalf("stream %q differs from Decode %q", streamed.String(), back)
			}
		}
	})
}
