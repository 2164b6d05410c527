package tokenizer

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"pagoda/gguf"
	"pagoda/internal/modelcache"
)

const (
	sharedModels = "../../shared/models"
	vocabDir     = sharedModels + "/ggml-vocab"
)

// loadGGUF opens a GGUF and builds its tokenizer.
func loadGGUF(t testing.TB, path string) (*Tokenizer, error) {
	f, err := gguf.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return FromGGUF(f)
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

// vocabTokenizer loads shared/models/ggml-vocab/ggml-vocab-NAME.gguf. The shared copies were
// damaged in transit (non-UTF-8 bytes replaced by U+FFFD, which breaks GGUF); when the shared
// file does not load, the pristine copy that scripts/fetch-ggml-vocab.sh installs in the model
// cache is used instead.
func vocabTokenizer(t testing.TB, name string) *Tokenizer {
	t.Helper()
	return cached(t, "vocab:"+name, func() *Tokenizer {
		file := "ggml-vocab-" + name + ".gguf"
		tk, errShared := loadGGUF(t, filepath.Join(vocabDir, file))
		if errShared == nil {
			return tk
		}
		tk, errCache := loadGGUF(t, modelcache.Path("ggml-vocab", file))
		if errCache != nil {
			t.Fatalf("cannot load %s: shared copy: %v; cached copy: %v\n"+
				"run make model (scripts/fetch-ggml-vocab.sh) (the shared copy is UTF-8-mangled)", file, errShared, errCache)
		}
		return tk
	})
}

// smolTokenizer loads the default model's tokenizer from the model cache.
func smolTokenizer(t testing.TB) *Tokenizer {
	t.Helper()
	return cached(t, "smol", func() *Tokenizer {
		path := modelcache.Require(t, modelcache.DefaultFile)
		tk, err := loadGGUF(t, path)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		return tk
	})
}

// storiesTokenizer loads stories260K's SPM vocabulary.
func storiesTokenizer(t testing.TB) *Tokenizer {
	t.Helper()
	return cached(t, "stories", func() *Tokenizer {
		tk, err := loadGGUF(t, sharedModels+"/stories260K/stories260K.gguf")
		if err != nil {
			t.Fatalf("stories260K: %v", err)
		}
		return tk
	})
}

// vocabVector is one llama.cpp tokenizer test: an input and its ids (no BOS).
type vocabVector struct {
	input string
	want  []int32
}

// readVocabVectors reads X.gguf.inp (inputs separated by "\n__ggml_vocab_test__\n", the last
// one followed by the separator too) and X.gguf.out (one line of space-separated ids each).
func readVocabVectors(t testing.TB, name string) []vocabVector {
	t.Helper()
	base := filepath.Join(vocabDir, "ggml-vocab-"+name+".gguf")
	inp, err := os.ReadFile(base + ".inp")
	if err != nil {
		t.Fatal(err)
	}
	outp, err := os.ReadFile(base + ".out")
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

func equalIDs(a, b []int32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
