package tokenizer

import (
	"encoding/json"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"pagoda/internal/testmodel"
)

// readJSON decodes the JSON file at path into v.
func readJSON(t *testing.T, path string, v any) {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

var (
	tokCacheMu sync.Mutex
	tokCache   = map[string]*Tokenizer{}
)

// cached builds a tokenizer once per test binary (Tokenizers are immutable).
func cached(t testing.TB, key string, load func() *Tokenizer) *Tokenizer {
	tokCacheMu.Lock()
	defer tokCacheMu.Unlock()
	if tk, ok := tokCache[key]; ok {
		return tk
	}
	tk := load()
	tokCache[key] = tk
	return tk
}

// cachedGGUF builds the tokenizer of the GGUF at path() once per test
// binary, under key.
func cachedGGUF(t testing.TB, key string, path func() string) *Tokenizer {
	t.Helper()
	return cached(t, key, func() *Tokenizer {
		p := path()
		tk, err := Load(p)
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		return tk
	})
}

// vocabTokenizer loads llama.cpp's vocabulary ggml-vocab-NAME.gguf from the model cache
// (`make vocab` installs it).
func vocabTokenizer(t testing.TB, name string) *Tokenizer {
	t.Helper()
	return cachedGGUF(t, "vocab:"+name, func() string { return testmodel.Vocab(t, name) })
}

// smolTokenizer loads the default model's tokenizer from the model cache.
func smolTokenizer(t testing.TB) *Tokenizer {
	t.Helper()
	return cachedGGUF(t, "smol", func() string { return testmodel.Default(t) })
}

// storiesTokenizer loads stories260K's SPM vocabulary.
func storiesTokenizer(t testing.TB) *Tokenizer {
	t.Helper()
	return cachedGGUF(t, "stories", func() string { return testmodel.Stories(t) })
}

// vocabVector is one llama.cpp tokenizer test: an input and its ids (no BOS).
type vocabVector struct {
	input string
	want  []int32
}

// readVocabVectors reads X.gguf.inp (inputs separated by "\n__ggml_vocab_test__\n", the last
// one followed by the separator too) and X.gguf.out (one line of space-separated ids each),
// from the repository's testdata/ggml-vocab.
func readVocabVectors(t testing.TB, name string) []vocabVector {
	t.Helper()
	inpPath, outPath := testmodel.VocabVectors(t, name)
	inp, err := os.ReadFile(inpPath)
	if err != nil {
		t.Fatal(err)
	}
	outp, err := os.ReadFile(outPath)
	if err != nil {
		t.Fatal(err)
	}
	const sep = "\n__ggml_vocab_test__\n"
	inputs := strings.Split(string(inp), sep)
	if inputs[len(inputs)-1] != "" {
		t.Fatalf("%s.inp does not end with the separator", name)
	}
	inputs = inputs[:len(inputs)-1]
	lines := strings.Split(strings.TrimSuffix(string(outp), "\n"), "\n")
	if len(lines) != len(inputs) {
		t.Fatalf("%s: %d inputs but %d output lines", name, len(inputs), len(lines))
	}
	vs := make([]vocabVector, len(inputs))
	for i, in := range inputs {
		vs[i].input = in
		for _, f := range strings.Fields(lines[i]) {
			id, err := strconv.ParseInt(f, 10, 32)
			if err != nil {
				t.Fatalf("%s.out line %d: %v", name, i+1, err)
			}
			vs[i].want = append(vs[i].want, int32(id))
		}
	}
	return vs
}

// wantRoundTrip checks that ids is want and that decoding it gives text
// back: the check of every tokenizer vector file.
func wantRoundTrip(t *testing.T, tk *Tokenizer, text string, ids, want []int32) {
	t.Helper()
	if !slices.Equal(ids, want) {
		t.Fatalf("Encode(%q)\n got %v\nwant %v", text, ids, want)
	}
	if back := tk.Decode(ids); back != text {
		t.Errorf("Decode(Encode(%q)) = %q", text, back)
	}
}
