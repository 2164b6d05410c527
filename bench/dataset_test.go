package bench

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"pagoda/internal/testmodel"
	"pagoda/tokenizer"
)

// Random prompts are reproducible, their lengths lie in the range, and with
// a real BPE vocabulary (SmolLM2's) they tokenize to their word count.
func TestRandomPrompts(t *testing.T) {
	tok, err := tokenizer.Load(testmodel.Default(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		in, out int
		ratio   float64
	}{{16, 8, 0}, {256, 128, 0}, {100, 50, 0.5}} {
		a, err := RandomPrompts(50, tc.in, tc.out, tc.ratio, 7)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := RandomPrompts(50, tc.in, tc.out, tc.ratio, 7)
		c, _ := RandomPrompts(50, tc.in, tc.out, tc.ratio, 8)
		if a[3] != b[3] || a[3] == c[3] {
			t.Fatal("the seed does not fix the prompts")
		}
		for _, p := range a {
			lo, hi := math.Ceil(float64(tc.in)*(1-tc.ratio)), math.Floor(float64(tc.in)*(1+tc.ratio))
			if float64(p.InputLen) < lo || float64(p.InputLen) > hi || len(strings.Fields(p.Text)) != p.InputLen {
				t.Fatalf("input length %d (%d words) outside [%v, %v]", p.InputLen, len(strings.Fields(p.Text)), lo, hi)
			}
			if p.OutputLen < 1 || float64(p.OutputLen) > float64(tc.out)*(1+tc.ratio) {
				t.Fatalf("output length %d", p.OutputLen)
			}
			if n := len(tok.Encode(p.Text, false, false)); n != p.InputLen {
				t.Fatalf("%d words tokenize to %d tokens: %q", p.InputLen, n, p.Text)
			}
		}
	}
	for _, bad := range []struct {
		n, in, out int
		ratio      float64
	}{{0, 16, 8, 0}, {1, 0, 8, 0}, {1, 16, 0, 0}, {1, 16, 8, 1}, {1, 16, 8, -0.1}} {
		if _, err := RandomPrompts(bad.n, bad.in, bad.out, bad.ratio, 0); err == nil {
			t.Fatalf("RandomPrompts accepted %+v", bad)
		}
	}
}

func TestReadJSONL(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good := write("good.jsonl", `{"prompt": "one two three"}`+"\n\n"+`{"prompt": "four", "output_len": 5}`+"\n")
	for _, tc := range []struct {
		name string
		path string
		n    int
		want []Prompt
		ok   bool
	}{
		{"all", good, 2, []Prompt{{"one two three", 3, 9}, {"four", 1, 5}}, true},
		{"first", good, 1, []Prompt{{"one two three", 3, 9}}, true},
		{"cycled", good, 3, []Prompt{{"one two three", 3, 9}, {"four", 1, 5}, {"one two three", 3, 9}}, true},
		{"no_prompt", write("bad.jsonl", `{"text": "x"}`), 1, nil, false},
		{"bad_len", write("len.jsonl", `{"prompt": "x", "max_tokens": 0}`), 1, nil, false},
		{"empty", write("empty.jsonl", "\n"), 1, nil, false},
		{"missing", filepath.Join(dir, "none.jsonl"), 1, nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ReadJSONL(tc.path, tc.n, 9)
			if (err == nil) != tc.ok {
				t.Fatalf("err %v, want ok %v", err, tc.ok)
			}
			if len(got) != len(tc.want) {
				t.Fatalf("%d prompts, want %d", len(got), len(tc.want))
			}
			for i := range got {
				if got[i] != tc.want[i] {
					t.Fatalf("prompt %d = %+v, want %+v", i, got[i], tc.want[i])
				}
			}
		})
	}
}
