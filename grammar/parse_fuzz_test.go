package grammar

import "testing"

// FuzzParseGBNF: any input gives a grammar or an error, never a panic; a grammar's String()
// parses again.
func FuzzParseGBNF(f *testing.F) {
	for _, s := range []string{`root ::= "a" | [b-d]+ x?` + "\nx ::= (\"y\" root){2,3}", `root ::= [^\n\\]* . "\u00e9"`, `root ::= "`, "# c\nroot ::= a\na ::= \"\\x41\"{,4}"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		g, err := ParseGBNF(src)
		if err != nil {
			return
		}
		if _, err := ParseGBNF(g.String()); err != nil {
			t.Fatalf("String() does not parse: %v\n%s", err, g)
		}
		Compile(g, byteVocab).NewMatcher().FillMask(make([]uint64, 5))
	})
}

// FuzzFromJSONSchema: any schema gives a grammar or an error, never a panic.
func FuzzFromJSONSchema(f *testing.F) {
	for _, s := range []string{personSchema, `{"type":"array","items":{"$ref":"#"}}`, `{"anyOf":[{"type":"integer","minimum":-5},{"enum":[1,"x"]}]}`, `{"type":"string","pattern":"^a+$"}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, schema string) {
		g, err := FromJSONSchema([]byte(schema), false)
		if err != nil {
			return
		}
		Compile(g, byteVocab).NewMatcher().FillMask(make([]uint64, 5))
	})
}

// FuzzFromRegex: any pattern gives a grammar or an error, never a panic.
func FuzzFromRegex(f *testing.F) {
	for _, s := range []string{`^a(b|c)*$`, `[^a-z]{2,5}\d`, `(?i)x.y`, `a{1000}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, re string) {
		g, err := FromRegex(re)
		if err != nil {
			return
		}
		Compile(g, byteVocab).NewMatcher().FillMask(make([]uint64, 5))
	})
}
