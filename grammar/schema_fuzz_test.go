package grammar

import (
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// fuzzSchemas exercise every keyword family the translation supports; the instances the
// grammar generates from them must validate with an independent validator
// (github.com/santhosh-tekuri/jsonschema/v6, formats asserted).
var fuzzSchemas = []string{
	`{"type":"object","properties":{"id":{"type":"integer","minimum":-40,"maximum":1200},"x":{"type":"number","exclusiveMinimum":-2.5,"maximum":7.25},"p":{"type":"number","multipleOf":0.01,"minimum":0},"q":{"type":"integer","multipleOf":7}},"required":["id","x"]}`,
	`{"type":"object","properties":{"d":{"type":"string","format":"date"},"t":{"type":"string","format":"date-time"},"u":{"type":"string","format":"uuid"},"e":{"type":"string","format":"email"},"h":{"type":"string","format":"hostname"},"i":{"type":"string","format":"ipv4"},"v6":{"type":"string","format":"ipv6"},"uri":{"type":"string","format":"uri"},"dur":{"type":"string","format":"duration"}},"additionalProperties":false}`,
	`{"type":"array","items":{"type":"string","pattern":"[0-9]{2}-x","maxLength":12},"minItems":1,"maxItems":3}`,
	`{"allOf":[{"type":"object","properties":{"a":{"type":"integer"}},"required":["a"]},{"properties":{"b":{"type":"string","minLength":2}},"required":["b"]}],"properties":{"c":{"type":"boolean"}}}`,
	`{"oneOf":[{"type":"object","properties":{"a":{"type":"integer"}},"required":["a"]},{"type":"object","properties":{"b":{"type":"integer"}},"required":["b"]}]}`,
	`{"type":"object","properties":{"kind":{"enum":["a","b"]},"v":{"type":"integer"}},"required":["kind","v"],"if":{"properties":{"kind":{"const":"a"}}},"then":{"properties":{"v":{"minimum":10}}},"else":{"properties":{"v":{"maximum":-10}}}}`,
	`{"type":"object","patternProperties":{"^x-":{"type":"integer"},"^y":{"type":"string","maxLength":2}},"additionalProperties":{"type":"boolean"},"propertyNames":{"maxLength":5},"maxProperties":3}`,
	`{"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"integer"}},"dependentRequired":{"a":["b"]},"minProperties":1}`,
	`{"type":"array","contains":{"type":"integer","minimum":5},"minContains":2,"maxContains":3,"items":{"type":"integer"}}`,
	`{"type":"array","items":{"enum":["red","green","blue"]},"uniqueItems":true}`,
	`{"not":{"type":["string","object"]}}`,
	`{"type":"string","not":{"pattern":"^a"},"minLength":1,"maxLength":4}`,
	`{"type":"integer","not":{"multipleOf":3},"minimum":0,"maximum":20}`,
	`{"$defs":{"n":{"type":"object","properties":{"v":{"type":"integer"},"kids":{"type":"array","items":{"$ref":"#/$defs/n"},"maxItems":2}},"required":["v"],"unevaluatedProperties":false}},"$ref":"#/$defs/n"}`,
	`{"type":"object","properties":{"name":{"type":"string","maxLength":30},"tags":{"type":"array","items":{"type":"string","maxLength":100000}}},"required":["name"]}`,
	`{"enum":[{"a":[1,2]},1.5,"x",null,true]}`,
	`{"type":["object","null"],"properties":{"a":{"type":"string"},"z":false}}`,
}

// genInstance generates one text of the grammar: tokens chosen from the mask by the bytes of
// choices, then the shortest completion.
func genInstance(t *testing.T, c *Compiled, choices []byte) string {
	v := c.v
	m := c.NewMatcher()
	mask := make([]uint64, (v.Size()+63)/64)
	var text []byte
	for _, ch := range choices {
		m.FillMask(mask)
		var allowed []int32
		for id := int32(0); int(id) < v.Size(); id++ {
			if bit(mask, id) {
				allowed = append(allowed, id)
			}
		}
		if len(allowed) == 0 {
			t.Fatalf("empty mask after %q", text)
		}
		id := allowed[int(ch)%len(allowed)]
		if err := m.Accept(id); err != nil {
			t.Fatal(err)
		}
		if v.isEOG[id] {
			break
		}
		text = append(text, v.pieces[id]...)
	}
	if !m.Terminated() {
		text = append(text, greedyCompletion(t, m)...)
	}
	return string(text)
}

// independentValidator compiles schema with santhosh-tekuri/jsonschema, formats asserted
// (nil when it cannot: Go's regexp refuses counts above 1000).
func independentValidator(t testing.TB, schema string) *jsonschema.Schema {
	doc, err := jsonschema.UnmarshalJSON(strings.NewReader(schema))
	if err != nil {
		t.Fatal(err)
	}
	comp := jsonschema.NewCompiler()
	comp.AssertFormat()
	comp.RegisterFormat(&jsonschema.Format{Name: "period", Validate: func(any) error { return nil }}) // not a standard format: an annotation
	if err := comp.AddResource("schema.json", doc); err != nil {
		t.Fatal(err)
	}
	s, err := comp.Compile("schema.json")
	if err != nil {
		if strings.Contains(err.Error(), "invalid repeat count") {
			t.Logf("the independent validator cannot read %s: %v", schema, err)
			return nil
		}
		t.Fatalf("%s: %v", schema, err)
	}
	return s
}

func checkInstance(t *testing.T, v *jsonschema.Schema, schema, text string) {
	inst, err := jsonschema.UnmarshalJSON(strings.NewReader(text))
	if err != nil {
		t.Fatalf("schema %s: generated %q is not JSON: %v", schema, text, err)
	}
	if err := v.Validate(inst); err != nil {
		t.Fatalf("schema %s: generated %q is invalid: %v", schema, text, err)
	}
}

// TestSchemaInstancesValidate generates instances of the fuzz schemas and of the benchmark
// corpus by seeded random walks over the masks (byte vocabulary, and the fuzz vocabulary
// whose tokens cross JSON syntax), and validates each with the independent validator.
func TestSchemaInstancesValidate(t *testing.T) {
	schemas := append([]string(nil), fuzzSchemas...)
	for _, cs := range benchCorpus(t) {
		schemas = append(schemas, string(cs.Schema))
	}
	r := rand.New(rand.NewPCG(3, 4))
	walks := 12
	if testing.Short() {
		walks = 3
	}
	for _, schema := range schemas {
		g, err := FromJSONSchema([]byte(schema), false)
		if err != nil {
			t.Fatalf("%s: %v", schema, err)
		}
		val := independentValidator(t, schema)
		if val == nil {
			continue
		}
		for _, v := range []*Vocab{byteVocab, fuzzVocab} {
			c := Compile(g, v)
			for i := 0; i < walks; i++ {
				choices := make([]byte, r.IntN(80))
				for j := range choices {
					choices[j] = byte(r.IntN(256))
				}
				checkInstance(t, val, schema, genInstance(t, c, choices))
			}
		}
	}
}

// FuzzSchemaInstances: the fuzzer picks a schema and the walk's choices.
func FuzzSchemaInstances(f *testing.F) {
	for i := range fuzzSchemas {
		f.Add(byte(i), []byte{7, 200, 13, 99, 1, 250, 42, 3, 77, 128})
	}
	type target struct {
		g   *Grammar
		val *jsonschema.Schema
	}
	targets := make([]target, len(fuzzSchemas))
	for i, s := range fuzzSchemas {
		g, err := FromJSONSchema([]byte(s), false)
		if err != nil {
			f.Fatal(err)
		}
		targets[i] = target{g, independentValidator(f, s)}
	}
	f.Fuzz(func(t *testing.T, which byte, choices []byte) {
		if len(choices) > 200 {
			return
		}
		tg := targets[int(which)%len(targets)]
		c := Compile(tg.g, fuzzVocab)
		checkInstance(t, tg.val, fuzzSchemas[int(which)%len(targets)], genInstance(t, c, choices))
	})
}

var _ = json.Valid

// greedyCompletion is a shortest byte string that completes m: at each step the byte that
// leads to the stacks with the fewest bytes left to complete (minimal lengths of the rules,
// exact, so each step takes one byte off).
func greedyCompletion(t *testing.T, m *Matcher) []byte {
	c := m.c
	p := c.p
	const inf = 1 << 40
	ruleMin := make([]int, len(p.alts))
	for i := range ruleMin {
		ruleMin[i] = inf
	}
	rest := func(pos int32) int {
		n := 0
		for ; p.elems[pos].kind != kEnd; pos++ {
			switch e := p.elems[pos]; e.kind {
			case kTerm:
				n++
			case kRef:
				n += ruleMin[e.arg]
			case kCount:
				n += int(p.counts[e.arg].min) * ruleMin[p.counts[e.arg].unit]
			}
			if n >= inf {
				return inf
			}
		}
		return n
	}
	for changed := true; changed; {
		changed = false
		for r, alts := range p.alts {
			for _, a := range alts {
				if x := rest(a); x < ruleMin[r] {
					ruleMin[r], changed = x, true
				}
			}
		}
	}
	var frameCost func(id int32) int
	frameCost = func(id int32) int {
		if id == 0 {
			return 0
		}
		n := c.nodes[id]
		cost := rest(n.pos)
		if e := p.elems[n.pos]; e.kind == kCount {
			cs := p.counts[e.arg]
			need := int(c.needOf(&cs, n.cnt))
			cost = need*ruleMin[cs.unit] + rest(n.pos+1)
		}
		return cost + frameCost(n.parent)
	}
	setCost := func(set []int32) int {
		best := inf
		for _, id := range set {
			best = min(best, frameCost(id))
		}
		return best
	}
	var out []byte
	cur := m.Clone()
	for i := 0; !cur.CanEnd(); i++ {
		if i > 100000 {
			t.Fatal("no completion found")
		}
		var next *Matcher
		best, bestB := inf, -1
		for b := 0; b < 256; b++ {
			x := cur.Clone()
			if x.Accept(int32(b)) != nil {
				continue
			}
			if cost := setCost(x.set); cost < best {
				best, bestB, next = cost, b, x
			}
		}
		if next == nil {
			t.Fatal("dead end")
		}
		out = append(out, byte(bestB))
		cur = next
	}
	return out
}
