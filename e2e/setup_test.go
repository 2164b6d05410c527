package e2e

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// openaiVersion is the OpenAI Python client the test installs.
const openaiVersion = "3.54.0"

// ollamaVersion is Ollama's Python client TestOllamaEndToEnd installs.
const ollamaVersion = "0.6.3"

// anthropicVersion is the Anthropic Python client of TestResponsesAndMessagesEndToEnd.
const anthropicVersion = "2.14.0"

// buildPagoda builds the pagoda binary into the test's temporary directory.
func buildPagoda(t *testing.T) string {
	t.Helper()
	goBin := filepath.Join(runtime.GOROOT(), "bin", "go")
	if _, err := os.Stat(goBin); err != nil {
		if goBin, err = exec.LookPath("go"); err != nil {
			t.Fatal("no go command to build pagoda with")
		}
	}
	bin := filepath.Join(t.TempDir(), "pagoda")
	cmd := exec.Command(goBin, "build", "-o", bin, "../cmd/pagoda")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building pagoda: %v\n%s", err, out)
	}
	return bin
}

// openaiVenv returns the python of a virtual environment with the openai
// package at openaiVersion (see pythonVenv).
func openaiVenv(t *testing.T) string {
	t.Helper()
	return pythonVenv(t, "openai-"+openaiVersion, "import openai", "openai=="+openaiVersion)
}

// pythonVenv returns the python of a virtual environment with pkgs (pinned
// requirements) installed, in which probe (python code) runs: python3 -m
// venv, then pip install. The environment is kept under the OS temporary
// directory, keyed by name (which names the pinned versions), so later runs
// reuse it; it is built in a scratch directory and renamed into place, so an
// interrupted install is never reused. Fails (does not skip), naming the
// package to install, without python3, venv or pip.
func pythonVenv(t *testing.T, name, probe string, pkgs ...string) string {
	t.Helper()
	dir := filepath.Join(os.TempDir(), "pagoda-e2e-venv-"+name)
	python := filepath.Join(dir, "bin", "python")
	if exec.Command(python, "-c", probe).Run() == nil {
		return python
	}
	sys, err := exec.LookPath("python3")
	if err != nil {
		t.Fatal("python3 is missing: install it with `apt-get install python3 python3-venv` (or `make deps`)")
	}
	scratch, err := os.MkdirTemp(os.TempDir(), "pagoda-e2e-venv-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(scratch)
	runSetupStep(t, "python3 -m venv failed: install venv and pip with `apt-get install python3-venv` (or `make deps`)",
		sys, "-m", "venv", scratch)
	runSetupStep(t, "pip install failed", filepath.Join(scratch, "bin", "python"),
		append([]string{"-m", "pip", "install", "--quiet", "--disable-pip-version-check"}, pkgs...)...)
	os.RemoveAll(dir)
	if err := os.Rename(scratch, dir); err != nil {
		t.Fatal(err)
	}
	// A venv records its own path: create it again in place, over the
	// installed packages, so its scripts and pyvenv.cfg point at dir.
	runSetupStep(t, "python3 -m venv failed", sys, "-m", "venv", dir)
	runSetupStep(t, "the venv at "+dir+" cannot import its packages", python, "-c", probe)
	return python
}

// runSetupStep runs one command of a test's set-up and fails the test with
// why and the command's output when it fails.
func runSetupStep(t *testing.T, why, name string, args ...string) {
	t.Helper()
	var out bytes.Buffer
	cmd := exec.Command(name, args...)
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s: %s %s: %v\n%s", why, name, strings.Join(args, " "), err, out.String())
	}
}

// ollamaVenv returns the python of a virtual environment with Ollama's
// client at ollamaVersion and openai at openaiVersion (see pythonVenv).
func ollamaVenv(t *testing.T) string {
	t.Helper()
	return pythonVenv(t, "ollama-"+ollamaVersion+"-openai-"+openaiVersion, "import ollama, openai",
		"ollama=="+ollamaVersion, "openai=="+openaiVersion)
}
