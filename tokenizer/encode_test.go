package tokenizer

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

func TestSPMMerging(t *testing.T) {
	tk := mustNew(t, tinySPM())
	id := func(s string) int32 {
		i, ok := tk.TokenID(s)
		if !ok {
			t.Fatalf("no token %q", s)
		}
		return i
	}
	cases := []struct {
		text    string
		want    []int32
		decoded string // when not the text itself
	}{
		{"", nil, ""},
		{"ab", []int32{id("▁ab")}, ""},
		{"abc", []int32{id("▁a"), id("bc")}, ""},                   // ▁a scores best, then bc beats ▁ab
		{"cabc", []int32{id("▁"), id("c"), id("ab"), id("c")}, ""}, // ab and bc tie: leftmost
		{"bc", []int32{id("▁"), id("bc")}, ""},
		{"a b", []int32{id("▁a"), id("▁"), id("b")}, ""},
		{"d", []int32{id("▁"), id("<0x64>")}, ""},                               // byte fallback
		{"é", []int32{id("▁"), id("<0xC3>"), id("<0xA9>")}, ""},                 // multi-byte fallback
		{"\xff", []int32{id("▁"), id("<0xFF>")}, ""},                            // invalid UTF-8
		{"<s>", []int32{id("▁"), id("<0x3C>"), id("<0x73>"), id("<0x3E>")}, ""}, // control text is not merged into
		{"a<x>b", []int32{id("▁a"), id("<x>"), id("▁"), id("b")}, "a<x> b"},     // user-defined split out, space prefix after it
		{"x<x>", []int32{id("▁"), id("<0x78>"), id("<x>")}, ""},
	}
	for _, c := range cases {
		t.Run(fmt.Sprintf("%q", c.text), func(t *testing.T) {
			got := tk.Encode(c.text, false, false)
			if !slices.Equal(got, c.want) {
				t.Fatalf("got %v, want %v", got, c.want)
			}
			want := c.text
			if c.decoded != "" {
				want = c.decoded
			}
			if back := tk.Decode(got); back != want {
				t.Errorf("Decode = %q, want %q", back, want)
			}
		})
	}
}

func TestSPMWithoutByteTokens(t *testing.T) {
	c := tinySPM()
	// Turn the byte tokens into unused tokens named otherwise: no fallback is left.
	for b := range 256 {
		c.Tokens[3+b] = fmt.Sprintf("[unused%d]", b)
		c.Types[3+b] = TypeUnused
	}
	tk := mustNew(t, c)
	if got := tk.Encode("dd a", false, false); !slices.Equal(got, []int32{259, 0, 0, 263}) {
		t.Fatalf("unknown characters: got %v, want [▁ <unk> <unk> ▁a]", got)
	}
}

func TestBPEMerging(t *testing.T) {
	tk := mustNew(t, tinyBPE())
	cases := []struct {
		text string
		want []string // token texts
	}{
		{"hello", []string{"hello"}},
		{"hello world", []string{"hello", "Ġw", "o", "r", "l", "d"}},
		{"hellohe", []string{"hello", "he"}},
		{"hhello", []string{"h", "hello"}},
		{"  \xff", []string{"Ġ", "Ġ", "ÿ"}},
	}
	for _, c := range cases {
		t.Run(fmt.Sprintf("%q", c.text), func(t *testing.T) {
			ids := tk.Encode(c.text, true, false)
			got := make([]string, len(ids))
			for i, id := range ids {
				got[i] = tk.TokenText(id)
			}
			if strings.Join(got, "|") != strings.Join(c.want, "|") {
				t.Fatalf("got %q, want %q", got, c.want)
			}
			if back := tk.Decode(ids); back != c.text {
				t.Errorf("Decode = %q", back)
			}
		})
	}
}

func TestSpecialTokens(t *testing.T) {
	tk := mustNew(t, tinyBPE())
	x, _ := tk.TokenID("<|x|>")
	y, _ := tk.TokenID("<|y|>")
	xy, _ := tk.TokenID("<|x|><|y|>")
	at, _ := tk.TokenID("@@")
	cases := []struct {
		name         string
		text         string
		parseSpecial bool
		want         []int32
	}{
		{"longest first", "<|x|><|y|>", true, []int32{xy}},
		{"separate", "<|y|><|x|>", true, []int32{y, x}},
		{"overlap prefers the longest", "<|x|><|x|><|y|>", true, []int32{x, xy}},
		{"user-defined always", "@@", false, []int32{at}},
		{"user-defined with parse", "a@@b", true, []int32{'a', at, 'b'}}, // byte b is token b
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := tk.Encode(c.text, false, c.parseSpecial); !slices.Equal(got, c.want) {
				t.Fatalf("got %v, want %v", got, c.want)
			}
		})
	}
	t.Run("control text without parseSpecial", func(t *testing.T) {
		ids := tk.Encode("<|x|>", false, false)
		for _, id := range ids {
			if tk.IsSpecial(id) {
				t.Fatalf("control token %d produced from text: %v", id, ids)
			}
		}
		if tk.Decode(ids) != "<|x|>" {
			t.Fatalf("Decode = %q", tk.Decode(ids))
		}
	})
}

