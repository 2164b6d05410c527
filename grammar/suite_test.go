package grammar

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// The official JSON-Schema-Test-Suite (testdata/JSON-Schema-Test-Suite, see its README):
// every schema is compiled with FromJSONSchema's translation under the suite's draft, and
// every instance is fed to a matcher, byte by byte and token by token over the default
// model's vocabulary. An invalid instance accepted fails the test, always. A valid
// instance refused, or a schema refused (a 400), is compared with
// testdata/suite-results.txt, which lists each of them with the reason; -update-suite
// rewrites that file. With -v the test prints the pass rate per keyword.

var updateSuite = flag.Bool("update-suite", false, "rewrite testdata/suite-results.txt from this run")

const suiteDir = "testdata/JSON-Schema-Test-Suite"

var suiteDrafts = []struct {
	dir   string
	draft draft
}{{"draft4", draft4}, {"draft7", draft7}, {"draft2020-12", draft2020}}

type suiteGroup struct {
	Description string          `json:"description"`
	Schema      json.RawMessage `json:"schema"`
	Tests       []struct {
		Description string          `json:"description"`
		Data        json.RawMessage `json:"data"`
		Valid       bool            `json:"valid"`
	} `json:"tests"`
}

// suiteTally counts one keyword's tests.
type suiteTally struct {
	pass, refused, schema400, total int
}

func TestJSONSchemaTestSuite(t *testing.T) {
	dm := loadDefault(t)
	tallies := map[string]*suiteTally{}
	var outcomes []string
	for _, d := range suiteDrafts {
		files, _ := filepath.Glob(filepath.Join(suiteDir, d.dir, "*.json"))
		more, _ := filepath.Glob(filepath.Join(suiteDir, d.dir, "optional", "format", "*.json"))
		files = append(files, more...)
		if len(files) == 0 {
			t.Fatalf("no suite files under %s/%s", suiteDir, d.dir)
		}
		for _, f := range files {
			rel, _ := filepath.Rel(suiteDir, f)
			keyword := strings.TrimSuffix(filepath.Base(f), ".json")
			if strings.Contains(rel, "format"+string(filepath.Separator)) {
				keyword = "format: " + keyword
			}
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			var groups []suiteGroup
			if err := json.Unmarshal(data, &groups); err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			tl := tallies[keyword]
			if tl == nil {
				tl = &suiteTally{}
				tallies[keyword] = tl
			}
			for gi, g := range groups {
				outcomes = append(outcomes, runSuiteGroup(t, dm, d.draft, filepath.ToSlash(rel), gi, g, tl)...)
			}
		}
	}
	checkSuiteOutcomes(t, outcomes)
	if testing.Verbose() {
		logSuiteTallies(t, tallies)
	}
}

// runSuiteGroup runs one schema's tests and returns the lines for suite-results.txt.
func runSuiteGroup(t *testing.T, dm defaultModel, d draft, rel string, gi int, g suiteGroup, tl *suiteTally) []string {
	var out []string
	id := func(ti int, what, why string) string {
		why = strings.ReplaceAll(why, "\n", " ")
		if len(why) > 160 {
			why = why[:160]
		}
		return fmt.Sprintf("%s#%d/%d %s: %s", rel, gi, ti, what, why)
	}
	gr, err := fromJSONSchema(g.Schema, schemaOptions{draft: d})
	if err != nil {
		empty := strings.Contains(err.Error(), "allows no value") || strings.Contains(err.Error(), "matches no string")
		for ti, tc := range g.Tests {
			tl.total++
			if empty && !tc.Valid { // refusing a schema that allows nothing refuses its invalid instances
				tl.pass++
				continue
			}
			tl.schema400++
			out = append(out, id(ti, "400", err.Error()))
		}
		return out
	}
	c := Compile(gr, dm.vocab)
	canon := keyOrder(g.Schema)
	cv, norm, err := normalizeSchema(g.Schema, schemaOptions{draft: d})
	if err != nil {
		t.Fatalf("%s#%d: normalizes no more: %v", rel, gi, err)
	}
	for ti, tc := range g.Tests {
		tl.total++
		v, err := parseJSON(tc.Data)
		if err != nil {
			t.Fatalf("%s#%d/%d: %v", rel, gi, ti, err)
		}
		texts := []string{v.String(), spaced(v)}
		if tc.Valid {
			ordered := reorder(v, canon)
			ok := acceptsText(t, c, dm, ordered.String()) && acceptsText(t, c, dm, spaced(ordered))
			if !ok {
				cv.budget = maxSteps
				ordered = irReorder(cv, norm, v)
				ok = acceptsText(t, c, dm, ordered.String()) && acceptsText(t, c, dm, spaced(ordered))
			}
			if ok {
				tl.pass++
			} else {
				tl.refused++
				out = append(out, id(ti, "refused", tc.Description+" "+ordered.String()))
			}
			continue
		}
		ok := true
		for _, text := range append(texts, reorder(v, canon).String()) {
			if recognizes(t, gr, text) {
				ok = false
				t.Errorf("%s#%d/%d: invalid instance accepted (%s): %s\nschema: %s", rel, gi, ti, tc.Description, text, g.Schema)
			}
		}
		if ok {
			tl.pass++
		}
	}
	return out
}

