package hub

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

func TestParseRef(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Ref
	}{
		{"bartowski/SmolLM2-135M-Instruct-GGUF", Ref{Repo: "bartowski/SmolLM2-135M-Instruct-GGUF"}},
		{"org/repo:Q8_0", Ref{Repo: "org/repo", Quant: "Q8_0"}},
		{"unsloth/Qwen3-GGUF:UD-Q4_K_XL", Ref{Repo: "unsloth/Qwen3-GGUF", Quant: "UD-Q4_K_XL"}},
		{"org/repo/model.Q4_1.gguf", Ref{Repo: "org/repo", File: "model.Q4_1.gguf"}},
		{"org/repo/Q4_K_M/m-00001-of-00002.gguf", Ref{Repo: "org/repo", File: "Q4_K_M/m-00001-of-00002.gguf"}},
	} {
		got, err := ParseRef(tc.in)
		if err != nil || got != tc.want {
			t.Errorf("ParseRef(%q) = %+v, %v; want %+v", tc.in, got, err, tc.want)
			continue
		}
		if got.String() != tc.in {
			t.Errorf("String() = %q, want %q", got.String(), tc.in)
		}
	}
	for _, bad := range []string{"smollm2", "model.gguf", "/abs/path.gguf", "./x/y.gguf", "org/repo/README.md",
		"org/repo/../../etc/x.gguf", "org/repo//x.gguf", "org/repo:", "org/repo:Q4 K", "../repo", "org/..:Q8_0",
		"-org/repo", "org/re po", "org/repo/a\\b.gguf", ""} {
		if r, err := ParseRef(bad); !errors.Is(err, ErrNotRef) {
			t.Errorf("ParseRef(%q) = %+v, %v; want ErrNotRef", bad, r, err)
		}
	}
}

func TestSelect(t *testing.T) {
	files := []string{"README.md", "mmproj-model-Q8_0.gguf", "model.imatrix.Q4_K_M.gguf", "model-Q2_K.gguf",
		"model-Q8_0.gguf", "model-q4_k_m.gguf", "big/model-Q6_K-00002-of-00002.gguf", "big/model-Q6_K-00001-of-00002.gguf",
		"model-Q4_K_S.gguf"}
	for _, tc := range []struct{ quant, want string }{
		{"", "model-q4_k_m.gguf"},                      // the default, case-insensitively
		{"Q8_0", "model-Q8_0.gguf"},                    // not the mmproj file
		{"q2_k", "model-Q2_K.gguf"},                    // any case
		{"Q4_K", ""},                                   // Q4_K_M and Q4_K_S are not "Q4_K" + [.-]
		{"Q6_K", "big/model-Q6_K-00001-of-00002.gguf"}, // the first part
		{"F16", ""},
	} {
		got, err := Select(files, tc.quant)
		if got != tc.want || (err == nil) != (tc.want != "") {
			t.Errorf("Select(%q) = %q, %v; want %q", tc.quant, got, err, tc.want)
		}
	}
	if got, _ := Select([]string{"a-Q5_K_M.gguf", "b-Q8_0.gguf"}, ""); got != "b-Q8_0.gguf" {
		t.Errorf("no Q4_K_M: got %q, want the Q8_0 fallback", got)
	}
	if got, _ := Select([]string{"mmproj-f16.gguf", "x-F16.gguf"}, ""); got != "x-F16.gguf" {
		t.Errorf("no default quant: got %q, want the first model file", got)
	}
	if _, err := Select([]string{"README.md"}, ""); err == nil {
		t.Error("a repo without GGUF files: want an error")
	}
}

func TestParts(t *testing.T) {
	want := []string{"d/m-Q6_K-00001-of-00003.gguf", "d/m-Q6_K-00002-of-00003.gguf", "d/m-Q6_K-00003-of-00003.gguf"}
	if got := Parts("d/m-Q6_K-00002-of-00003.gguf"); !reflect.DeepEqual(got, want) {
		t.Errorf("Parts = %q, want %q", got, want)
	}
	for _, f := range []string{"m.gguf", "m-00004-of-00003.gguf", "m-00000-of-00000.gguf"} {
		if got := Parts(f); !reflect.DeepEqual(got, []string{f}) {
			t.Errorf("Parts(%q) = %q, want the file alone", f, got)
		}
	}
	if s := SplitOf("x-00002-of-00005.gguf"); s != (Split{"x", 2, 5}) {
		t.Errorf("SplitOf = %+v", s)
	}
}

func TestETagSHA256(t *testing.T) {
	sum := "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"
	for in, want := range map[string]string{
		`"` + sum + `"`: sum, `W/"` + sum + `"`: sum, sum: sum,
		`"0a1b2c3d4e5f60718293a4b5c6d7e8f901234567"`: "", "": "", `"xyz"`: "",
	} {
		if got := etagSHA256(in); got != want {
			t.Errorf("etagSHA256(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestContentRange(t *testing.T) {
	for in, want := range map[string][3]int64{"bytes 100-199/200": {100, 200, 1}, "bytes 5-9/*": {5, -1, 1},
		"bytes */200": {0, 0, 0}, "items 1-2/3": {0, 0, 0}, "bytes x-1/2": {0, 0, 0}} {
		s, tot, ok := contentRange(in)
		if ok != (want[2] == 1) || (ok && (s != want[0] || tot != want[1])) {
			t.Errorf("contentRange(%q) = %d, %d, %v; want %v", in, s, tot, ok, want)
		}
	}
}

// FuzzParseRef: no panic; a reference parsed is one whose String parses
// back to it, and whose file stays inside its repo directory.
func FuzzParseRef(f *testing.F) {
	for _, s := range []string{"org/repo", "org/repo:Q8_0", "org/repo/a/b.gguf", "../x", "a/b/../c.gguf", "a/b:", "a//b.gguf"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r, err := ParseRef(s)
		if err != nil {
			return
		}
		back, err := ParseRef(r.String())
		if err != nil || back != r {
			t.Fatalf("%q → %+v → %q → %+v, %v", s, r, r.String(), back, err)
		}
		if r.File != "" && checkFile(r.File) != nil || strings.Count(r.Repo, "/") != 1 {
			t.Fatalf("%q → %+v", s, r)
		}
	})
}
