package e2e

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"pagoda/internal/testmodel"
)

// The Python packages of the structured-output end-to-end test, beside
// openaiVersion (the same OpenAI client as TestServeEndToEnd).
const (
	jsonschemaVersion      = "4.26.0"
	langchainOpenAIVersion = "1.7.4"
)

// TestStructuredEndToEnd starts `pagoda serve` on the default model with
// auto tool choice (the hermes parser) and drives structured outputs and
// tool calling through the official clients: structured_client.py (the
// OpenAI Python client, outputs validated by jsonschema and Pydantic),
// langchain_client.py (LangChain's ChatOpenAI) and node_client.mjs (the
// OpenAI Node client, outputs validated by ajv). Then SIGTERM, which must
// exit 0.
func TestStructuredEndToEnd(t *testing.T) {
	modelPath := testmodel.Default(t)
	python := structuredVenv(t)
	nodeDir := nodeClientDir(t)
	bin := buildPagoda(t)
	port := freePort(t)
	base := "http://127.0.0.1:" + strconv.Itoa(port)
	srv := startServer(t, bin, modelPath, port, "--enable-auto-tool-choice", "--tool-call-parser", "hermes")
	waitHealthy(t, base, srv)

	clientArgs := []string{"--base-url", base + "/v1", "--model", servedName}
	runLogged(t, "openai python client", exec.Command(python, append([]string{"structured_client.py"}, clientArgs...)...))
	runLogged(t, "langchain", exec.Command(python, append([]string{"langchain_client.py"}, clientArgs...)...))
	node := exec.Command("node", append([]string{"node_client.mjs"}, clientArgs...)...)
	node.Dir = nodeDir
	runLogged(t, "openai node client", node)
	srv.stop(t)
}

// structuredVenv returns the python of a virtual environment with openai,
// jsonschema and langchain-openai at the pinned versions (see pythonVenv).
func structuredVenv(t *testing.T) string {
	t.Helper()
	versions := strings.Join([]string{openaiVersion, jsonschemaVersion, langchainOpenAIVersion}, "-")
	return pythonVenv(t, "structured-"+versions, "import openai, jsonschema, langchain_openai",
		"openai=="+openaiVersion, "jsonschema=="+jsonschemaVersion, "langchain-openai=="+langchainOpenAIVersion)
}

// nodeClientDir returns a directory holding node_client.mjs beside the
// node_modules that `npm ci` installs from e2e/package-lock.json. The
// packages are kept under the OS temporary directory keyed by the lock
// file's hash (installed in a scratch directory renamed into place); the
// script is copied into a directory of the test's own. Fails, naming the
// package to install, without node or npm.
func nodeClientDir(t *testing.T) string {
	t.Helper()
	for _, tool := range []string{"node", "npm"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s is missing: install it with `apt-get install nodejs npm` (or `make deps`)", tool)
		}
	}
	lock, err := os.ReadFile("package-lock.json")
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(lock)
	dir := filepath.Join(os.TempDir(), "pagoda-e2e-node-"+hex.EncodeToString(sum[:6]))
	modules := filepath.Join(dir, "node_modules")
	if _, err := os.Stat(filepath.Join(modules, "openai", "package.json")); err != nil {
		scratch, err := os.MkdirTemp(os.TempDir(), "pagoda-e2e-node-")
		if err != nil {
			t.Fatal(err)
		}
		defer os.RemoveAll(scratch)
		copyE2EFiles(t, scratch, "package.json", "package-lock.json")
		cmd := []string{"npm", "ci", "--prefix", scratch, "--no-audit", "--no-fund", "--ignore-scripts", "--loglevel=error"}
		runSetupStep(t, "npm ci failed", cmd[0], cmd[1:]...)
		os.RemoveAll(dir)
		if err := os.Rename(scratch, dir); err != nil {
			t.Fatal(err)
		}
	}
	work := t.TempDir()
	copyE2EFiles(t, work, "node_client.mjs")
	if err := os.Symlink(modules, filepath.Join(work, "node_modules")); err != nil {
		t.Fatal(err)
	}
	return work
}

// copyE2EFiles copies files of this directory into dir.
func copyE2EFiles(t *testing.T, dir string, names ...string) {
	t.Helper()
	for _, name := range names {
		b, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
