package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"pagoda/gguf"
	"pagoda/internal/testmodel"
)

func runCLI(args ...string) (code int, stdout, stderr string) {
	var o, e bytes.Buffer
	code = run(args, &o, &e)
	return code, o.String(), e.String()
}

func writeGGUF(t *testing.T, arch string, typ gguf.Type) string {
	t.Helper()
	w := gguf.NewWriter()
	w.AddKV("general.architecture", arch)
	data := make([]byte, 32*4)
	if typ != gguf.F32 {
		n, err := typ.RowSize(256)
		if err != nil {
			t.Fatal(err)
		}
		data = make([]byte, n)
	}
	dims := []int{32}
	if typ != gguf.F32 {
		dims = []int{256}
	}
	if err := w.AddTensor("token_embd.weight", typ, dims, data); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "m.gguf")
	if err := w.WriteFile(p); err != nil {
		t.Fatal(err)
	}
	return p
}

// retypeTensor rewrites the type of the file's only tensor (a 1-D tensor
// named token_embd.weight) to typ, in place.
func retypeTensor(t *testing.T, path string, typ uint32) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	name := []byte("token_embd.weight")
	i := bytes.Index(b, name)
	if i < 0 {
		t.Fatal("tensor name not found")
	}
	at := i + len(name) + 4 + 8 // n_dims (u32), one dim (u64), then the type (u32)
	b[at], b[at+1], b[at+2], b[at+3] = byte(typ), byte(typ>>8), byte(typ>>16), byte(typ>>24)
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// Bad input gets a clear message and a non-zero exit code: 1 for a file
// that cannot be served, 2 for bad command-line use.
func TestGenerateErrors(t *testing.T) {
	garbage := filepath.Join(t.TempDir(), "bad.gguf")
	if err := os.WriteFile(garbage, []byte("not a gguf file at all"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"missing file", []string{"generate", "--model", "/nonexistent/x.gguf", "--prompt", "hi"}, 1, "no such file"},
		{"bad gguf", []string{"generate", "--model", garbage, "--prompt", "hi"}, 1, "gguf"},
		{"unsupported arch", []string{"generate", "--model", writeGGUF(t, "gpt-neox", gguf.F32), "--prompt", "hi"}, 1, `unsupported architecture "gpt-neox"`},
		{"unknown tensor type", []string{"generate", "--model", retypeTensor(t, writeGGUF(t, "llama", gguf.F32), 20), "--prompt", "hi"}, 1, "unknown tensor type"},
		{"no prompt", []string{"generate"}, 2, "--prompt is required"},
		{"tp without mpi", []string{"generate", "--model", testmodel.Stories(t), "--prompt", "hi", "--tensor-parallel-size", "2"}, 1, "needs the MPI build"},
		{"tp 0", []string{"generate", "--prompt", "hi", "--tensor-parallel-size", "0"}, 2, "--tensor-parallel-size must be ≥ 1, got 0"},
		{"bad flag", []string{"generate", "--temperature", "hot"}, 2, "invalid value"},
		{"unknown command", []string{"fly"}, 2, `unknown command "fly"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, _, stderr := runCLI(tc.args...)
			if code != tc.code || !strings.Contains(stderr, tc.want) {
				t.Fatalf("exit %d, stderr %q; want exit %d mentioning %q", code, stderr, tc.code, tc.want)
			}
		})
	}
}

func TestGenerateStories(t *testing.T) {
	code, stdout, stderr := runCLI("generate", "--model", testmodel.Stories(t),
		"--prompt", "Once upon a time", "--max-tokens", "12")
	if code != 0 || !strings.Contains(stdout, "there was a little girl") || !strings.Contains(stderr, "generated: 12 tokens") {
		t.Fatalf("exit %d\nstdout %q\nstderr %q", code, stdout, stderr)
	}
}

// TestGenerateKVQ8: pagoda generate on the default model with a q8_0 KV
// cache, end to end, answers as with the f16 cache (the first tokens of
// this prompt are far from ties; later ones may differ); with
// --exact-arithmetic it is refused naming the flags.
func TestGenerateKVQ8(t *testing.T) {
	run := func(kv string, extra ...string) (int, string, string) {
		return runCLI(append([]string{"generate", "--model", testmodel.Default(t), "--prompt", "The capital of France is",
			"--max-tokens", "3", "--threads", "2", "--kv-cache-dtype", kv}, extra...)...)
	}
	for _, kv := range []string{"f16", "q8_0"} {
		if code, out, stderr := run(kv); code != 0 || !strings.HasPrefix(out, " Paris.") {
			t.Fatalf("%s: exit %d, stdout %q, stderr %q", kv, code, out, stderr)
		}
	}
	if code, _, stderr := run("q8_0", "--exact-arithmetic"); code == 0 || !strings.Contains(stderr, "--kv-cache-dtype q8_0") {
		t.Fatalf("q8_0 with --exact-arithmetic: exit %d, stderr %q", code, stderr)
	}
}
