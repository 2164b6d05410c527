package grammar

import (
	"testing"
)

// byteVocab has one token per byte (id = byte value) and the end-of-generation token 256.
var byteVocab = func() *Vocab {
	pieces := make([]string, 257)
	for i := 0; i < 256; i++ {
		pieces[i] = string([]byte{byte(i)})
	}
	return NewVocab(pieces, []int32{256})
}()

// recognizes reports whether the matcher of g accepts s whole, feeding it byte by byte and
// checking each byte against the mask first.
func recognizes(t testing.TB, g *Grammar, s string) bool {
	t.Helper()
	m := Compile(g, byteVocab).NewMatcher()
	mask := make([]uint64, (byteVocab.Size()+63)/64)
	for i := 0; i < len(s); i++ {
		m.FillMask(mask)
		inMask := mask[s[i]>>6]>>(s[i]&63)&1 != 0
		err := m.Accept(int32(s[i]))
		if inMask != (err == nil) {
			t.Fatalf("%q at byte %d: mask says %v, Accept says %v", s, i, inMask, err)
		}
		if err != nil {
			return false
		}
	}
	m.FillMask(mask)
	if eog := mask[256>>6]>>(256&63)&1 != 0; eog != m.CanEnd() {
		t.Fatalf("%q: EOG in mask %v, CanEnd %v", s, eog, m.CanEnd())
	}
	return m.CanEnd()
}

type acceptCase struct {
	in   string
	want bool
}

func checkCases(t *testing.T, g *Grammar, cases []acceptCase) {
	t.Helper()
	for _, c := range cases {
		if got := recognizes(t, g, c.in); got != c.want {
			t.Errorf("%q: accepted %v, want %v\ngrammar:\n%s", c.in, got, c.want, g)
		}
	}
}
