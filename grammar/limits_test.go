package grammar

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// The attacks of issue 28, each refused with a *LimitError naming its limit and value, or
// compiled within a bounded number of work units (never wall time: the answer must not
// depend on the machine's load).

func nestedObjectSchema(depth int) string {
	s := `{"type":"string"}`
	for range depth {
		s = `{"type":"object","properties":{"a":` + s + `},"required":["a"]}`
	}
	return s
}

func nestedArraySchema(depth int) string {
	s := `{"type":"string"}`
	for range depth {
		s = `{"type":"array","items":` + s + `}`
	}
	return s
}

func enumSchema(n, size int) string {
	vals := make([]string, n)
	for i := range vals {
		vals[i] = fmt.Sprintf("%0*d", size, i)
	}
	b, _ := json.Marshal(map[string]any{"enum": vals})
	return string(b)
}

// refsSchema has n properties, each a $ref to its own definition.
func refsSchema(n int) string {
	var p, d strings.Builder
	for i := range n {
		if i > 0 {
			p.WriteString(",")
			d.WriteString(",")
		}
		fmt.Fprintf(&p, `"p%d":{"$ref":"#/$defs/d%d"}`, i, i)
		fmt.Fprintf(&d, `"d%d":{"type":"integer","minimum":%d}`, i, i)
	}
	return `{"type":"object","properties":{` + p.String() + `},"$defs":{` + d.String() + `}}`
}

// exponentialGBNF nests alternatives depth deep, each level calling the one below three
// times: expanding its start takes 3^depth calls.
func exponentialGBNF(prefix string, depth int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "root ::= %s r%d\n", prefix, depth)
	b.WriteString("r0 ::= \"a\" | \"b\"\n")
	for i := 1; i <= depth; i++ {
		fmt.Fprintf(&b, "r%d ::= r%d | r%d \"x\" | r%d r%d\n", i, i-1, i-1, i-1, i-1)
	}
	return b.String()
}

func choices(n, size int) []string {
	c := make([]string, n)
	for i := range c {
		c[i] = fmt.Sprintf("choice %0*d", size, i)
	}
	return c
}

// wantLimit checks that err is a *LimitError of the named limit and value, and that its
// message names both.
func wantLimit(t *testing.T, what string, err error, limit string, value int64) {
	t.Helper()
	le, ok := err.(*LimitError)
	if !ok {
		t.Fatalf("%s: %v (%T), want a LimitError for %s", what, err, err, limit)
	}
	if !strings.HasPrefix(le.Limit, limit) || le.Value != value {
		t.Fatalf("%s: %v, want the limit %s of %d", what, err, limit, value)
	}
	if msg := err.Error(); !strings.Contains(msg, limit) || !strings.Contains(msg, fmt.Sprint(value)) {
		t.Fatalf("%s: the message %q does not name %s and %d", what, msg, limit, value)
	}
}

func TestLimitsRefuseAttacks(t *testing.T) {
	schema := func(s string) error {
		_, err := FromJSONSchema([]byte(s), false)
		return err
	}
	for _, tc := range []struct {
		name  string
		err   func() error
		limit string
		value int64
	}{
		{"objects nested 1,000 deep", func() error { return schema(nestedObjectSchema(1000)) }, "JSON nesting depth", maxJSONDepth},
		{"objects nested 4,900 deep", func() error { return schema(nestedObjectSchema(4900)) }, "JSON nesting depth", maxJSONDepth},
		{"objects nested 200 deep", func() error { return schema(nestedObjectSchema(200)) }, "schema depth", MaxSchemaDepth},
		{"arrays nested 9,000 deep", func() error { return schema(nestedArraySchema(9000)) }, "JSON nesting depth", maxJSONDepth},
		{"arrays nested 300 deep", func() error { return schema(nestedArraySchema(300)) }, "schema depth", MaxSchemaDepth},
		{"enum of 100,000", func() error { return schema(enumSchema(100000, 1)) }, "enum values", MaxEnumValues},
		{"enum of 2 MB", func() error { return schema(enumSchema(2000, 1000)) }, "bytes of an enum", MaxEnumBytes},
		{"choice of 100,000", func() error { _, err := FromChoice(choices(100000, 1)); return err }, "choices", MaxChoices},
		{"choice of 2 MB", func() error { _, err := FromChoice(choices(2000, 1000)); return err }, "bytes of the choices", MaxChoiceBytes},
		{"20,000 properties each a $ref", func() error { return schema(refsSchema(20000)) }, "schema nodes", MaxSchemaNodes},
		{"GBNF repetition count", func() error { _, err := ParseGBNF(`root ::= "a"{0,200000}`); return err }, "", 0},
		{"ECMA pattern repetition count", func() error { return schema(`{"type":"string","pattern":"(?:ab){0,200000}"}`) }, "regex repetition counts", maxRepeat},
		{"GBNF of too many rules", func() error {
			var b strings.Builder
			b.WriteString("root ::= r0\n")
			for i := range MaxRules + 1 {
				fmt.Fprintf(&b, "r%d ::= \"a\"\n", i)
			}
			_, err := ParseGBNF(b.String())
			return err
		}, "grammar rules", MaxRules},
		{"GBNF exponential alternation, depth 12", func() error {
			g, err := ParseGBNF(exponentialGBNF("", 12))
			if err != nil {
				return err
			}
			_, err = CompileWarm(g, byteVocab)
			return err
		}, "compile work units", MaxCompileWork},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.err()
			if tc.limit == "" { // GBNF's own message
				if err == nil || !strings.Contains(err.Error(), fmt.Sprint(MaxRegexRepeat)) {
					t.Fatalf("%v, want the repetition limit %d named", err, MaxRegexRepeat)
				}
				return
			}
			wantLimit(t, tc.name, err, tc.limit, tc.value)
		})
	}
}

