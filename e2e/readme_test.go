package e2e

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"pagoda/internal/testmodel"
)

// TestReadmeExamples runs the README's requests as written — its ```sh
// blocks with curl (a chat completion, an Anthropic message) and its
// ```python block with the OpenAI client — against `pagoda serve smollm2`
// started as the README starts it (the model by its reference, whose name
// the requests use), only on another port.
func TestReadmeExamples(t *testing.T) {
	testmodel.Default(t)
	readme, err := os.ReadFile(testmodel.RepoFile(t, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	blocks := func(lang string) []string {
		re := regexp.MustCompile("(?s)```" + lang + "\n(.*?)```")
		var out []string
		for _, m := range re.FindAllStringSubmatch(string(readme), -1) {
			out = append(out, m[1])
		}
		return out
	}
	sh, py := blocks("sh"), blocks("python")
	if len(sh) == 0 || len(py) == 0 {
		t.Fatalf("README.md has %d sh and %d python blocks, want at least one of each", len(sh), len(py))
	}
	python := openaiVenv(t)
	bin := buildPagoda(t)
	port := freePort(t)
	base := "http://127.0.0.1:" + strconv.Itoa(port)
	srv := startProcess(t, "pagoda serve", exec.Command(bin, "serve", "smollm2", "--port", strconv.Itoa(port),
		"--max-model-len", "1024", "--max-num-seqs", "8"))
	waitHealthy(t, base, srv)
	here := func(code string) string { return strings.ReplaceAll(code, "http://127.0.0.1:8000", base) }

	for i, code := range sh {
		out := runExample(t, "README sh block "+strconv.Itoa(i), exec.Command("bash", "-euo", "pipefail", "-c", here(code)))
		var resp struct {
			Model   string `json:"model"`
			Type    string `json:"type"`
			Choices []struct {
				Message struct{ Content string } `json:"message"`
			} `json:"choices"`
			Content []struct{ Type, Text string } `json:"content"` // Anthropic's message
		}
		err := json.Unmarshal(out, &resp)
		switch {
		case err == nil && resp.Type == "message":
			if len(resp.Content) == 0 || resp.Content[0].Text == "" {
				t.Fatalf("sh block %d: an Anthropic message without text: %s", i, out)
			}
		case err != nil || len(resp.Choices) == 0 || resp.Choices[0].Message.Content == "":
			t.Fatalf("sh block %d: not a chat completion or message with content (%v): %s", i, err, out)
		}
		if resp.Model != "smollm2" {
			t.Errorf("sh block %d: model %q, want smollm2 (the name typed on the command line)", i, resp.Model)
		}
	}
	for i, code := range py {
		script := filepath.Join(t.TempDir(), "example.py")
		if err := os.WriteFile(script, []byte(here(code)), 0o644); err != nil {
			t.Fatal(err)
		}
		out := runExample(t, "README python block "+strconv.Itoa(i), exec.Command(python, script))
		if len(bytes.TrimSpace(out)) == 0 {
			t.Fatalf("python block %d printed nothing", i)
		}
	}
	srv.stop(t)
}

// runExample runs cmd and returns its standard output; a failure fails
// the test with both outputs.
func runExample(t *testing.T, what string, cmd *exec.Cmd) []byte {
	t.Helper()
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	t.Logf("%s:\n%s%s", what, out, stderr.String())
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	return out
}