// acceptsText feeds text to a matcher token by token (the default model's tokenization)
// and reports whether every token is accepted and generation may end after them; it also
// checks that the byte-level matcher accepts the text.
func acceptsText(t *testing.T, c *Compiled, dm defaultModel, text string) bool {
	if !recognizes(t, c.g, text) {
		return false
	}
	m := c.NewMatcher()
	for _, id := range dm.tok.Encode(text, false, false) {
		if err := m.Accept(id); err != nil {
			t.Errorf("bytes accepted but token %d (%q) refused in %s: %v", id, dm.vocab.pieces[id], text, err)
			return false
		}
	}
	return m.Allows(dm.tok.EOGs()[0])
}

func spaced(v *jvalue) string {
	var b strings.Builder
	encodeSpaced(&b, v)
	return b.String()
}

const suiteResults = "testdata/suite-results.txt"

// checkSuiteOutcomes compares the refusals of this run with suite-results.txt.
func checkSuiteOutcomes(t *testing.T, got []string) {
	if *updateSuite {
		head := "# JSON-Schema-Test-Suite tests that pagoda does not pass: a schema refused (400) or a valid\n" +
			"# instance refused (an approximation), with the reason. Invalid instances are always refused.\n" +
			"# Regenerate: go test ./grammar -run TestJSONSchemaTestSuite -update-suite\n"
		if err := os.WriteFile(suiteResults, []byte(head+strings.Join(got, "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	data, err := os.ReadFile(suiteResults)
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, l := range strings.Split(string(data), "\n") {
		if l != "" && !strings.HasPrefix(l, "#") {
			want = append(want, l)
		}
	}
	key := func(l string) string { k, _, _ := strings.Cut(l, ": "); return k }
	wantKeys := map[string]bool{}
	for _, l := range want {
		wantKeys[key(l)] = true
	}
	gotKeys := map[string]bool{}
	for _, l := range got {
		gotKeys[key(l)] = true
		if !wantKeys[key(l)] {
			t.Errorf("newly failing (not in %s): %s", suiteResults, l)
		}
	}
	for _, l := range want {
		if !gotKeys[key(l)] {
			t.Errorf("now passing (remove it from %s, or run with -update-suite): %s", suiteResults, l)
		}
	}
}

func logSuiteTallies(t *testing.T, tallies map[string]*suiteTally) {
	var keys []string
	for k := range tallies {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var all suiteTally
	var b strings.Builder
	b.WriteString("\n| keyword | tests | pass | valid refused | schema refused (400) |\n| --- | --- | --- | --- | --- |\n")
	for _, k := range keys {
		x := tallies[k]
		all.total += x.total
		all.pass += x.pass
		all.refused += x.refused
		all.schema400 += x.schema400
		fmt.Fprintf(&b, "| %s | %d | %.1f%% | %d | %d |\n", k, x.total, 100*float64(x.pass)/float64(x.total), x.refused, x.schema400)
	}
	fmt.Fprintf(&b, "| all | %d | %.1f%% | %d | %d |\n", all.total, 100*float64(all.pass)/float64(all.total), all.refused, all.schema400)
	t.Log(b.String())
}
