package hub

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"
)

// fill writes files (paths relative to dir, slash-separated) of n bytes.
func fill(t *testing.T, dir string, files ...string) {
	t.Helper()
	for i, f := range files {
		p := filepath.Join(dir, filepath.FromSlash(f))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, make([]byte, i+1), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func refs(es []Entry) []string {
	var out []string
	for _, e := range es {
		s := e.Ref
		if e.Partial {
			s += " (partial)"
		}
		out = append(out, s)
	}
	sort.Strings(out)
	return out
}

func TestListAndRemove(t *testing.T) {
	c := &Client{Dir: filepath.Join(t.TempDir(), "hf")}
	if es, err := c.List(); err != nil || len(es) != 0 {
		t.Fatalf("empty cache: %v, %v", es, err)
	}
	fill(t, c.Dir, "a/r/m-Q8_0.gguf", "a/r/m-Q4_K_M.gguf", "a/r/m-Q2_K.gguf.part", "a/r/notes.txt",
		"b/s/d/x-00001-of-00002.gguf", "b/s/d/x-00002-of-00002.gguf", "stray.gguf")
	es, err := c.List()
	want := []string{"a/r/m-Q2_K.gguf (partial)", "a/r/m-Q4_K_M.gguf", "a/r/m-Q8_0.gguf",
		"b/s/d/x-00001-of-00002.gguf", "b/s/d/x-00002-of-00002.gguf"}
	if err != nil || !reflect.DeepEqual(refs(es), want) {
		t.Fatalf("List = %q, %v; want %q", refs(es), err, want)
	}
	if es[0].Size == 0 || !strings.HasPrefix(es[0].Path, c.Dir) {
		t.Fatalf("entry %+v", es[0])
	}
	rm := func(ref string) []string {
		r, err := ParseRef(ref)
		if err != nil {
			t.Fatal(err)
		}
		got, err := c.Remove(r)
		if err != nil {
			return []string{err.Error()}
		}
		for i := range got {
			got[i], _ = filepath.Rel(c.Dir, got[i])
			got[i] = filepath.ToSlash(got[i])
		}
		return got
	}
	for _, tc := range []struct {
		ref  string
		want []string
	}{
		{"a/r:q8_0", []string{"a/r/m-Q8_0.gguf"}},
		{"a/r:Q2_K", []string{"a/r/m-Q2_K.gguf.part"}},
		{"b/s/d/x-00002-of-00002.gguf", []string{"b/s/d/x-00001-of-00002.gguf", "b/s/d/x-00002-of-00002.gguf"}},
		{"a/r", []string{"a/r/m-Q4_K_M.gguf"}},
		{"a/r", []string{"a/r is not in the cache (" + c.Dir + ")"}},
	} {
		if got := rm(tc.ref); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("rm %s = %q, want %q", tc.ref, got, tc.want)
		}
	}
	if _, err := os.Stat(filepath.Join(c.Dir, "b")); !os.IsNotExist(err) {
		t.Errorf("empty directory b kept")
	}
	for _, f := range []string{"stray.gguf", "a/r/notes.txt"} {
		if _, err := os.Stat(filepath.Join(c.Dir, f)); err != nil {
			t.Errorf("%s (not a model file of a repo) was touched: %v", f, err)
		}
	}
}

func TestProgress(t *testing.T) {
	p := newProgress(nil, true, "org/repo/m.gguf")
	p.start(0, 100<<20)
	p.done = 25 << 20
	if got, want := p.line(5*time.Second), "org/repo/m.gguf  25.0 MiB / 100.0 MiB   25%  5.0 MiB/s  ETA 15s"; got != want {
		t.Errorf("line = %q, want %q", got, want)
	}
	p.total = -1
	if got, want := p.line(5*time.Second), "org/repo/m.gguf  25.0 MiB  5.0 MiB/s"; got != want {
		t.Errorf("unknown total: %q, want %q", got, want)
	}
	var b bytes.Buffer
	q := newProgress(&b, false, "f.gguf")
	q.start(512, 2048)
	q.Write(make([]byte, 1536))
	q.start(2048, 2048) // a second attempt says nothing
	q.finish()
	out := b.String()
	if !strings.HasPrefix(out, "downloading f.gguf (2.0 KiB), resuming at 512 B\nf.gguf: 2.0 KiB in ") || strings.Count(out, "\n") != 2 {
		t.Errorf("plain output %q", out)
	}
	for n, want := range map[int64]string{0: "0 B", 1023: "1023 B", 1536: "1.5 KiB", 93 << 20: "93.0 MiB", 5 << 30: "5.0 GiB"} {
		if got := FormatBytes(n); got != want {
			t.Errorf("FormatBytes(%d) = %q, want %q", n, got, want)
		}
	}
}
