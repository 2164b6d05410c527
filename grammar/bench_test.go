package grammar

import (
	"slices"
	"testing"
	"time"
)

// benchDoc is a realistic output for personSchema, with the spacing a model writes.
const benchDoc = `{"name": "Margaret Hamilton", "age": 88, "height": 1.68, "role": "admin", "tags": ["apollo", "software", "engineering"], "active": true}`

// benchSetup returns the compiled personSchema and benchDoc's tokens.
func benchSetup(b *testing.B) (*Compiled, []int32) {
	dm := loadDefault(b)
	g, err := FromJSONSchema([]byte(personSchema), false)
	if err != nil {
		b.Fatal(err)
	}
	return Compile(g, dm.vocab), dm.tok.Encode(benchDoc, false, false)
}

// maskSteps runs the document through a matcher, timing FillMask at each step (and at the
// end); fresh empties the mask cache before each FillMask (cold masks).
func maskSteps(b *testing.B, c *Compiled, ids []int32, fresh bool, times []time.Duration) []time.Duration {
	m := c.NewMatcher()
	mask := make([]uint64, (c.v.Size()+63)/64)
	for i := 0; i <= len(ids); i++ {
		if fresh {
			c.resetCache()
		}
		t0 := time.Now()
		m.FillMask(mask)
		times = append(times, time.Since(t0))
		if i < len(ids) {
			if err := m.Accept(ids[i]); err != nil {
				b.Fatal(err)
			}
		}
	}
	return times
}

func reportSteps(b *testing.B, times []time.Duration) {
	slices.Sort(times)
	var sum time.Duration
	for _, d := range times {
		sum += d
	}
	b.ReportMetric(float64(sum.Nanoseconds())/float64(len(times)), "ns/step")
	b.ReportMetric(float64(times[len(times)*99/100].Nanoseconds()), "p99-ns/step")
}

// BenchmarkFillMaskCold times FillMask with an empty cache at every step of benchDoc
// (49,152-token vocabulary): the cost of a state seen for the first time.
func BenchmarkFillMaskCold(b *testing.B) { benchFillMask(b, true) }

// BenchmarkFillMaskWarm times FillMask at every step of benchDoc after one pass warmed the
// cache (what a batch of sequences with the same schema sees).
func BenchmarkFillMaskWarm(b *testing.B) { benchFillMask(b, false) }

// benchFillMask times FillMask at every step of benchDoc, emptying the cache before
// each pass when cold, else after one warming pass.
func benchFillMask(b *testing.B, cold bool) {
	c, ids := benchSetup(b)
	if !cold {
		maskSteps(b, c, ids, false, nil)
	}
	var times []time.Duration
	for b.Loop() {
		times = maskSteps(b, c, ids, cold, times)
	}
	reportSteps(b, times)
}

// BenchmarkAccept times Accept over the tokens of benchDoc (ns per token).
func BenchmarkAccept(b *testing.B) {
	c, ids := benchSetup(b)
	for b.Loop() {
		m := c.NewMatcher()
		for _, id := range ids {
			if err := m.Accept(id); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(ids)), "ns/token")
}

// BenchmarkNewVocab times building the vocabulary trie (once per model).
func BenchmarkNewVocab(b *testing.B) {
	dm := loadDefault(b)
	for b.Loop() {
		NewVocab(dm.vocab.pieces, dm.vocab.eog)
	}
}

// BenchmarkCompileSchema times FromJSONSchema and Compile of personSchema (once per request
// unless the caller caches the Compiled).
func BenchmarkCompileSchema(b *testing.B) {
	dm := loadDefault(b)
	for b.Loop() {
		g, err := FromJSONSchema([]byte(personSchema), false)
		if err != nil {
			b.Fatal(err)
		}
		Compile(g, dm.vocab)
	}
}

// BenchmarkBatchStep32 times one engine step of 32 sequences on the same schema, each at its
// own place in benchDoc: FillMask and Accept for each (ns/op is per step of the batch; the
// cache is warm after the first pass).
func BenchmarkBatchStep32(b *testing.B) {
	c, ids := benchSetup(b)
	const n = 32
	ms := make([]*Matcher, n)
	pos := make([]int, n)
	mask := make([]uint64, (c.v.Size()+63)/64)
	restart := func(i int) {
		ms[i], pos[i] = c.NewMatcher(), 0
	}
	for i := range ms {
		restart(i)
		for pos[i] < i%len(ids) {
			if err := ms[i].Accept(ids[pos[i]]); err != nil {
				b.Fatal(err)
			}
			pos[i]++
		}
	}
	for b.Loop() {
		for i, m := range ms {
			m.FillMask(mask)
			if pos[i] == len(ids) {
				restart(i)
				continue
			}
			if err := m.Accept(ids[pos[i]]); err != nil {
				b.Fatal(err)
			}
			pos[i]++
		}
	}
}
