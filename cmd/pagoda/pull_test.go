package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"pagoda/internal/hub/hubtest"
	"pagoda/internal/modelcache"
)

// storiesGGUF is the tiny stories260K model (MIT, see its LICENSE).
const storiesGGUF = "../../testdata/models/stories260K/stories260K.gguf"

// fakeHub serves stories260K as org/stories:Q8_0 (and a gated copy) from a
// fake hub that HF_ENDPOINT points at, with an empty model cache.
func fakeHub(t *testing.T) (*hubtest.Hub, string) {
	t.Helper()
	data, err := os.ReadFile(storiesGGUF)
	if err != nil {
		t.Fatal(err)
	}
	h := hubtest.New(map[string]*hubtest.Repo{
		"org/stories": {Files: map[string]*hubtest.File{
			"stories260K-Q8_0.gguf": {Data: data}, "mmproj-stories-Q8_0.gguf": {Data: []byte("no")}}},
		"org/gated": {Gated: true, Files: map[string]*hubtest.File{"stories260K.gguf": {Data: data}}},
		"org/split": {Files: map[string]*hubtest.File{
			"s-Q8_0-00001-of-00002.gguf": {Data: data[:1000]}, "s-Q8_0-00002-of-00002.gguf": {Data: data[1000:]}}},
	})
	t.Cleanup(h.Close)
	dir := t.TempDir()
	t.Setenv("PAGODA_MODELS", dir)
	t.Setenv("HF_ENDPOINT", h.URL)
	t.Setenv("HF_TOKEN", "")
	t.Setenv("HF_HUB_OFFLINE", "")
	return h, dir
}

