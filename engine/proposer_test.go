package engine

import (
	"fmt"
	"math/rand"
	"runtime"
	"slices"
	"testing"
	"time"
)

// textLike returns n requests of prompt+output tokens shaped like text:
// Zipf-distributed tokens over a 32k vocabulary, often interrupted by
// phrases (4..19 tokens) drawn, also Zipf-distributed, from a bank shared
// by all requests, so that contexts recur across requests as they do in a
// model's outputs.
func textLike(seed int64, n, prompt, output int) [][]int32 {
	r := rand.New(rand.NewSource(seed))
	tok := rand.NewZipf(r, 1.1, 2, 32000-1)
	phrases := make([][]int32, 2000)
	for i := range phrases {
		for range 4 + r.Intn(16) {
			phrases[i] = append(phrases[i], int32(tok.Uint64()))
		}
	}
	pick := rand.NewZipf(r, 1.05, 4, uint64(len(phrases)-1))
	reqs := make([][]int32, n)
	for i := range reqs {
		for len(reqs[i]) < prompt+output {
			if r.Intn(3) == 0 {
				reqs[i] = append(reqs[i], phrases[pick.Uint64()]...)
			} else {
				reqs[i] = append(reqs[i], int32(tok.Uint64()))
			}
		}
		reqs[i] = reqs[i][:prompt+output]
	}
	return reqs
}

const benchPrompt, benchOutput = 64, 128

// benchSuffix returns suffix decoding with the default parameters whose
// cache is full (1000 requests of 128 output tokens), further requests,
// and a report of the time filling the cache took, of the index's heap and
// of one garbage collection's time with the index live.
func benchSuffix(b *testing.B) (*suffixProposer, [][]int32, func()) {
	c := SpeculativeConfig{Method: "suffix"}
	if err := c.resolve(); err != nil {
		b.Fatal(err)
	}
	reqs := textLike(1, 3*c.SuffixMaxCachedRequests, benchPrompt, benchOutput)
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	p := newSuffixProposer(&c)
	start := time.Now()
	for i, toks := range reqs[:c.SuffixMaxCachedRequests] {
		p.finished(int64(i), toks, benchPrompt)
	}
	fill := time.Since(start)
	runtime.GC()
	runtime.ReadMemStats(&after)
	start = time.Now()
	runtime.GC()
	gc := time.Since(start)
	report := func() {
		b.ReportMetric(float64(fill.Milliseconds()), "fill-ms")
		b.ReportMetric(float64(gc.Microseconds()), "gc-µs")
		b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/(1<<20), "index-MiB")
	}
	return p, reqs[c.SuffixMaxCachedRequests:], report
}

// BenchmarkSuffixFinished is the step loop's cost of one finished request:
// indexing its output and forgetting the oldest one's.
func BenchmarkSuffixFinished(b *testing.B) {
	p, reqs, report := benchSuffix(b)
	defer report()
	b.ReportAllocs()
	b.ResetTimer()
	i := 0
	for b.Loop() {
		p.finished(int64(i), reqs[i%len(reqs)], benchPrompt)
		i++
	}
}

// BenchmarkSuffixPropose is one decoding step's proposal for one sequence,
// the sequences decoding their outputs token by token.
func BenchmarkSuffixPropose(b *testing.B) {
	p, reqs, report := benchSuffix(b)
	defer report()
	b.ReportAllocs()
	b.ResetTimer()
	var st proposerState
	var dst []int32
	r, n := 0, benchPrompt
	for b.Loop() {
		dst = p.propose(&st, reqs[r][:n], p.depth, dst[:0])
		if n++; n > len(reqs[r]) {
			st, r, n = proposerState{}, (r+1)%len(reqs), benchPrompt
		}
	}
}