// The largest inputs within the limits compile, in a bounded number of work units.
func TestLimitsAllowLargeInputs(t *testing.T) {
	for _, tc := range []struct {
		name string
		g    func() (*Grammar, error)
	}{
		{"objects nested 100 deep", func() (*Grammar, error) { return FromJSONSchema([]byte(nestedObjectSchema(100)), false) }},
		{"enum of 10,000", func() (*Grammar, error) { return FromJSONSchema([]byte(enumSchema(MaxEnumValues, 6)), false) }},
		{"choice of 10,000", func() (*Grammar, error) { return FromChoice(choices(MaxChoices, 6)) }},
		{"4,000 properties each a $ref", func() (*Grammar, error) { return FromJSONSchema([]byte(refsSchema(4000)), false) }},
		{"(a+)+$ as a pattern", func() (*Grammar, error) {
			return FromJSONSchema([]byte(`{"type":"string","pattern":"(a+)+$"}`), false)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g, err := tc.g()
			if err != nil {
				t.Fatal(err)
			}
			c, err := CompileWarm(g, byteVocab)
			if err != nil {
				t.Fatal(err)
			}
			if w := g.Work() + c.Work(); w > MaxCompileWork {
				t.Fatalf("%d work units, over the limit %d", w, MaxCompileWork)
			}
			t.Logf("build %d units, bind and first mask %d units, %d bytes", g.Work(), c.Work(), g.MemoryBytes()+c.MemoryBytes())
		})
	}
}

// `(a+)+$` (catastrophic backtracking in a backtracking engine) costs a constant number of
// work units per byte here: a long run of a's, and a run that then fails.
func TestLimitsNestedQuantifierPattern(t *testing.T) {
	g, err := FromJSONSchema([]byte(`{"type":"string","pattern":"(a+)+$"}`), false)
	if err != nil {
		t.Fatal(err)
	}
	c, err := CompileWarm(g, byteVocab)
	if err != nil {
		t.Fatal(err)
	}
	m := c.NewMatcher()
	mask := make([]uint64, (byteVocab.Size()+63)/64)
	before := c.Work()
	doc := `"` + strings.Repeat("a", 5000) + `!`
	for i := 0; i < len(doc); i++ {
		if err := m.TryFillMask(mask); err != nil {
			t.Fatal(err)
		}
		if err := m.Accept(int32(doc[i])); err != nil {
			t.Fatalf("byte %d: %v", i, err)
		}
	}
	if m.Allows('"') { // the string must end with a's
		t.Fatal(`the string may end after "!"`)
	}
	if err := m.Accept('a'); err != nil || !m.Allows('"') {
		t.Fatalf("a after !: %v", err)
	}
	if per := (c.Work() - before) / int64(len(doc)); per > 200 {
		t.Fatalf("%d work units per byte", per)
	}
}

// A mask whose computation would exceed MaxStepWork is refused with a LimitError (the
// sequence stops rather than holding the batch), after work bounded by the limit; the
// matcher and its Compiled stay usable.
func TestLimitsStepWork(t *testing.T) {
	g, err := ParseGBNF(exponentialGBNF(`"\x01\x01\x01"`, 14))
	if err != nil {
		t.Fatal(err)
	}
	c, err := CompileWarm(g, byteVocab)
	if err != nil {
		t.Fatal(err)
	}
	m := c.NewMatcher()
	mask := make([]uint64, (byteVocab.Size()+63)/64)
	for range 2 { // the third mask walks into the rule below the prefix
		if err := m.TryFillMask(mask); err != nil {
			t.Fatal(err)
		}
		if err := m.Accept(1); err != nil {
			t.Fatal(err)
		}
	}
	before := c.Work()
	err = m.TryFillMask(mask)
	wantLimit(t, "the third mask", err, "work units of one step", MaxStepWork)
	if w := c.Work() - before; w > MaxStepWork+1000 {
		t.Fatalf("the refused mask spent %d work units, limit %d", w, MaxStepWork)
	}
	for _, w := range mask {
		if w != 0 {
			t.Fatal("a refused mask is not cleared")
		}
	}
	if err := m.Accept(1); !IsLimit(err) {
		t.Fatalf("Accept past the step limit: %v", err)
	}
	m2 := c.NewMatcher()
	if err := m2.TryFillMask(mask); err != nil || mask[0] != 1<<1 {
		t.Fatalf("a new matcher: %v, mask %x", err, mask[0])
	}
}

// Two linear passes replace iterating to the fixpoint: a chain of rules, each calling the
// next, compiles in work linear in its length.
func TestLimitsLongRuleChain(t *testing.T) {
	var b strings.Builder
	const n = 50000
	b.WriteString("root ::= r0\n")
	for i := range n {
		fmt.Fprintf(&b, "r%d ::= \"a\" r%d | \"\"\n", i, i+1)
	}
	fmt.Fprintf(&b, "r%d ::= \"b\"\n", n)
	g, err := ParseGBNF(b.String())
	if err != nil {
		t.Fatal(err)
	}
	if g.Work() > 40*n {
		t.Fatalf("%d work units for %d rules", g.Work(), n)
	}
}
