package e2e

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
)

// openaiVersion is the OpenAI Python client the test installs.
const openaiVersion = "3.54.0"

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
// package: python3 -m venv, then pip install openai==openaiVersion. The
// environment is kept under the OS temporary directory, keyed by the
// version, so later runs reuse it; it is built in a scratch directory and
// renamed into place, so an interrupted install is never reused. Fails
// (does not skip) without python3, venv or pip.
func openaiVenv(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(os.TempDir(), "pagoda-e2e-venv-openai-"+openaiVersion)
	python := filepath.Join(dir, "bin", "python")
	if exec.Command(python, "-c", "import openai").Run() == nil {
		return python
	}
	sys, err := exec.LookPath("python3")
	if err != nil {
		t.Fatal("python3 is missing: the end-to-end test needs python3 with venv and pip (make deps)")
	}
	scratch, err := os.MkdirTemp(os.TempDir(), "pagoda-e2e-venv-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(scratch)
	run := func(name string, args ...string) {
		var out bytes.Buffer
		cmd := exec.Command(name, args...)
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Run(); err != nil {
			t.Fatalf("%s %v: %v\n%s", name, args, err, out.String())
		}
	}
	run(sys, "-m", "venv", scratch)
	run(filepath.Join(scratch, "bin", "python"), "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
		"openai=="+openaiVersion)
	os.RemoveAll(dir)
	// A venv records its own path: create it again in place, over the
	// installed packages, so its scripts and pyvenv.cfg point at dir.
	if err := os.Rename(scratch, dir); err != nil {
		t.Fatal(err)
	}
	run(sys, "-m", "venv", dir)
	if out, err := exec.Command(python, "-c", "import openai").CombinedOutput(); err != nil {
		t.Fatalf("the venv at %s cannot import openai: %v\n%s", dir, err, out)
	}
	return python
}
