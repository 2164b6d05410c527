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
		name: "longest on a tie", stops: []string{"ab", "abc"},
		pushes: []string{"xabc"}, want: []string{"x"}, stoppedAt: 0,
		match: StopMatch{Stop: "abc", Index: 1, Offset: 1}, wantMatched: true,
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
