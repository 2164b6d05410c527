package tokenizer

import (
	"math/rand/v2"
	"strings"
	"testing"
)

// stopCases drive TestStopMatcher.
var stopCases = []struct {
	name        string
	stops       []string
	include     bool
	pushes      []string
	want        []string // released text per push
	stoppedAt   int      // index of the push that matched, -1 for none
	flush       string   // Flush after the pushes
	match       StopMatch
	wantMatched bool
}{
	{
		name: "split across pushes", stops: []string{"STOP"},
		pushes: []string{"Hel", "lo wor", "ld ST", "OP more"}, want: []string{"Hel", "lo wor", "ld ", ""},
		stoppedAt: 3, match: StopMatch{Stop: "STOP", Index: 0, Offset: 12}, wantMatched: true,
	},
	{
		name: "include the stop string", stops: []string{"STOP"}, include: true,
		pushes: []string{"ab S", "TOP cd"}, want: []string{"ab ", "STOP"},
		stoppedAt: 1, match: StopMatch{Stop: "STOP", Offset: 3}, wantMatched: true,
	},
	{
		name: "false start is released", stops: []string{"STOP"},
		pushes: []string{"a ST", "AR", "T"}, want: []string{"a ", "STAR", "T"}, stoppedAt: -1,
	},
	{
		name: "held tail released by Flush", stops: []string{"</answer>"},
		pushes: []string{"42 </ans"}, want: []string{"42 "}, stoppedAt: -1, flush: "</ans",
	},
	{
		name: "earliest of several", stops: []string{"world", "lo w"},
		pushes: []string{"hello world"}, want: []string{"hel"}, stoppedAt: 0,
		match: StopMatch{Stop: "lo w", Index: 1, Offset: 3}, wantMatched: true,
	},
	{
		name: "first completed, whatever the pushes", stops: []string{"abc", "ab"},
		pushes: []string{"xabc"}, want: []string{"x"}, stoppedAt: 0,
		match: StopMatch{Stop: "ab", Index: 1, Offset: 1}, wantMatched: true,
	},
	{
		name: "longest on a tie", stops: []string{"bc", "abc"},
		pushes: []string{"xabcd"}, want: []string{"x"}, stoppedAt: 0,
		match: StopMatch{Stop: "abc", Index: 1, Offset: 1}, wantMatched: true,
	},
	{
		name: "suffix of a longer prefix", stops: []string{"aab", "ab"},
		pushes: []string{"a", "a", "a", "b!"}, want: []string{"", "", "a", ""}, stoppedAt: 3,
		match: StopMatch{Stop: "aab", Index: 0, Offset: 1}, wantMatched: true,
	},
	{
		name: "shortest stop matches first when it completes first", stops: []string{"ab", "abc"},
		pushes: []string{"xab"}, want: []string{"x"}, stoppedAt: 0,
		match: StopMatch{Stop: "ab", Index: 0, Offset: 1}, wantMatched: true,
	},
	{
		name: "multi-byte stop split across pushes", stops: []string{"🛑"},
		pushes: []string{"go ", "🛑", "x"}, want: []string{"go ", ""}, stoppedAt: 1,
		match: StopMatch{Stop: "🛑", Offset: 3}, wantMatched: true,
	},
	{
		name: "no stops", stops: []string{""},
		pushes: []string{"a", "b"}, want: []string{"a", "b"}, stoppedAt: -1,
	},
	{
		name: "stop at the very start", stops: []string{"\n\n"},
		pushes: []string{"\n", "\nrest"}, want: []string{"", ""}, stoppedAt: 1,
		match: StopMatch{Stop: "\n\n", Offset: 0}, wantMatched: true,
	},
}

func TestStopMatcher(t *testing.T) {
	for _, c := range stopCases {
		t.Run(c.name, func(t *testing.T) {
			m := NewStopMatcher(c.stops, c.include)
			for i, p := range c.pushes {
				out, stopped := m.Push(p)
				if i < len(c.want) && out != c.want[i] {
					t.Fatalf("push %d (%q): released %q, want %q", i, p, out, c.want[i])
				}
				if i >= len(c.want) && out != "" {
					t.Fatalf("push %d after the stop released %q", i, out)
				}
				if stopped != (c.stoppedAt >= 0 && i >= c.stoppedAt) {
					t.Fatalf("push %d: stopped = %v", i, stopped)
				}
			}
			if got := m.Flush(); got != c.flush {
				t.Fatalf("Flush = %q, want %q", got, c.flush)
			}
			if got, ok := m.Match(); ok != c.wantMatched || got != c.match {
				t.Fatalf("Match = %+v, %v; want %+v, %v", got, ok, c.match, c.wantMatched)
			}
		})
	}
}

