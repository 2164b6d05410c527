// Package testmodel locates the models and data that pagoda's tests read,
// and fails the test (never skips it) when one is missing, naming the
// command that provides it; ReadReference reads llama.cpp's reference
// outputs. Tests import it; the binary does not.
//
// Two places hold test data:
//
//   - the repository, found from the working directory (go test runs a
//     package's tests in its directory) by walking up to the go.mod of
//     module pagoda: stories260K and its llama2.c copy, the SmolLM2
//     tokenizer, llama.cpp's tokenizer test vectors and the llama.cpp
//     reference outputs, under testdata/ (each folder's README says where
//     its files came from and their sha256);
//   - the model cache of internal/modelcache ($PAGODA_MODELS, default
//     ~/.cache/pagoda/models): the default model, which `make model`
//     fetches, Gemma 3 270M, which `make gemma3` fetches, and llama.cpp's
//     vocabulary GGUFs, which `make vocab` fetches (`make test` runs all
//     three).
//
// -short, across the suite, means smaller workloads (fewer requests,
// prompts or steps; the race detector runs with it), never fewer models: a
// test that needs a model runs under -short too and fails when the model is
// missing.
package testmodel

import (
	"bufio"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"pagoda/internal/modelcache"
)

// Paths inside the repository, slash-separated (Repo converts them).
const (
	StoriesGGUF      = "testdata/models/stories260K/stories260K.gguf"
	StoriesBin       = "testdata/models/stories260K/stories260K.bin"
	StoriesRef       = "testdata/reference/stories260K.public.json"
	SmolRef          = "testdata/reference/smollm2-135m-instruct-q4_1.json"
	SmolTeacherRef   = "testdata/reference/smollm2-135m-instruct-q4_1.teacher.json"
	SmolTokenizer    = "testdata/models/smollm2-135m-instruct-tokenizer/tokenizer.json"
	VocabVectorsDir  = "testdata/ggml-vocab"
	vocabCacheSubdir = "ggml-vocab"
	module           = "pagoda"
)

// Root is the repository's root: the nearest directory at or above the
// working directory whose go.mod declares module pagoda.
func Root() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if isModuleRoot(filepath.Join(dir, "go.mod")) {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("testmodel: no go.mod of module " + module + " at or above the working directory")
		}
		dir = parent
	}
}

// isModuleRoot reports whether path is a go.mod declaring module pagoda
// (kernels/_asm has a go.mod of its own module, which is passed over).
func isModuleRoot(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if fields := strings.Fields(sc.Text()); len(fields) == 2 && fields[0] == "module" {
			return strings.Trim(fields[1], `"`) == module
		}
	}
	return false
}

// Repo is the path of rel (slash-separated, relative to the repository's
// root) joined with more. Outside the repository, where there is no path
// to give, it panics: go test never runs a package's tests there, so this
// is reached only by a test binary started by hand in another directory.
// Tests prefer the functions taking a testing.TB, which fail instead.
func Repo(rel string, more ...string) string {
	root, err := Root()
	if err != nil {
		panic(err)
	}
	return filepath.Join(append([]string{root, filepath.FromSlash(rel)}, more...)...)
}

// RepoFile is Repo for a file that must exist: it fails the test when the
// root or the file is missing.
func RepoFile(t testing.TB, rel string, more ...string) string {
	t.Helper()
	root, err := Root()
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(append([]string{root, filepath.FromSlash(rel)}, more...)...)
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("%v: the file is part of the repository (restore it: git checkout -- %s)", err, p)
	}
	return p
}

// Stories is stories260K.gguf, the tiny real model most tests run.
func Stories(t testing.TB) string { t.Helper(); return RepoFile(t, StoriesGGUF) }

// StoriesReference is llama.cpp's greedy reference for stories260K.
func StoriesReference(t testing.TB) string { t.Helper(); return RepoFile(t, StoriesRef) }

// SmolReference is llama.cpp's greedy reference for the default model.
func SmolReference(t testing.TB) string { t.Helper(); return RepoFile(t, SmolRef) }

// SmolTeacherReference is llama.cpp's greedy continuation of the same
// prompts along its default path (prompt in one batch), which tests score
// teacher-forced.
func SmolTeacherReference(t testing.TB) string { t.Helper(); return RepoFile(t, SmolTeacherRef) }

// SmolTokenizerJSON is SmolLM2-135M-Instruct's Hugging Face tokenizer.json.
func SmolTokenizerJSON(t testing.TB) string { t.Helper(); return RepoFile(t, SmolTokenizer) }

// VocabVectors are llama.cpp's tokenizer test vectors for the vocabulary
// NAME (as in ggml-vocab-NAME.gguf): the inputs and the expected ids.
func VocabVectors(t testing.TB, name string) (inp, out string) {
	t.Helper()
	base := "ggml-vocab-" + name + ".gguf"
	return RepoFile(t, VocabVectorsDir, base+".inp"), RepoFile(t, VocabVectorsDir, base+".out")
}

// Default is the default model in the model cache (Fetched: `make model`).
func Default(t testing.TB) string {
	t.Helper()
	return Fetched(t, "make model", modelcache.DefaultFile)
}

// Gemma3 is Gemma 3 270M in GGUF Q4_K_M in the model cache (Fetched:
// `make gemma3`).
func Gemma3(t testing.TB) string {
	t.Helper()
	return Fetched(t, "make gemma3", modelcache.Gemma3File)
}

// Vocab is llama.cpp's vocabulary-only GGUF ggml-vocab-NAME.gguf in the
// model cache (Fetched: `make vocab`).
func Vocab(t testing.TB, name string) string {
	t.Helper()
	return Fetched(t, "make vocab", vocabCacheSubdir, "ggml-vocab-"+name+".gguf")
}

// MakeTestEnv is set by `make test`: every test runs, and a file the
// model cache lacks fails the test.
const MakeTestEnv = "PAGODA_MAKE_TEST"

// Fetched is the path of a file in the model cache (name joined under it),
// which the command fetch installs. The tests run in two tiers:
//
//   - under `make test` (MakeTestEnv set), which fetches everything
//     first, a missing file fails the test with the command that fetches
//     it;
//   - a plain `go test ./...` on a fresh clone skips the tests whose files
//     are missing, saying which file and which command provides it (the
//     skip is the test's only output: `go test -v` lists them), and runs
//     them when the file is there.
func Fetched(t testing.TB, fetch string, name ...string) string {
	t.Helper()
	p := modelcache.Path(name...)
	if _, err := os.Stat(p); err != nil {
		if os.Getenv(MakeTestEnv) == "" {
			t.Skipf("needs %s, which `%s` fetches; skipped outside `make test` (%s unset)", p, fetch, MakeTestEnv)
		}
		t.Fatalf("%v: run `%s` to fetch it", err, fetch)
	}
	return p
}
