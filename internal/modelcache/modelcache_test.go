package modelcache

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fakeTB records Fatalf instead of stopping the test.
type fakeTB struct{ msg string }

func (f *fakeTB) Helper()                        {}
func (f *fakeTB) Fatalf(format string, a ...any) { f.msg = fmt.Sprintf(format, a...) }

func TestDirAndRequire(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("PAGODA_MODELS", dir)
	if Dir() != dir || Default() != filepath.Join(dir, DefaultFile) || Path("a", "b") != filepath.Join(dir, "a", "b") {
		t.Fatalf("Dir %q, Default %q", Dir(), Default())
	}
	var f fakeTB
	Require(&f, DefaultFile)
	if !strings.Contains(f.msg, "make model") || !strings.Contains(f.msg, DefaultFile) {
		t.Fatalf("missing file message %q", f.msg)
	}
	if err := os.WriteFile(Default(), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	f = fakeTB{}
	if p := Require(&f, DefaultFile); p != Default() || f.msg != "" {
		t.Fatalf("Require = %q, message %q", p, f.msg)
	}
	t.Setenv("PAGODA_MODELS", "")
	if home, err := os.UserHomeDir(); err == nil && Dir() != filepath.Join(home, ".cache", "pagoda", "models") {
		t.Fatalf("default Dir %q", Dir())
	}
}
