package grammar

import (
	"regexp"
	"strings"
	"testing"
)

func TestRegexAcceptReject(t *testing.T) {
	tests := []struct {
		re    string
		cases []string
	}{
		{`^[a-z]+@[a-z]+\.(com|org)$`, []string{"bob@example.com", "a@b.org", "bob@example.net", "@x.com", ""}},
		{`\d{3}-\d{4}`, []string{"555-1234", "55-1234", "5555-1234", "555-12345"}},
		{`(?i)hello`, []string{"hello", "HeLLo", "hell", "hellos"}},
		{`a.c`, []string{"abc", "a\nc", "aéc", "ac"}},
		{`(?s)a.c`, []string{"a\nc", "a😀c"}},
		{`x*y?z+`, []string{"z", "xxz", "xyzz", "y", "xyyz"}},
		{`[^0-9]{2,4}`, []string{"ab", "abcd", "a", "abcde", "a1"}},
		{`\p{Greek}+`, []string{"αβγ", "abc", ""}},
		{`(ab|cd){2}`, []string{"abcd", "cdcd", "ab", "abcdab"}},
		{`\s\S\w\W`, []string{" xa!", "\tx_ ", "xxxx"}},
		{`a|`, []string{"a", "", "b"}},
		{`[[:upper:]][[:digit:]]`, []string{"A1", "a1"}},
		{`(a*)*b`, []string{"b", "aab", "aa"}},
		{`(a*b?)+c`, []string{"c", "abac", "bbc", "ab"}},
	}
	for _, tt := range tests {
		g, err := FromRegex(tt.re)
		if err != nil {
			t.Fatalf("%q: %v", tt.re, err)
		}
		full := regexp.MustCompile(`^(?:` + tt.re + `)$`)
		for _, s := range tt.cases {
			if got, want := recognizes(t, g, s), full.MatchString(s); got != want {
				t.Errorf("regex %q, %q: accepted %v, regexp says %v", tt.re, s, got, want)
			}
		}
	}
}

func TestRegexErrors(t *testing.T) {
	tests := []struct{ re, want string }{
		{`a\bc`, "word boundary"},
		{`a^b`, "not at the start"},
		{`a$b`, "not at the end"},
		{`(a`, "missing closing )"},
		{`(?<=a)b`, "error parsing regexp"},
		{`a{2000}`, "invalid repeat count"},
	}
	for _, tt := range tests {
		_, err := FromRegex(tt.re)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%q: error %v, want one containing %q", tt.re, err, tt.want)
		}
	}
}

func TestChoice(t *testing.T) {
	g, err := FromChoice([]string{"yes", "no", "maybe", "n"})
	if err != nil {
		t.Fatal(err)
	}
	checkCases(t, g, []acceptCase{{"yes", true}, {"no", true}, {"n", true}, {"maybe", true}, {"ye", false}, {"yess", false}, {"", false}})
	if _, err := FromChoice(nil); err == nil {
		t.Error("FromChoice(nil): no error")
	}
	g, err = FromChoice([]string{"a \"quoted\"\n", "ünï"})
	if err != nil {
		t.Fatal(err)
	}
	checkCases(t, g, []acceptCase{{"a \"quoted\"\n", true}, {"ünï", true}, {"a", false}})
}
