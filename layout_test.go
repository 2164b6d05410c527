package pagoda_test

import (
	"errors"
	"go/build"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// The module path: every repository package imports the others under it.
const module = "pagoda"

// layoutFile holds the Layout section the test checks.
const layoutFile = "docs/architecture.md"

// TestLayoutMatchesImports: the import list of docs/architecture.md's Layout section is
// exactly the set of imports between the repository's packages (the non-test
// imports `go list -f '{{.ImportPath}} {{.Imports}}' ./...` prints: go/build
// reads them the same way, under the default build tags), and every import
// between packages of the layer chain goes down the chain, or is one of the
// sideways imports the section names.
func TestLayoutMatchesImports(t *testing.T) {
	section := layoutSection(t)
	want := readmeEdges(t, section)
	got := importEdges(t)
	for _, e := range got {
		if !slices.Contains(want, e) {
			t.Errorf("%s is imported but docs/architecture.md's Layout section does not list it", e)
		}
	}
	for _, e := range want {
		if !slices.Contains(got, e) {
			t.Errorf("docs/architecture.md's Layout section lists %s, which nothing imports", e)
		}
	}
	level := chainLevels(t, section)
	sideways := sidewaysEdges(section)
	for _, e := range got {
		from, to, _ := strings.Cut(e, " → ")
		lf, okf := levelOf(level, from)
		lt, okt := levelOf(level, to)
		if !okf || !okt || lf < lt || slices.Contains(sideways, e) {
			continue
		}
		t.Errorf("%s goes up or sideways in the layer chain and is not named as a sideways import", e)
	}
}

// layoutSection is layoutFile from "## Layout" to the next heading of any level.
func layoutSection(t *testing.T) string {
	t.Helper()
	raw, err := os.ReadFile(layoutFile)
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(raw), "\n## Layout\n")
	if !ok {
		t.Fatal(`docs/architecture.md has no "## Layout" section`)
	}
	if i := regexp.MustCompile(`(?m)^#`).FindStringIndex(rest); i != nil {
		rest = rest[:i[0]]
	}
	return rest
}

// readmeEdges parses the section's import block: a fenced block of lines
// "package → imported imported …", paths relative to the module.
func readmeEdges(t *testing.T, section string) []string {
	t.Helper()
	_, block, ok := strings.Cut(section, "```text imports\n")
	if !ok {
		t.Fatal("docs/architecture.md's Layout section has no ```text imports block")
	}
	block, _, _ = strings.Cut(block, "```")
	var edges []string
	for line := range strings.Lines(block) {
		if strings.TrimSpace(line) == "" {
			continue
		}
		from, tos, ok := strings.Cut(line, "→")
		from = strings.TrimSpace(from)
		if !ok || from == "" {
			t.Fatalf("import block line %q is not \"package → imports…\"", line)
		}
		for to := range strings.FieldsSeq(tos) {
			edges = append(edges, from+" → "+to)
		}
	}
	return edges
}

// importEdges walks the module (skipping testdata, directories whose name
// starts with _ or ., and nested modules, as ./... does) and returns every
// non-test import of one repository package by another, as "from → to".
func importEdges(t *testing.T) []string {
	t.Helper()
	var edges []string
	err := filepath.WalkDir(".", func(dir string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return err
		}
		name := d.Name()
		if dir != "." && (name == "testdata" || strings.HasPrefix(name, "_") || strings.HasPrefix(name, ".")) {
			return filepath.SkipDir
		}
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil && dir != "." {
			return filepath.SkipDir
		}
		p, err := build.Default.ImportDir(dir, 0)
		if _, none := errors.AsType[*build.NoGoError](err); none {
			return nil
		}
		if err != nil {
			return err
		}
		for _, imp := range p.Imports {
			if rel, ok := strings.CutPrefix(imp, module+"/"); ok {
				edges = append(edges, filepath.ToSlash(dir)+" → "+rel)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return edges
}

// chainLevels parses the layer chain, the one code span of the form
// `a → b, c → …`, into each name's depth (0 at the top).
func chainLevels(t *testing.T, section string) map[string]int {
	t.Helper()
	m := regexp.MustCompile("`([a-z/]+ → [^`]*→[^`]*)`").FindStringSubmatch(section)
	if m == nil {
		t.Fatal("docs/architecture.md's Layout section has no layer chain `a → b → …`")
	}
	level := map[string]int{}
	for i, names := range strings.Split(m[1], "→") {
		for name := range strings.SplitSeq(names, ",") {
			level[strings.TrimSpace(name)] = i
		}
	}
	return level
}

// levelOf is pkg's depth in the chain: its own, or its first path
// element's (cmd/pagoda is at cmd's level, model/llama at model's).
func levelOf(level map[string]int, pkg string) (int, bool) {
	if l, ok := level[pkg]; ok {
		return l, true
	}
	first, _, _ := strings.Cut(pkg, "/")
	l, ok := level[first]
	return l, ok
}

// sidewaysEdges are the code spans `a → b` of one import each.
func sidewaysEdges(section string) []string {
	var edges []string
	for _, m := range regexp.MustCompile("`([a-z0-9/]+) → ([a-z0-9/]+)`").FindAllStringSubmatch(section, -1) {
		edges = append(edges, m[1]+" → "+m[2])
	}
	return edges
}
