package tokenizer

import (
	"reflect"
	"testing"
)

// TestPreTokenizeGPT4o pins how the gpt-4o pipeline splits the cases where llama.cpp's
// rewriting of o200k's pattern matters (case runs, non-ASCII letters, contractions, digit
// groups, trailing / and line breaks after punctuation); TestO200kHarmonyVectors checks the
// resulting ids against llama.cpp's on the whole vocabulary.
func TestPreTokenizeGPT4o(t *testing.T) {
	for _, c := range []struct {
		text string
		want []string
	}{
		{"Hello world", []string{"Hello", " world"}},
		{"helloWORLD HELLOworld", []string{"hello", "WORLD", " HELLOworld"}},
		{"ÀB ", []string{"À", "B", " "}}, // tiktoken: "ÀB", " "
		{"abcÀ", []string{"abcÀ"}},       // tiktoken: "abc", "À"
		{"DON'T they'll I'M", []string{"DON'T", " they'll", " I'M"}},
		{"1234567", []string{"123", "456", "7"}},
		{"a  b\n\n c", []string{"a", " ", " b", "\n\n", " c"}},
		{"x/y//\n", []string{"x", "/y", "//\n"}},
		{" !!\r\n/z", []string{" !!\r\n/", "z"}},
		{"\tif", []string{"\tif"}},
		{"你好，世界", []string{"你好", "，世界"}},
	} {
		if got := pieces(t, "gpt-4o", c.text); !reflect.DeepEqual(got, c.want) {
			t.Errorf("%q\n got %q\nwant %q", c.text, got, c.want)
		}
	}
}

// FuzzPreTokenizeGPT4o checks that the gpt-4o pieces of any input are non-empty and cover it.
func FuzzPreTokenizeGPT4o(f *testing.F) {
	for _, s := range []string{"", "ÀB abcÀ", "DON'T 1234 \r\n/x", "  \t\n a", "\xff'S", "你好，世界 😀"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		ps := pieces(t, "gpt-4o", text)
		joined := ""
		for _, p := range ps {
			if p == "" {
				t.Fatalf("%q: an empty piece in %q", text, ps)
			}
			joined += p
		}
		if joined != text {
			t.Fatalf("%q: pieces %q", text, ps)
		}
	})
}
