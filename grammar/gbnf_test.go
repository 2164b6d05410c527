package grammar

import (
	"strings"
	"testing"
)

func TestGBNFAcceptReject(t *testing.T) {
	tests := []struct {
		src   string
		cases []acceptCase
	}{
		{`root ::= "a" | "bc"`, []acceptCase{{"a", true}, {"bc", true}, {"", false}, {"b", false}, {"abc", false}}},
		{`root ::= [a-c]+ "!"?`, []acceptCase{{"abcab", true}, {"a!", true}, {"!", false}, {"ad", false}}},
		{`root ::= [^a-c]*`, []acceptCase{{"", true}, {"xyz", true}, {"é€😀", true}, {"xa", false}}},
		{`root ::= . .`, []acceptCase{{"ab", true}, {"é😀", true}, {"a", false}, {"abc", false}}},
		{`root ::= "x"{2,3}`, []acceptCase{{"x", false}, {"xx", true}, {"xxx", true}, {"xxxx", false}}},
		{`root ::= "x"{2}`, []acceptCase{{"xx", true}, {"x", false}, {"xxx", false}}},
		{`root ::= "x"{2,}`, []acceptCase{{"xx", true}, {"xxxxxx", true}, {"x", false}}},
		{`root ::= "x"{,2}`, []acceptCase{{"", true}, {"xx", true}, {"xxx", false}}},
		{"# comment\nroot ::= greeting \" \" name # trailing\ngreeting ::= \"hi\" | \"hello\"\nname ::=\n  [A-Z] [a-z]*",
			[]acceptCase{{"hi Bob", true}, {"hello Al", true}, {"hi bob", false}, {"hey Bob", false}}},
		{`root ::= "\x41\u00e9\n\t\"\\" [\]\-]`, []acceptCase{{"Aé\n\t\"\\]", true}, {"Aé\n\t\"\\-", true}, {"Aé\n\t\"\\a", false}}},
		{`root ::= ("(" root ")")*`, []acceptCase{{"", true}, {"()(())", true}, {"(()", false}, {")(", false}}},
		{`root ::= [α-ω]{3}`, []acceptCase{{"αβγ", true}, {"αβ", false}, {"αβa", false}}},
		{`root ::= [\U0001F600-\U0001F64F]`, []acceptCase{{"😀", true}, {"🙏", true}, {"🚀", false}}},
		{`root ::= ( "a" | "ab" ) "c"`, []acceptCase{{"ac", true}, {"abc", true}, {"abbc", false}}},
		{"root ::= \"a\" dead | \"ab\"\ndead ::= \"x\" dead", []acceptCase{{"ab", true}, {"a", false}, {"ax", false}}},
	}
	for _, tt := range tests {
		g, err := ParseGBNF(tt.src)
		if err != nil {
			t.Fatalf("%q: %v", tt.src, err)
		}
		checkCases(t, g, tt.cases)
	}
}

func TestGBNFErrors(t *testing.T) {
	tests := []struct{ src, want string }{
		{``, "1:1: empty grammar"},
		{`root ::= "abc`, "1:10: unterminated string literal"},
		{"root ::= \"a\"\nfoo ::= [a-", "2:9: unterminated character class"},
		{`root ::= foo`, `undefined rule "foo"`},
		{`root ::= ( "a"`, "1:15: expected ) to close the ( at 1:10"},
		{`root ::= "a"{3,1}`, "maximum below minimum"},
		{`root ::= "a"{x}`, "bad repetition count"},
		{`root ::= "\q"`, `1:11: unknown escape \q`},
		{`root ::= [z-a]`, "reversed"},
		{`root := "a"`, "1:6: expected ::= after rule name"},
		{"root ::= \"a\"\nroot ::= \"b\"", `2:1: rule "root" defined twice`},
		{`foo ::= "a"`, "no rule named root"},
		{`root ::= root "a" | "b"`, "left-recursive"},
		{`root ::= ("a"?)*`, "left-recursive"},
		{`root ::= "a" ) "b"`, "1:14: unexpected ')'"},
		{`root ::= "a" root`, "matches no string"},
		{`root ::= "a" [^\x00-\U0010FFFF]`, "matches no string"},
	}
	for _, tt := range tests {
		_, err := ParseGBNF(tt.src)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%q: error %v, want one containing %q", tt.src, err, tt.want)
		}
	}
}
