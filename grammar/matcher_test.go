package grammar

import (
	"errors"
	"sync"
	"testing"
)

func acceptAll(t *testing.T, m *Matcher, s string) {
	t.Helper()
	for i := 0; i < len(s); i++ {
		if err := m.Accept(int32(s[i])); err != nil {
			t.Fatalf("%q at %d: %v", s, i, err)
		}
	}
}

func TestEOGOnlyWhenComplete(t *testing.T) {
	g, err := ParseGBNF(`root ::= "ab" "c"?`)
	if err != nil {
		t.Fatal(err)
	}
	c := Compile(g, byteVocab)
	m := c.NewMatcher()
	mask := make([]uint64, 5)
	m.FillMask(mask)
	if bit(mask, 256) || m.CanEnd() || m.Terminated() {
		t.Fatal("EOG allowed at the start")
	}
	if err := m.Accept(256); err == nil {
		t.Fatal("Accept(EOG) before the grammar is complete")
	}
	acceptAll(t, m, "ab")
	m.FillMask(mask)
	if !bit(mask, 256) || !bit(mask, 'c') || !m.CanEnd() || m.Terminated() {
		t.Fatal("after ab: want EOG and c allowed, not terminated")
	}
	acceptAll(t, m, "c")
	m.FillMask(mask)
	for id := int32(0); id < 256; id++ {
		if bit(mask, id) {
			t.Fatalf("after abc: token %d allowed", id)
		}
	}
	if !bit(mask, 256) || !m.Terminated() {
		t.Fatal("after abc: want only EOG, terminated")
	}
	if err := m.Accept(256); err != nil {
		t.Fatal(err)
	}
	if err := m.Accept('c'); err == nil {
		t.Fatal("a token after EOG accepted")
	}
	if err := m.Accept(300); err == nil {
		t.Fatal("an out-of-range token accepted")
	}
}

func TestAcceptErrorKeepsState(t *testing.T) {
	g, _ := FromChoice([]string{"abc"})
	m := Compile(g, byteVocab).NewMatcher()
	acceptAll(t, m, "a")
	if err := m.Accept('x'); err == nil {
		t.Fatal("x accepted")
	}
	acceptAll(t, m, "bc")
	if !m.CanEnd() {
		t.Fatal("abc not complete")
	}
	v := NewVocab([]string{"a", "", "bc", "abcd"}, []int32{1})
	m = Compile(g, v).NewMatcher()
	if err := m.Accept(3); err == nil {
		t.Fatal("abcd accepted: a token must fit whole")
	}
	if err := m.Accept(0); err != nil {
		t.Fatal(err)
	}
	if err := m.Accept(2); err != nil || !m.Terminated() {
		t.Fatalf("bc: %v, terminated %v", err, m.Terminated())
	}
}

func TestCloneIndependence(t *testing.T) {
	g, _ := FromChoice([]string{"ab", "ac"})
	c := Compile(g, byteVocab)
	m := c.NewMatcher()
	acceptAll(t, m, "a")
	fork := m.Clone()
	acceptAll(t, m, "b")
	if err := fork.Accept('b'); err != nil {
		t.Fatal(err)
	}
	fork2 := m.Clone()
	if err := m.Accept(256); err != nil || !m.Terminated() {
		t.Fatal(err)
	}
	if fork2.terminated {
		t.Fatal("a clone saw its original's EOG")
	}
	other := c.NewMatcher()
	acceptAll(t, other, "a")
	acceptAll(t, other, "c")
	if !other.CanEnd() || !fork.CanEnd() {
		t.Fatal("clones interfere")
	}
}

// TestPartialUTF8 checks tokens that split characters: "é" = C3 A9, "日" = E6 97 A5.
func TestPartialUTF8(t *testing.T) {
	g, err := ParseGBNF(`root ::= [é日]+`)
	if err != nil {
		t.Fatal(err)
	}
	v := NewVocab([]string{"\xc3", "\xa9", "\xa9\xe6", "\x97\xa5", "é", "x", "\xa9x"}, nil)
	m := Compile(g, v).NewMatcher()
	mask := make([]uint64, 1)
	for _, step := range []struct {
		want uint64 // allowed ids after the previous tokens
		take int32
	}{
		{1<<0 | 1<<4, 0}, // C3 or é
		{1<<1 | 1<<2, 2}, // A9 or A9 E6 (not A9 x)
		{1 << 3, 3},      // 97 A5 finishes 日
		{1<<0 | 1<<4, 4},
	} {
		m.FillMask(mask)
		if mask[0] != step.want {
			t.Fatalf("mask %b, want %b", mask[0], step.want)
		}
		if err := m.Accept(step.take); err != nil {
			t.Fatal(err)
		}
	}
	if !m.CanEnd() {
		t.Fatal("é日é not complete")
	}
}

// TestStringRoundTrip: String() parses back to a grammar with the same sentences.
func TestStringRoundTrip(t *testing.T) {
	gs := []*Grammar{JSONObject()}
	for _, s := range []string{personSchema, `{"type":"string","pattern":"^[^\"]{2}\\d$"}`} {
		g, err := FromJSONSchema([]byte(s), false)
		if err != nil {
			t.Fatal(err)
		}
		gs = append(gs, g)
	}
	docs := []string{`{"name":"A","age":1,"role":"user"}`, `{"a":[]}`, `"xy1"`, `"\"y1"`, `"xyz"`}
	for _, g := range gs {
		back, err := ParseGBNF(g.String())
		if err != nil {
			t.Fatalf("%v\n%s", err, g)
		}
		for _, d := range docs {
			if a, b := recognizes(t, g, d), recognizes(t, back, d); a != b {
				t.Errorf("%s: %v before the round trip, %v after\n%s", d, a, b, g)
			}
		}
	}
}

// TestConcurrentMatchers runs matchers of one Compiled on several goroutines (for -race).
func TestConcurrentMatchers(t *testing.T) {
	g, err := FromJSONSchema([]byte(personSchema), false)
	if err != nil {
		t.Fatal(err)
	}
	c := Compile(g, byteVocab)
	doc := `{"name": "Ann", "age": 3, "role": "user", "tags": ["a"]}`
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			m := c.NewMatcher()
			mask := make([]uint64, 5)
			for i := 0; i < len(doc); i++ {
				m.FillMask(mask)
				if err := m.Accept(int32(doc[i])); err != nil {
					errs <- err
					return
				}
			}
			if !m.CanEnd() {
				errs <- errIncomplete
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

var errIncomplete = errors.New("document incomplete")

// TestCacheReset: with a cache limit of one byte the cache starts over at every call; masks
// and Accept stay right (matchers re-intern their state in the new epoch).
func TestCacheReset(t *testing.T) {
	g, err := FromJSONSchema([]byte(personSchema), false)
	if err != nil {
		t.Fatal(err)
	}
	c := Compile(g, byteVocab)
	c.cacheLimit = 1
	doc := `{"name": "Ann", "age": 3, "role": "user"}`
	m := c.NewMatcher()
	mask := make([]uint64, 5)
	for i := 0; i < len(doc); i++ {
		m.FillMask(mask)
		if !bit(mask, int32(doc[i])) {
			t.Fatalf("%q at %d: not in the mask", doc, i)
		}
		if err := m.Accept(int32(doc[i])); err != nil {
			t.Fatal(err)
		}
	}
	if !m.CanEnd() || c.epoch < len(doc) {
		t.Fatalf("CanEnd %v, epoch %d", m.CanEnd(), c.epoch)
	}
	if b := c.MemoryBytes(); b <= 0 || b > 1<<20 {
		t.Fatalf("MemoryBytes %d", b)
	}
}
