package tokenizer

import (
	"fmt"
	"reflect"
	"testing"
)

// pieces runs a pre-tokenizer pipeline and returns its pieces as strings.
func pieces(t testing.TB, pre, text string) []string {
	t.Helper()
	pipeline, _, err := preTokenizer(pre)
	if err != nil {
		t.Fatal(err)
	}
	dt := decodeText(text)
	out := []string{}
	lo := 0
	for _, hi := range preTokenize(dt, pipeline) {
		out = append(out, text[dt.offs[lo]:dt.offs[hi]])
		lo = hi
	}
	return out
}

// TestPreTokenizeMatchesRegex checks every pipeline against the original patterns run by
// Python's regex module (testdata/gen_pretokenize_vectors.py).
func TestPreTokenizeMatchesRegex(t *testing.T) {
	var vs struct {
		Pipelines map[string][]struct {
			Text   string   `json:"text"`
			Pieces []string `json:"pieces"`
		} `json:"pipelines"`
	}
	readJSON(t, "testdata/pretokenize.vectors.json", &vs)
	if len(vs.Pipelines) < 8 {
		t.Fatalf("only %d pipelines", len(vs.Pipelines))
	}
	for pre, cases := range vs.Pipelines {
		for i, c := range cases {
			t.Run(fmt.Sprintf("%s/%02d", pre, i), func(t *testing.T) {
				if got := pieces(t, pre, c.Text); !reflect.DeepEqual(got, c.Pieces) {
					t.Fatalf("%q\n got %q\nwant %q", c.Text, got, c.Pieces)
				}
			})
		}
	}
}

func TestPreTokenizeAliases(t *testing.T) {
	for _, c := range []struct{ alias, canonical string }{
		{"llama-bpe", "llama3"}, {"starcoder", "smollm"}, {"deepseek-r1-qwen", "qwen2"},
		{"olmo", "gpt-2"}, {"poro-chat", "bloom"},
	} {
		t.Run(c.alias, func(t *testing.T) {
			const text = "Hello 12345  world's\n\n!!"
			if a, b := pieces(t, c.alias, text), pieces(t, c.canonical, text); !reflect.DeepEqual(a, b) {
				t.Fatalf("%q splits as %q, %q as %q", c.alias, a, c.canonical, b)
			}
		})
	}
	if _, _, err := preTokenizer("no-such-pre"); err == nil {
		t.Fatal("unknown pre-tokenizer accepted")
	}
}

// TestPreTokenizeInvalidUTF8 checks that invalid bytes are kept byte for byte and classed
// like U+FFFD (a symbol), as llama.cpp classes them.
func TestPreTokenizeInvalidUTF8(t *testing.T) {
	got := pieces(t, "gpt-2", "ab\xff\xfe cd \xc3")
	want := []string{"ab", "\xff\xfe", " cd", " \xc3"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %q, want %q", got, want)
	}
}