// TestStopMatcherRandomSplits streams a text in random pieces and checks that the released
// text never contains any part of the stop string and ends exactly where the stop begins.
func TestStopMatcherRandomSplits(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	const text = "The answer is 42.\nUser: what else?\nAssistant: nothing"
	stops := []string{"\nUser:", "Assistant:"}
	cut := strings.Index(text, "\nUser:")
	for trial := range 300 {
		include := trial%2 == 1
		m := NewStopMatcher(stops, include)
		var released strings.Builder
		for rest := text; rest != ""; {
			n := 1 + rng.IntN(min(len(rest), 7))
			out, stopped := m.Push(rest[:n])
			released.WriteString(out)
			rest = rest[n:]
			if stopped {
				break
			}
		}
		want := text[:cut]
		if include {
			want += "\nUser:"
		}
		if got := released.String(); got != want {
			t.Fatalf("trial %d: released %q, want %q", trial, got, want)
		}
	}
}

// TestStopMatcherWithDetokenizer streams real tokens through both stages.
func TestStopMatcherWithDetokenizer(t *testing.T) {
	tk := smolTokenizer(t)
	ids := tk.Encode("Sure! Here it is 😀.<|im_end|>\nmore", false, true)
	d := tk.NewDetokenizer(DetokenizerOptions{})
	m := NewStopMatcher([]string{"😀."}, false)
	var out strings.Builder
	for _, id := range ids {
		s, stopped := m.Push(d.Add(id))
		out.WriteString(s)
		if stopped {
			break
		}
	}
	if got := out.String(); got != "Sure! Here it is " {
		t.Fatalf("got %q", got)
	}
}

// stopReference is the matcher's specification, by brute force over the whole text: the stop
// string completed first (longest on a tie at the same end), and the released prefix.
func stopReference(stops []string, text string) (StopMatch, bool) {
	for end := 1; end <= len(text); end++ {
		best := -1
		for i, s := range stops {
			if s != "" && strings.HasSuffix(text[:end], s) && (best < 0 || len(s) > len(stops[best])) {
				best = i
			}
		}
		if best >= 0 {
			return StopMatch{Stop: stops[best], Index: best, Offset: end - len(stops[best])}, true
		}
	}
	return StopMatch{}, false
}

// TestStopMatcherAgainstReference streams random texts over a small alphabet, in random
// pieces, against random stop sets, and compares the match and the released text with the
// brute-force specification.
func TestStopMatcherAgainstReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	word := func(n int) string {
		b := make([]byte, n)
		for i := range b {
			b[i] = "abc"[rng.IntN(3)]
		}
		return string(b)
	}
	for trial := range 3000 {
		stops := make([]string, 1+rng.IntN(6))
		for i := range stops {
			stops[i] = word(1 + rng.IntN(4))
		}
		text := word(rng.IntN(24))
		include := trial%2 == 1
		m := NewStopMatcher(stops, include)
		var released strings.Builder
		stopped := false
		for rest := text; rest != "" && !stopped; {
			n := 1 + rng.IntN(min(len(rest), 5))
			var out string
			out, stopped = m.Push(rest[:n])
			released.WriteString(out)
			rest = rest[n:]
		}
		if !stopped {
			released.WriteString(m.Flush())
		}
		want, ok := stopReference(stops, text)
		got, gotOK := m.Match()
		wantText := text
		if ok {
			wantText = text[:want.Offset]
			if include {
				wantText += want.Stop
			}
		}
		if gotOK != ok || got != want || released.String() != wantText {
			t.Fatalf("stops %q text %q: match %+v %v released %q; want %+v %v %q",
				stops, text, got, gotOK, released.String(), want, ok, wantText)
		}
	}
}

// BenchmarkStopMatcher pushes one token's text at a time against the largest stop set a
// request may have (64 strings of 256 bytes): the cost per push must not grow with the set.
func BenchmarkStopMatcher(b *testing.B) {
	stops := make([]string, 64)
	for i := range stops {
		stops[i] = strings.Repeat("ab", 127) + string(rune('A'+i%26)) + string(rune('a'+i/26))
	}
	set := NewStopSet(stops)
	text := strings.Repeat("ab", 4096)
	b.SetBytes(4)
	b.ResetTimer()
	m := set.Matcher(false)
	for i := range b.N {
		j := (i * 4) % len(text)
		m.Push(text[j : j+4])
	}
}
