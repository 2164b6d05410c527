package testmodel

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fakeTB records the first failure instead of stopping the test.
type fakeTB struct {
	testing.TB
	msg string
}

func (f *fakeTB) Helper()                        {}
func (f *fakeTB) Fatal(a ...any)                 { f.fail(fmt.Sprint(a...)) }
func (f *fakeTB) Fatalf(format string, a ...any) { f.fail(fmt.Sprintf(format, a...)) }

func (f *fakeTB) fail(msg string) {
	if f.msg == "" {
		f.msg = msg
	}
}

// The root is two levels up from this package, and holds go.mod of module
// pagoda; every repository file the helpers name is there.
func TestRootAndRepoFiles(t *testing.T) {
	root, err := Root()
	if err != nil {
		t.Fatal(err)
	}
	wd, _ := os.Getwd()
	if want := filepath.Dir(filepath.Dir(wd)); root != want {
		t.Fatalf("Root() = %q, want %q", root, want)
	}
	if got := Repo("testdata/reference", "x.json"); got != filepath.Join(root, "testdata", "reference", "x.json") {
		t.Fatalf("Repo = %q", got)
	}
	for _, p := range []string{Stories(t), StoriesReference(t), SmolReference(t), SmolTokenizerJSON(t), RepoFile(t, StoriesBin)} {
		if fi, err := os.Stat(p); err != nil || fi.Size() == 0 {
			t.Fatalf("%s: %v", p, err)
		}
	}
	for _, name := range []string{"llama-spm", "phi-3", "gpt-2", "deepseek-llm"} {
		inp, out := VocabVectors(t, name)
		if filepath.Base(inp) != "ggml-vocab-"+name+".gguf.inp" || filepath.Base(out) != "ggml-vocab-"+name+".gguf.out" {
			t.Fatalf("VocabVectors(%q) = %q, %q", name, inp, out)
		}
	}
}

// A missing file fails the test, naming how to get it back.
func TestMissingFails(t *testing.T) {
	t.Setenv("PAGODA_MODELS", t.TempDir())
	for _, tc := range []struct {
		name string
		call func(tb testing.TB) string
		want string
	}{
		{"default model", Default, "make model"},
		{"gemma3", Gemma3, "make gemma3"},
		{"vocab", func(tb testing.TB) string { return Vocab(tb, "llama-spm") }, "make vocab"},
		{"repository file", func(tb testing.TB) string { return RepoFile(tb, "testdata/no-such-file") }, "git checkout"},
	} {
		f := &fakeTB{TB: t}
		tc.call(f)
		if !strings.Contains(f.msg, tc.want) {
			t.Errorf("%s: message %q does not name %q", tc.name, f.msg, tc.want)
		}
	}
}

// Outside the repository there is no root: RepoFile fails, Repo panics.
func TestOutsideRepository(t *testing.T) {
	t.Chdir(t.TempDir())
	if _, err := Root(); err == nil {
		t.Fatal("Root() found a repository above a temporary directory")
	}
	f := &fakeTB{TB: t}
	RepoFile(f, StoriesGGUF)
	if !strings.Contains(f.msg, "go.mod") {
		t.Fatalf("message %q", f.msg)
	}
	defer func() {
		if recover() == nil {
			t.Fatal("Repo did not panic outside the repository")
		}
	}()
	Repo(StoriesGGUF)
}

// ReadReference reads both references' cases and steps, and fails on a file
// without cases.
func TestReadReference(t *testing.T) {
	for _, path := range []string{StoriesReference(t), SmolReference(t)} {
		ref := ReadReference(t, path)
		c := ref.Cases[0]
		if len(c.PromptTokens) == 0 || len(c.Steps) == 0 || len(c.Steps[0].Top) != 5 ||
			int32(c.Steps[0].Top[0][0]) != c.Steps[0].ID || c.Steps[0].Top[0][1] != c.Steps[0].Logprob {
			t.Fatalf("%s: first case %+v", path, c)
		}
	}
	empty := filepath.Join(t.TempDir(), "empty.json")
	if err := os.WriteFile(empty, []byte(`{"cases": []}`), 0o644); err != nil {
		t.Fatal(err)
	}
	f := &fakeTB{TB: t}
	ReadReference(f, empty)
	if !strings.Contains(f.msg, "no cases") {
		t.Errorf("empty reference: message %q", f.msg)
	}
}
