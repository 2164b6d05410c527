package grammar

import (
	"math/rand/v2"
	"regexp"
	"slices"
	"testing"
)

// fuzzVocab: every byte, EOG 256, and multi-byte tokens that cross JSON syntax and split UTF-8
// characters.
var fuzzVocab = func() *Vocab {
	pieces := make([]string, 257)
	for i := 0; i < 256; i++ {
		pieces[i] = string([]byte{byte(i)})
	}
	pieces = append(pieces, `{"`, `":`, `": `, `", "`, `"}`, `"]`, `"],`, `true`, `null`, "é", "\xc3", "\xa9",
		"\xa9a", "ab", "abc", ` "`, "12", "3.", "e+", "日本", "\xe6\x97", "\xa5\xe6", "\n  ", "},", "Bob", "-0", "cd")
	return NewVocab(pieces, []int32{256})
}()

// bulkVocab adds to fuzzVocab every string of 2 to 4 symbols over letters, digits and spaces
// (large trie subtrees that a state inside a string loops on: walk's bulk path), and every
// pair of symbols of JSON syntax and UTF-8 fragments.
var bulkVocab = func() *Vocab {
	pieces := slices.Clone(fuzzVocab.pieces)
	var grow func(alphabet []string, prefix string, n, most int)
	grow = func(alphabet []string, prefix string, n, most int) {
		if n >= 2 {
			pieces = append(pieces, prefix)
		}
		for _, a := range alphabet {
			if n < most {
				grow(alphabet, prefix+a, n+1, most)
			}
		}
	}
	grow([]string{"a", "b", " ", "1"}, "", 0, 4)
	grow([]string{"a", `"`, `\`, "\xc3", "\xa9", "1", "{", ","}, "", 0, 2)
	return NewVocab(pieces, []int32{256})
}()

type fuzzTarget struct {
	name  string
	g     *Grammar
	check func(string) bool
}

func fuzzTargets(t testing.TB) []fuzzTarget {
	var ts []fuzzTarget
	for _, src := range []string{
		`root ::= ("(" root ")" | [a-c] | "é")*`,
		"root ::= item (\", \" item){0,3}\nitem ::= [0-9]+ (\".\" [0-9]{1,2})? | \"日本\" | [^\\x00-\\x7f]",
		`root ::= ( "ab" | "abc" | "a" "bcd"? ) "d"? [x-z]*`,
	} {
		g, err := ParseGBNF(src)
		if err != nil {
			t.Fatal(err)
		}
		ts = append(ts, fuzzTarget{src, g, func(s string) bool { return fullMatch(g.rules, s) }})
	}
	for _, schema := range []string{
		personSchema,
		`{"type":"object","properties":{"a":{"type":"array","items":{"anyOf":[{"type":"number"},{"type":"string","maxLength":3}]},"maxItems":3},"b":{"type":"string","format":"date"}},"additionalProperties":{"type":"null"}}`,
		`{"type":"string","pattern":"^a[bé\"]{1,3}\\\\?$"}`,
	} {
		g, err := FromJSONSchema([]byte(schema), false)
		if err != nil {
			t.Fatal(err)
		}
		ts = append(ts, fuzzTarget{schema, g, func(s string) bool { return validateJSON(schema, s) == nil }})
	}
	for _, re := range []string{`(ab|c[dé]*)+x?`, `[0-9]{2,4}(\.[0-9]+)?|none`} {
		g, err := FromRegex(re)
		if err != nil {
			t.Fatal(err)
		}
		full := regexp.MustCompile(`^(?:` + re + `)$`)
		ts = append(ts, fuzzTarget{re, g, full.MatchString})
	}
	choices := []string{"abc", "ab", "日本", "Bob"}
	g, err := FromChoice(choices)
	if err != nil {
		t.Fatal(err)
	}
	ts = append(ts, fuzzTarget{"choice", g, func(s string) bool { return slices.Contains(choices, s) }})
	return ts
}

// FuzzMatcher draws tokens from the masks (choices from the input), checks that each mask
// agrees with Accept, then finishes the text by the shortest byte completion: the result must
// be accepted by an independent recognizer.
func FuzzMatcher(f *testing.F) {
	targets := fuzzTargets(f)
	r := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 4*len(targets); i++ {
		seed := []byte{byte(i%len(targets) | (i/len(targets)&1)<<7)}
		for j := 0; j < 40; j++ {
			seed = append(seed, byte(r.IntN(256)))
		}
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) == 0 {
			return
		}
		tg := targets[int(data[0]&0x7f)%len(targets)]
		v := fuzzVocab
		if data[0]&0x80 != 0 {
			v = bulkVocab
		}
		runWalk(t, tg, Compile(tg.g, v), data[1:])
	})
}

func runWalk(t *testing.T, tg fuzzTarget, c *Compiled, choices []byte) {
	v := c.v
	m := c.NewMatcher()
	mask := make([]uint64, (v.Size()+63)/64)
	var text []byte
	for _, ch := range choices {
		m.FillMask(mask)
		var allowed []int32
		for id := int32(0); int(id) < v.Size(); id++ {
			err := m.Clone().Accept(id)
			if bit(mask, id) != (err == nil) || m.Allows(id) != (err == nil) {
				t.Fatalf("%s after %q: token %q in mask %v, Allows %v, Accept %v", tg.name, text, v.pieces[id], bit(mask, id), m.Allows(id), err)
			}
			if err == nil {
				allowed = append(allowed, id)
			}
		}
		if len(allowed) == 0 {
			t.Fatalf("%s after %q: empty mask", tg.name, text)
		}
		id := allowed[int(ch)%len(allowed)]
		if err := m.Accept(id); err != nil {
			t.Fatal(err)
		}
		if id == 256 {
			break
		}
		text = append(text, v.pieces[id]...)
	}
	if !m.Terminated() {
		rest := shortestCompletion(t, m)
		for _, b := range rest {
			if err := m.Accept(int32(b)); err != nil {
				t.Fatal(err)
			}
		}
		text = append(text, rest...)
	}
	if !m.CanEnd() {
		t.Fatalf("%s: %q is complete but CanEnd is false", tg.name, text)
	}
	if !tg.check(string(text)) {
		t.Fatalf("%s: the matcher accepted %q, the recognizer does not", tg.name, text)
	}
}

// shortestCompletion is the shortest byte string that completes m (breadth first over states).
func shortestCompletion(t *testing.T, m *Matcher) []byte {
	type item struct {
		m    *Matcher
		path []byte
	}
	queue := []item{{m.Clone(), nil}}
	seen := map[string]bool{string(setKey(m.set)): true}
	for len(queue) > 0 && len(seen) < 200000 {
		it := queue[0]
		queue = queue[1:]
		if it.m.CanEnd() {
			return it.path
		}
		for b := 0; b < 256; b++ {
			n := it.m.Clone()
			if n.Accept(int32(b)) != nil || seen[string(setKey(n.set))] {
				continue
			}
			seen[string(setKey(n.set))] = true
			queue = append(queue, item{n, append(slices.Clone(it.path), byte(b))})
		}
	}
	t.Fatal("no completion found")
	return nil
}

// TestRandomWalks runs many seeded walks over every fuzz target (the fuzz seeds cover fewer).
func TestRandomWalks(t *testing.T) {
	targets := fuzzTargets(t)
	r := rand.New(rand.NewPCG(7, 11))
	n := 30
	if testing.Short() {
		n = 5
	}
	for vi, v := range []*Vocab{fuzzVocab, bulkVocab} {
		for _, tg := range targets {
			c := Compile(tg.g, v)
			for i := 0; i < n/(1+2*vi); i++ {
				choices := make([]byte, r.IntN(60))
				for j := range choices {
					choices[j] = byte(r.IntN(256))
				}
				runWalk(t, tg, c, choices)
			}
		}
	}
}
