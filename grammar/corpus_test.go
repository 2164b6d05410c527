package grammar

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// corpusCase is one file of an external corpus in JSONSchemaBench's maskbench layout
// (github.com/guidance-ai/jsonschemabench, maskbench/data/*.json): a schema and instances
// marked valid or invalid.
type corpusCase struct {
	Description string          `json:"description"`
	Schema      json.RawMessage `json:"schema"`
	Tests       []struct {
		Description string          `json:"description"`
		Valid       bool            `json:"valid"`
		Data        json.RawMessage `json:"data"`
	} `json:"tests"`
}

// TestSchemaCorpus measures FromJSONSchema on the external corpus named by
// $PAGODA_SCHEMA_CORPUS (a directory of maskbench files; the corpus is not in the repository,
// so the test is skipped without it): the share of schemas that compile, and of those whose
// every valid instance is accepted (compact and with Python's separators) and every invalid
// one refused. An invalid instance accepted is a failure of the test; the rest is reported.
func TestSchemaCorpus(t *testing.T) {
	dir := os.Getenv("PAGODA_SCHEMA_CORPUS")
	if dir == "" {
		t.Skip("set PAGODA_SCHEMA_CORPUS to a directory of maskbench schema files")
	}
	files, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no corpus files in %s: %v", dir, err)
	}
	reasons := map[string]int{}
	var compiled, passed, validRefused, invalidAccepted, generated int
	var slow []string
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var cc corpusCase
		if err := json.Unmarshal(data, &cc); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		t0 := time.Now()
		g, err := FromJSONSchema(cc.Schema, false)
		if d := time.Since(t0); d > 100*time.Millisecond {
			slow = append(slow, fmt.Sprintf("%s %v", filepath.Base(f), d))
		}
		if err != nil {
			reasons[errorClass(err)]++
			continue
		}
		compiled++
		ok := true
		for _, tc := range cc.Tests {
			compact, spaced := compactJSON(tc.Data), spacedJSON(tc.Data)
			if tc.Valid {
				if !acceptsBytes(g, compact) || !acceptsBytes(g, spaced) {
					ok = false
					validRefused++
					if testing.Verbose() {
						t.Logf("%s: valid refused: %.200s", filepath.Base(f), compact)
					}
				}
			} else if acceptsBytes(g, compact) {
				ok = false
				invalidAccepted++
				t.Errorf("%s: invalid instance accepted (%s): %.300s", filepath.Base(f), tc.Description, compact)
			}
		}
		if ok {
			passed++
		}
		generated += generateAndValidate(t, g, cc.Schema, filepath.Base(f))
	}
	t.Logf("%d generated instances validated by the independent validator", generated)
	n := len(files)
	t.Logf("%d schemas: %d compile (%.1f%%), %d pass every instance (%.1f%%); %d valid instances refused, %d invalid accepted",
		n, compiled, 100*float64(compiled)/float64(n), passed, 100*float64(passed)/float64(n), validRefused, invalidAccepted)
	type kv struct {
		k string
		v int
	}
	var rs []kv
	for k, v := range reasons {
		rs = append(rs, kv{k, v})
	}
	sort.Slice(rs, func(i, j int) bool { return rs[i].v > rs[j].v || rs[i].v == rs[j].v && rs[i].k < rs[j].k })
	for i, r := range rs {
		if i == 40 {
			break
		}
		t.Logf("%5d  %s", r.v, r.k)
	}
	slices.Sort(slow)
	for _, s := range slow {
		t.Logf("slow: %s", s)
	}
}

// errorClass is an error message without the JSON pointer and quoted specifics, to group
// the corpus's failures.
func errorClass(err error) string {
	s := err.Error()
	if i := strings.Index(s, " at #"); i >= 0 {
		if j := strings.Index(s[i:], ": "); j >= 0 {
			s = s[:i] + s[i+j:]
		}
	}
	if len(s) > 110 {
		s = s[:110]
	}
	return s
}

// compactJSON is data without white space; spacedJSON with Python's default separators
// ", " and ": ". Both keep the order of keys and the spelling of numbers and strings.
func compactJSON(data []byte) string {
	v, err := parseJSON(data)
	if err != nil {
		return string(data)
	}
	return v.String()
}

func spacedJSON(data []byte) string {
	v, err := parseJSON(data)
	if err != nil {
		return string(data)
	}
	var b strings.Builder
	encodeSpaced(&b, v)
	return b.String()
}

func encodeSpaced(b *strings.Builder, v *jvalue) {
	switch v.kind {
	case 'o':
		b.WriteByte('{')
		for i, k := range v.keys {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(jsonQuote(k))
			b.WriteString(": ")
			encodeSpaced(b, v.vals[i])
		}
		b.WriteByte('}')
	case 'a':
		b.WriteByte('[')
		for i, e := range v.vals {
			if i > 0 {
				b.WriteString(", ")
			}
			encodeSpaced(b, e)
		}
		b.WriteByte(']')
	default:
		v.encode(b)
	}
}

// generateAndValidate generates two instances of g by seeded random walks and checks them
// with the independent validator (when it reads the schema); it returns how many it checked.
func generateAndValidate(t *testing.T, g *Grammar, schema json.RawMessage, name string) int {
	val := quietValidator(string(schema))
	if val == nil {
		return 0
	}
	r := rand.New(rand.NewPCG(uint64(len(schema)), 9))
	c := Compile(g, byteVocab)
	for i := 0; i < 2; i++ {
		choices := make([]byte, r.IntN(60))
		for j := range choices {
			choices[j] = byte(r.IntN(256))
		}
		text := genInstance(t, c, choices)
		inst, err := jsonschema.UnmarshalJSON(strings.NewReader(text))
		if err != nil {
			t.Errorf("%s: generated %q is not JSON: %v", name, text, err)
			continue
		}
		if err := val.Validate(inst); err != nil {
			t.Errorf("%s: generated %.300q is invalid: %v", name, text, err)
		}
	}
	return 2
}

// quietValidator is independentValidator without failing: nil when the validator cannot
// read the schema (remote references, formats or patterns it does not know).
func quietValidator(schema string) *jsonschema.Schema {
	doc, err := jsonschema.UnmarshalJSON(strings.NewReader(schema))
	if err != nil {
		return nil
	}
	comp := jsonschema.NewCompiler()
	comp.AssertFormat()
	comp.RegisterFormat(&jsonschema.Format{Name: "period", Validate: func(any) error { return nil }}) // not a standard format: an annotation
	if comp.AddResource("schema.json", doc) != nil {
		return nil
	}
	s, err := comp.Compile("schema.json")
	if err != nil {
		return nil
	}
	return s
}

// acceptsBytes reports whether the matcher of g accepts s whole, byte by byte (no masks:
// the corpus is large; other tests check masks against Accept).
func acceptsBytes(g *Grammar, s string) bool {
	m := Compile(g, byteVocab).NewMatcher()
	for i := 0; i < len(s); i++ {
		if m.Accept(int32(s[i])) != nil {
			return false
		}
	}
	return m.CanEnd()
}