// TestGenerateFromHub runs `pagoda generate --model org/repo:Q8_0`: the
// model is downloaded from the fake hub into the cache, then generates;
// a second run uses the cache without the network.
func TestGenerateFromHub(t *testing.T) {
	h, dir := fakeHub(t)
	args := []string{"generate", "--model", "org/stories:Q8_0", "--prompt", "Once upon a time", "--max-tokens", "8", "--threads", "1"}
	code, stdout, stderr := runCLI(args...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if !strings.Contains(stderr, "org/stories/stories260K-Q8_0.gguf") || !strings.Contains(stderr, "generated: 8 tokens") {
		t.Fatalf("stderr lacks the download or the generation line:\n%s", stderr)
	}
	if len(strings.TrimSpace(stdout)) == 0 {
		t.Fatal("no text generated")
	}
	if _, err := os.Stat(filepath.Join(dir, "hf", "org", "stories", "stories260K-Q8_0.gguf")); err != nil {
		t.Fatal(err)
	}
	n := len(h.Log())
	code, stdout2, stderr := runCLI(args...)
	if code != 0 || stdout2 != stdout || len(h.Log()) != n {
		t.Fatalf("cached run: exit %d, %d more requests, output %q vs %q\n%s", code, len(h.Log())-n, stdout2, stdout, stderr)
	}
	code, stdout, stderr = runCLI("model", "info", "org/stories/stories260K-Q8_0.gguf")
	if code != 0 || !strings.Contains(stdout, "general.architecture") {
		t.Fatalf("model info by reference: exit %d\n%s%s", code, stdout, stderr)
	}
}

// TestPullListRm pulls from the fake hub (a gated repo needs HF_TOKEN, a
// split GGUF is fetched whole), lists the cache and removes entries.
func TestPullListRm(t *testing.T) {
	h, dir := fakeHub(t)
	code, _, stderr := runCLI("pull", "org/gated/stories260K.gguf")
	if code != 1 || !strings.Contains(stderr, "HF_TOKEN") {
		t.Fatalf("gated without a token: exit %d: %s", code, stderr)
	}
	t.Setenv("HF_TOKEN", h.Token)
	code, stdout, stderr := runCLI("pull", "org/gated/stories260K.gguf", "org/stories", "org/split:q8_0")
	if code != 0 {
		t.Fatalf("pull: exit %d: %s", code, stderr)
	}
	want := "org/stories\t" + filepath.Join(dir, "hf", "org", "stories", "stories260K-Q8_0.gguf")
	if !strings.Contains(stdout, want) || !strings.Contains(stderr, "split GGUF of 2 parts") {
		t.Fatalf("pull output lacks %q or the split note:\n%s%s", want, stdout, stderr)
	}
	os.WriteFile(modelcache.Default(), []byte("GGUF"), 0o644)
	code, stdout, _ = runCLI("list")
	for _, w := range []string{"REF", "smollm2 ", "org/gated/stories260K.gguf", "1.1 MiB", "org/split/s-Q8_0-00002-of-00002.gguf",
		filepath.Join(dir, "hf", "org", "stories", "stories260K-Q8_0.gguf")} {
		if code != 0 || !strings.Contains(stdout, w) {
			t.Fatalf("list lacks %q:\n%s", w, stdout)
		}
	}
	code, _, stderr = runCLI("generate", "--model", "org/split:Q8_0", "--prompt", "x")
	if code != 1 || !strings.Contains(stderr, "split GGUF of 2 parts") || !strings.Contains(stderr, "llama-gguf-split --merge") {
		t.Fatalf("split model: exit %d: %s", code, stderr)
	}
	code, stdout, stderr = runCLI("rm", "org/split", "smollm2", "org/stories:Q8_0")
	if code != 0 || strings.Count(stdout, "removed ") != 4 {
		t.Fatalf("rm: exit %d:\n%s%s", code, stdout, stderr)
	}
	code, stdout, _ = runCLI("list")
	if code != 0 || strings.Count(stdout, "\n") != 2 || !strings.Contains(stdout, "org/gated/stories260K.gguf") {
		t.Fatalf("list after rm:\n%s", stdout)
	}
	if code, _, stderr = runCLI("rm", "org/stories"); code != 1 || !strings.Contains(stderr, "not in the cache") {
		t.Fatalf("rm of an absent model: exit %d: %s", code, stderr)
	}
}

// TestModelRefs covers the references that never reach the network.
func TestModelRefs(t *testing.T) {
	h, dir := fakeHub(t)
	t.Setenv("HF_HUB_OFFLINE", "1")
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"serve", "org/stories:Q8_0"}, 1, "HF_HUB_OFFLINE"},
		{[]string{"generate", "--model", "smollm2", "--prompt", "x"}, 1, "HF_HUB_OFFLINE"},
		{[]string{"generate", "--model", "smollm2:q8_0", "--prompt", "x"}, 1, "Q4_1 only"},
		{[]string{"generate", "--model", "gemma3", "--prompt", "x"}, 1, "HF_HUB_OFFLINE"},
		{[]string{"pull", "gemma3"}, 1, "HF_HUB_OFFLINE"},
		{[]string{"pull", "gemma3:q4_1"}, 2, "gemma3 comes in Q4_K_M only (gemma3 or gemma3:q4_k_m)"},
		{[]string{"generate", "--model", "stories", "--prompt", "x"}, 1, "not a model reference"},
		{[]string{"generate", "--model", "models/x/y.gguf", "--prompt", "x"}, 1, "no such file; as a Hugging Face reference"},
		{[]string{"pull", "./x.gguf"}, 2, "not a Hugging Face reference"},
		{[]string{"pull"}, 2, "want at least one"},
		{[]string{"rm", "nothing"}, 2, "not a Hugging Face reference"},
	} {
		code, _, stderr := runCLI(tc.args...)
		if code != tc.code || !strings.Contains(stderr, tc.want) {
			t.Errorf("%v: exit %d, want %d with %q:\n%s", tc.args, code, tc.code, tc.want, stderr)
		}
	}
	if n := len(h.Log()); n != 0 {
		t.Fatalf("offline commands made %d requests", n)
	}
	def := filepath.Join(dir, modelcache.DefaultFile)
	os.WriteFile(def, []byte("GGUF"), 0o644)
	for _, ref := range []string{"smollm2", "SmolLM2:Q4_1", def} {
		if p, err := resolveModel(ref, nil); err != nil || p != def {
			t.Errorf("resolveModel(%s) = %s, %v; want %s", ref, p, err, def)
		}
	}
	gemma := filepath.Join(dir, modelcache.Gemma3File)
	os.WriteFile(gemma, []byte("GGUF"), 0o644)
	for _, ref := range []string{"gemma3", "Gemma3:Q4_K_M", "gemma3:q4_k_m"} {
		if p, err := resolveModel(ref, nil); err != nil || p != gemma {
			t.Errorf("resolveModel(%s) = %s, %v; want %s", ref, p, err, gemma)
		}
	}
	if code, stdout, _ := runCLI("list"); code != 0 || !strings.Contains(stdout, "gemma3 ") || !strings.Contains(stdout, "smollm2 ") {
		t.Errorf("list does not name the cached models:\n%s", stdout)
	}
	if code, stdout, stderr := runCLI("rm", "gemma3"); code != 0 || !strings.Contains(stdout, "removed "+gemma) {
		t.Errorf("rm gemma3: exit %d:\n%s%s", code, stdout, stderr)
	}
}