// checkIndex compares every successor ix reports with a brute-force count
// over seqs, and checks that ix knows no other context.
func checkIndex(t *testing.T, ix *suffixIndex, seqs [][]int32) {
	t.Helper()
	type context struct {
		toks   []int32
		counts map[int32]int32
		total  int32
	}
	ref := map[string]*context{}
	for _, s := range seqs {
		for i := 1; i < len(s); i++ {
			for d := 1; d <= min(ix.depth, i); d++ {
				c := ref[fmt.Sprint(s[i-d:i])]
				if c == nil {
					c = &context{toks: s[i-d : i], counts: map[int32]int32{}}
					ref[fmt.Sprint(c.toks)] = c
				}
				c.counts[s[i]]++
				c.total++
			}
		}
	}
	used := 0
	for _, s := range ix.ctxs.slots {
		if s.key != 0 {
			used++
		}
	}
	if used != len(ref) || ix.ctxs.n != used {
		t.Fatalf("%d contexts indexed (%d counted), want %d", used, ix.ctxs.n, len(ref))
	}
	for _, c := range ref {
		best := int32(-1)
		for tok, n := range c.counts {
			if best < 0 || n > c.counts[best] || n == c.counts[best] && tok < best {
				best = tok
			}
		}
		want := float64(c.counts[best]) / float64(c.total)
		keys := suffixKeys(nil, c.toks)
		if tok, prob, ok := ix.successor(keys[len(keys)-1]); !ok || tok != best || prob != want {
			t.Fatalf("after %v: %d (%v, %v), want %d (%v)", c.toks, tok, prob, ok, best, want)
		}
	}
	for _, e := range ix.ctxs.slots {
		if e.more != 0 && len(ix.more[e.more]) < 2 {
			t.Fatalf("context %+v: %d successors listed", e, len(ix.more[e.more]))
		}
	}
}

// randomTokens returns up to 30 tokens of a 4-token vocabulary, so that
// contexts recur and counts tie.
func randomTokens(r *rand.Rand) []int32 {
	s := make([]int32, r.Intn(31))
	for i := range s {
		s[i] = int32(r.Intn(4))
	}
	return s
}

// TestSuffixIndex checks the index against a brute-force count as
// sequences are indexed and forgotten in any order, and as one grows.
func TestSuffixIndex(t *testing.T) {
	r := rand.New(rand.NewSource(1))
	for _, depth := range []int{1, 3, 24} {
		ix := newSuffixIndex(depth)
		var live [][]int32
		for range 200 {
			if len(live) > 0 && r.Intn(3) == 0 {
				j := r.Intn(len(live))
				ix.add(live[j], -1)
				live = slices.Delete(live, j, j+1)
			} else {
				s := randomTokens(r)
				ix.add(s, +1)
				live = append(live, s)
			}
			checkIndex(t, ix, live)
		}
		own, s := newSuffixIndex(depth), randomTokens(r)
		for n := range len(s) + 1 {
			if n == len(s) || r.Intn(3) == 0 {
				own.extend(s[:n])
				checkIndex(t, own, [][]int32{s[:n]})
			}
		}
	}
}

// TestSuffixWindow checks that suffix decoding's index holds exactly the
// outputs of the last SuffixMaxCachedRequests finished requests, proposals
// or not between them.
func TestSuffixWindow(t *testing.T) {
	r := rand.New(rand.NewSource(2))
	c := SpeculativeConfig{Method: "suffix", SuffixMaxTreeDepth: 3, SuffixMaxCachedRequests: 4}
	if err := c.resolve(); err != nil {
		t.Fatal(err)
	}
	p := newSuffixProposer(&c)
	var outs [][]int32
	for i := range 500 {
		s := randomTokens(r)
		prompt := r.Intn(len(s) + 1)
		p.finished(int64(i), s, prompt)
		outs = append(outs, s[prompt:])
		if r.Intn(1+r.Intn(8)) == 0 {
			p.propose(&proposerState{}, randomTokens(r), 4, nil)
		}
		checkIndex(t, p.global, outs[max(0, len(outs)-c.SuffixMaxCachedRequests):])
	}
}
