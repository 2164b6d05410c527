package grammar

import (
	"strconv"
	"testing"
)

// TestIntegerRanges checks every integer near the bounds against the range, and the
// validator against the grammar.
func TestIntegerRanges(t *testing.T) {
	tests := []struct {
		schema string
		in     func(x int) bool
	}{
		{`{"type":"integer","minimum":0}`, func(x int) bool { return x >= 0 }},
		{`{"type":"integer","minimum":-37}`, func(x int) bool { return x >= -37 }},
		{`{"type":"integer","minimum":250}`, func(x int) bool { return x >= 250 }},
		{`{"type":"integer","maximum":99}`, func(x int) bool { return x <= 99 }},
		{`{"type":"integer","maximum":-5}`, func(x int) bool { return x <= -5 }},
		{`{"type":"integer","minimum":-120,"maximum":1005}`, func(x int) bool { return x >= -120 && x <= 1005 }},
		{`{"type":"integer","minimum":-999,"maximum":-10}`, func(x int) bool { return x >= -999 && x <= -10 }},
		{`{"type":"integer","minimum":17,"maximum":17}`, func(x int) bool { return x == 17 }},
		{`{"type":"integer","exclusiveMinimum":1,"exclusiveMaximum":100.5}`, func(x int) bool { return x > 1 && x <= 100 }},
		{`{"type":"integer","minimum":1.5,"maximum":1200}`, func(x int) bool { return x >= 2 && x <= 1200 }},
	}
	for _, tt := range tests {
		g, err := FromJSONSchema([]byte(tt.schema), false)
		if err != nil {
			t.Fatalf("%s: %v", tt.schema, err)
		}
		c := Compile(g, byteVocab)
		for x := -1300; x <= 1300; x++ {
			s := strconv.Itoa(x)
			got := recognizesWith(t, c, s)
			if got != tt.in(x) {
				t.Fatalf("%s: %d accepted %v", tt.schema, x, got)
			}
			if got != (validateJSON(tt.schema, s) == nil) {
				t.Fatalf("%s: %d: grammar %v, validator %v", tt.schema, x, got, validateJSON(tt.schema, s))
			}
		}
		for _, s := range []string{"-0", "007", "1.0", "+5", "12345678901234567"} {
			if recognizesWith(t, c, s) {
				t.Errorf("%s: %s accepted", tt.schema, s)
			}
		}
	}
	for _, s := range []string{
		`{"type":"integer","minimum":5,"maximum":4}`,
		`{"type":"integer","minimum":1e20}`,
		`{"type":"integer","minimum":1e999}`,
	} {
		if _, err := FromJSONSchema([]byte(s), false); err == nil {
			t.Errorf("%s: no error", s)
		}
	}
}

func recognizesWith(t *testing.T, c *Compiled, s string) bool {
	m := c.NewMatcher()
	for i := 0; i < len(s); i++ {
		if m.Accept(int32(s[i])) != nil {
			return false
		}
	}
	return m.CanEnd()
}