func TestAddSpecial(t *testing.T) {
	c := tinySPM()
	c.AddEOS = true
	tk := mustNew(t, c)
	cases := []struct {
		text       string
		addSpecial bool
		want       []int32
	}{
		{"", true, []int32{1, 2}},
		{"", false, nil},
		{"ab", true, []int32{1, 266, 2}},
		{"<s>ab", true, []int32{1, 259, 63, 118, 65, 264, 2}}, // control texts need parseSpecial
	}
	for _, c := range cases {
		if got := tk.Encode(c.text, c.addSpecial, false); !slices.Equal(got, c.want) {
			t.Errorf("Encode(%q, %v) = %v, want %v", c.text, c.addSpecial, got, c.want)
		}
	}
	if got := tk.Encode("<s>ab", true, true); !slices.Equal(got, []int32{1, 1, 266, 2}) {
		t.Errorf("parsed <s>: got %v", got)
	}
}

// TestPhi3StripsAfterSpecial checks llama.cpp's Phi-3 rule: special tokens (but <s>) eat the
// whitespace that follows them.
func TestPhi3StripsAfterSpecial(t *testing.T) {
	tk := vocabTokenizer(t, "phi-3")
	user, ok := tk.TokenID("<|user|>")
	if !ok {
		t.Fatal("no <|user|>")
	}
	a := tk.Encode("<|user|>\n  Hello", false, true)
	b := tk.Encode("<|user|>Hello", false, true)
	if a[0] != user || !slices.Equal(a, b) {
		t.Fatalf("got %v, want %v", a, b)
	}
	s1 := tk.Encode("<s> Hello", false, true)
	s2 := tk.Encode("<s>Hello", false, true)
	if slices.Equal(s1, s2) {
		t.Fatalf("<s> must keep the following space: %v", s1)
	}
}

func TestEncodeEdgeCases(t *testing.T) {
	long := strings.Repeat("a", 100_000)
	mixed := strings.Repeat("Hello, wörld! 123 😀\n\t ", 4_000) // ~100k bytes
	cases := []struct{ name, text string }{
		{"empty", ""},
		{"one space", " "},
		{"only spaces", "       "},
		{"only newlines", "\n\n\n\n"},
		{"emoji", "😀👍🏽😶‍🌫️"},
		{"invalid UTF-8", "a\xff\xfe\xc3(b\xe2\x82"},
		{"lone continuation bytes", "\x80\x81\xbf"},
		{"NUL and controls", "a\x00b\x01\x7f"},
		{"long word", long},
		{"long mixed", mixed},
	}
	for _, vocab := range []string{"stories", "smollm2"} {
		for _, c := range cases {
			t.Run(vocab+"/"+c.name, func(t *testing.T) {
				tk := storiesTokenizer(t)
				if vocab == "smollm2" {
					tk = smolTokenizer(t)
				}
				ids := tk.Encode(c.text, false, false)
				if (len(ids) == 0) != (c.text == "") {
					t.Fatalf("%d tokens for %d bytes", len(ids), len(c.text))
				}
				for _, id := range ids {
					if id < 0 || int(id) >= tk.VocabSize() {
						t.Fatalf("id %d out of range", id)
					}
				}
				if back, want := tk.Decode(ids), droppingUntokenizable(tk, c.text); back != want {
					t.Fatalf("Decode(Encode(x)) differs from x (lengths %d, %d)", len(back), len(want))
				}
			})
		}
	}
}

// droppingUntokenizable removes from s the bytes a byte-level vocabulary has no token for.
func droppingUntokenizable(tk *Tokenizer, s string) string {
	if tk.Model() != ModelBPE {
		return s
	}
	b := []byte{}
	for i := 0; i < len(s); i++ {
		if tk.byteTok[s[i]] != NoToken {
			b = append(b, s[i])
		}
	}
	return string(b)
}

// BenchmarkEncode measures encoding of 100 KB inputs; merging is O(n log n) per word.
func BenchmarkEncode(b *testing.B) {
	inputs := map[string]string{
		"word100k":  strings.Repeat("a", 100_000),
		"mixed100k": strings.Repeat("Hello, wörld! 123 😀\n\t ", 4_000),
	}
	for _, vocab := range []string{"stories", "smollm2"} {
		tk := storiesTokenizer(b)
		if vocab == "smollm2" {
			tk = smolTokenizer(b)
		}
		for name, text := range inputs {
			b.Run(vocab+"/"+name, func(b *testing.B) {
				b.SetBytes(int64(len(text)))
				for b.Loop() {
					tk.Encode(text, false, false)
				}
			})
		}
	}
}