// `pagoda pull` takes the hub's addresses and Ollama's and llama.cpp's
// forms, and says what to do when the hub cannot be reached, in one line.
func TestPullFormsAndErrors(t *testing.T) {
	h, dir := fakeHub(t)
	want := filepath.Join(dir, "hf", "org", "stories", "stories260K-Q8_0.gguf")
	code, stdout, stderr := runCLI("pull", "https://huggingface.co/org/stories/resolve/main/stories260K-Q8_0.gguf?download=true")
	if code != 0 || !strings.HasSuffix(stdout, "\t"+want+"\n") {
		t.Fatalf("pull URL: exit %d\n%s%s", code, stdout, stderr)
	}
	n := len(h.Log())
	for _, ref := range []string{"hf.co/org/stories:Q8_0", "hf://org/stories", "https://huggingface.co/org/stories"} {
		if code, stdout, stderr := runCLI("pull", ref); code != 0 || stdout != ref+"\t"+want+"\n" {
			t.Errorf("pull %s: exit %d\n%s%s", ref, code, stdout, stderr)
		}
	}
	if len(h.Log()) != n {
		t.Errorf("cached references made %d requests", len(h.Log())-n)
	}
	h.Close() // from now on, nothing answers at HF_ENDPOINT
	for _, args := range [][]string{{"pull", "org/other:Q4_K_M"}, {"pull", "org/other/m.gguf"},
		{"generate", "--model", "hf.co/org/other", "--prompt", "x"}} {
		code, _, stderr := runCLI(args...)
		if code != 1 || strings.Count(stderr, "\n") != 1 || strings.Contains(stderr, "dial tcp") {
			t.Errorf("%q: exit %d, stderr %q: want exit 1 and one line without the transport's error", args, code, stderr)
		}
		for _, w := range []string{"cannot reach " + h.URL + " (connection refused)", "HF_ENDPOINT", "HF_HUB_OFFLINE=1", "path of a GGUF file"} {
			if !strings.Contains(stderr, w) {
				t.Errorf("%q: %q lacks %q", args, stderr, w)
			}
		}
	}
	for _, ref := range []string{"./x.gguf", "https://huggingface.co/org/repo/resolve/v2/x.gguf", "org/re po:Q8_0"} {
		code, _, stderr := runCLI("pull", ref)
		if code != 2 || strings.Count(stderr, ref) != 1 || !strings.Contains(stderr, "not a Hugging Face reference") {
			t.Errorf("pull %s: exit %d, stderr %q: want exit 2 naming it once", ref, code, stderr)
		}
	}
}
