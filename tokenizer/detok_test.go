package tokenizer

import (
	"math/rand/v2"
	"strings"
	"testing"
	"unicode/utf8"
)

// stream feeds ids one at a time and returns every Add result plus the final Flush.
func stream(d *Detokenizer, ids []int32) []string {
	out := make([]string, 0, len(ids)+1)
	for _, id := range ids {
		out = append(out, d.Add(id))
	}
	return append(out, d.Flush())
}

func TestDetokenizerMultiByteSplitAcrossTokens(t *testing.T) {
	cases := []struct {
		name, vocab, text string
	}{
		{"byte-level BPE emoji", "smollm2", "Hi 😀 and 👍🏽!"},
		{"byte-level BPE CJK", "smollm2", "日本語のテキスト"},
		{"SPM byte fallback emoji", "stories", "Tom saw 😀 and é"},
		{"SPM byte fallback CJK", "stories", "中文"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tk := storiesTokenizer(t)
			if c.vocab == "smollm2" {
				tk = smolTokenizer(t)
			}
			ids := tk.Encode(c.text, false, false)
			chunks := stream(tk.NewDetokenizer(DetokenizerOptions{}), ids)
			split := 0
			for i, ch := range chunks {
				if !utf8.ValidString(ch) {
					t.Fatalf("chunk %d is not valid UTF-8: %q", i, ch)
				}
				if i < len(ids) && !utf8.ValidString(tk.Piece(ids[i])) {
					split++
				}
			}
			if split == 0 {
				t.Fatalf("no token of %v splits a character: the case tests nothing", ids)
			}
			if got := strings.Join(chunks, ""); got != c.text {
				t.Fatalf("got %q, want %q", got, c.text)
			}
		})
	}
}

func TestDetokenizerLeadingSpace(t *testing.T) {
	tk := storiesTokenizer(t)
	ids := tk.Encode("Once upon a time", false, false) // ▁Once ▁upon ...
	cases := []struct {
		name string
		opts DetokenizerOptions
		ids  []int32
		want string
	}{
		{"sequence start strips", DetokenizerOptions{}, ids, "Once upon a time"},
		{"after a prompt keeps the space", DetokenizerOptions{Prompt: ids[:1]}, ids[1:], " upon a time"},
		{"BOS rendered, then the space stays", DetokenizerOptions{}, append([]int32{1}, ids...), "<s> Once upon a time"},
		{"BOS skipped, first text strips", DetokenizerOptions{SkipSpecial: true}, append([]int32{1}, ids...), "Once upon a time"},
		{"prompt of only BOS, skipped", DetokenizerOptions{SkipSpecial: true, Prompt: []int32{1}}, ids, "Once upon a time"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := strings.Join(stream(tk.NewDetokenizer(c.opts), c.ids), ""); got != c.want {
				t.Fatalf("got %q, want %q", got, c.want)
			}
		})
	}
	// byte-level BPE never strips
	smol := smolTokenizer(t)
	sids := smol.Encode(" leading", false, false)
	if got := strings.Join(stream(smol.NewDetokenizer(DetokenizerOptions{}), sids), ""); got != " leading" {
		t.Fatalf("BPE: got %q", got)
	}
}

func TestDetokenizerSkipSpecial(t *testing.T) {
	tk := smolTokenizer(t)
	ids := tk.Encode("<|im_start|>assistant\nHello!<|im_end|>", false, true)
	cases := []struct {
		skip bool
		want string
	}{
		{false, "<|im_start|>assistant\nHello!<|im_end|>"},
		{true, "assistant\nHello!"},
	}
	for _, c := range cases {
		got := strings.Join(stream(tk.NewDetokenizer(DetokenizerOptions{SkipSpecial: c.skip}), ids), "")
		if got != c.want {
			t.Errorf("skip=%v: got %q, want %q", c.skip, got, c.want)
		}
		want := tk.Decode(ids)
		if c.skip {
			want = tk.DecodeSkipSpecial(ids)
		}
		if got != want {
			t.Errorf("skip=%v: stream %q differs from Decode %q", c.skip, got, want)
		}
	}
}

func TestDetokenizerHoldsAndFlushes(t *testing.T) {
	tk := storiesTokenizer(t)
	b := func(x byte) int32 { return tk.byteTok[x] }
	d := tk.NewDetokenizer(DetokenizerOptions{Prompt: []int32{1}})
	steps := []struct {
		id   int32
		want string
	}{
		{b(0xF0), ""}, {b(0x9F), ""}, {b(0x98), ""}, {b(0x80), "😀"}, // one emoji, 4 byte tokens
		{b(0xE2), ""}, {b(0x82), ""}, {b('A'), "\uFFFDA"}, // cut-short character then ASCII
		{b(0xFF), "\uFFFD"}, // a byte that never starts a character
		{b(0xC3), ""},
	}
	for i, s := range steps {
		if got := d.Add(s.id); got != s.want {
			t.Fatalf("step %d: got %q, want %q", i, got, s.want)
		}
	}
	if got := d.Flush(); got != "\uFFFD" {
		t.Fatalf("Flush = %q", got)
	}
	if got := d.Flush(); got != "" {
		t.Fatalf("second Flush = %q", got)
	}
}

// TestDetokenizerMatchesDecode checks the invariant on random id sequences: the streamed text
// equals ValidText(Decode(ids)).
func TestDetokenizerMatchesDecode(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, vocab := range []string{"stories", "smollm2"} {
		tk := storiesTokenizer(t)
		if vocab == "smollm2" {
			tk = smolTokenizer(t)
		}
		for trial := range 200 {
			ids := make([]int32, rng.IntN(20))
			for i := range ids {
				if rng.IntN(2) == 0 {
					ids[i] = tk.byteTok[rng.IntN(256)] // bias towards partial characters
				}
				if ids[i] <= 0 {
					ids[i] = int32(rng.IntN(tk.VocabSize()))
				}
			}
			for _, skip := range []bool{false, true} {
				got := strings.Join(stream(tk.NewDetokenizer(DetokenizerOptions{SkipSpecial: skip}), ids), "")
				want := tk.Decode(ids)
				if skip {
					want = tk.DecodeSkipSpecial(ids)
				}
				if want = ValidText([]byte(want)); got != want {
					t.Fatalf("%s trial %d skip=%v ids %v:\n got %q\nwant %q", vocab, trial, skip, ids, got, want)
				}
			}
		}
	}
}

func TestValidText(t *testing.T) {
	// Expected values are Python's bytes.decode("utf-8", errors="replace").
	cases := []struct{ in, want string }{
		{"", ""},
		{"plain", "plain"},
		{"\xe2\x82A", "\uFFFDA"},
		{"\xf0\x9f\x98", "\uFFFD"},
		{"\xf0\x9f\xe2\x82\xac", "\uFFFD€"},
		{"\xff\xfe", "\uFFFD\uFFFD"},
		{"\xed\xa0\x80", "\uFFFD\uFFFD\uFFFD"}, // surrogate
		{"\xc0\xaf", "\uFFFD\uFFFD"},           // overlong
		{"a\x80b", "a\uFFFDb"},
	}
	for _, c := range cases {
		if got := ValidText([]byte(c.in)); got != c.want {
			t.Errorf("ValidText(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}
