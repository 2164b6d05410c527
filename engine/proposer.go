package engine

import (
	"math/rand/v2"
	"slices"
)

// A proposer guesses a sequence's next tokens for speculative decoding. It
// sees only token ids (never logits), so whatever it proposes, the outputs
// are those of plain decoding; a good guess only saves steps.
type proposer interface {
	// propose appends to dst up to k guesses of the tokens that follow
	// tokens (a sequence's prompt and output); st is the sequence's own
	// proposer state (nil before its first call).
	propose(st *proposerState, tokens []int32, k int, dst []int32) []int32
	// finished records a finished sequence's output (suffix decoding's
	// cache of recent requests) and drops its state (the draft model's).
	finished(seqID int64, tokens []int32, numPrompt int)
}

// proposerState is one sequence's proposer state and acceptance record.
type proposerState struct {
	index *suffixIndex // suffix decoding: the sequence's own tokens, indexed up to index.done
	// rejected is the recent fraction of proposals rejected (an
	// exponentially weighted average, 0 at first); a sequence whose
	// guesses keep failing proposes only every probeEvery steps.
	rejected float64
	steps    int
}

const (
	ewmaWeight  = 0.3
	maxRejected = 0.9 // above it, proposals pause
	probeEvery  = 8   // a paused sequence still proposes every probeEvery steps
)

// record updates the acceptance record with one verified draft.
func (p *proposerState) record(proposed, accepted int) {
	p.rejected = (1-ewmaWeight)*p.rejected + ewmaWeight*float64(proposed-accepted)/float64(proposed)
}

// paused reports whether the sequence skips proposing this step.
func (p *proposerState) paused() bool {
	p.steps++
	return p.rejected > maxRejected && p.steps%probeEvery != 0
}

// ngramProposer is prompt lookup decoding (vLLM's ngram method, llama.cpp's
// lookup decoding): find the latest earlier occurrence of the sequence's
// last n tokens, n from max down to min, and propose what followed it.
type ngramProposer struct{ min, max int }

func (g ngramProposer) propose(_ *proposerState, tokens []int32, k int, dst []int32) []int32 {
	n := len(tokens)
	for size := min(g.max, n-1); size >= g.min; size-- {
		suffix := tokens[n-size:]
		for i := n - size - 1; i >= 0; i-- {
			if tokens[i] == suffix[0] && slices.Equal(tokens[i:i+size], suffix) {
				return append(dst, tokens[i+size:min(n, i+size+k)]...)
			}
		}
	}
	return dst
}

func (ngramProposer) finished(int64, []int32, int) {}

// suffixProposer is suffix decoding (Arctic Inference, vLLM's suffix
// method): an index of which token followed every context of up to depth
// tokens, over the sequence's own tokens and over recent requests'
// outputs. A proposal continues the longest context of the sequence's end
// the index knows with its most frequent successor, again and again, while
// the product of the successors' frequencies (an estimate of the draft's
// probability) stays at least minProb; at most factor × the matched length.
//
// The recent outputs are the last maxReqs finished: finished indexes
// each one at once and forgets the oldest (about 0.6 ms of the step loop
// for a 128-token output, whether or not proposals are being made: a
// bounded cost per request, never a catch-up of many outputs in one
// step). Invariant: global indexes exactly outs.
type suffixProposer struct {
	depth   int
	minProb float64
	factor  float64
	global  *suffixIndex
	outs    [][]int32 // the indexed outputs, oldest first
	maxReqs int
}

func newSuffixProposer(c *SpeculativeConfig) *suffixProposer {
	return &suffixProposer{depth: c.SuffixMaxTreeDepth, minProb: c.SuffixMinTokenProb, factor: c.SuffixMaxSpecFactor,
		global: newSuffixIndex(c.SuffixMaxTreeDepth), maxReqs: c.SuffixMaxCachedRequests}
}

func (p *suffixProposer) propose(st *proposerState, tokens []int32, k int, dst []int32) []int32 {
	if st.index == nil {
		st.index = newSuffixIndex(p.depth)
	}
	st.index.extend(tokens)
	ctx := slices.Clone(tokens[max(0, len(tokens)-p.depth):])
	prob, start := 1.0, len(dst)
	limit := k
	for len(dst)-start < limit {
		tok, pr, matched := p.next(st.index, ctx)
		if matched == 0 {
			break
		}
		if len(dst) == start {
			limit = min(k, max(1, int(p.factor*float64(matched))))
		}
		if prob *= pr; prob < p.minProb {
			break
		}
		dst = append(dst, tok)
		ctx = append(ctx, tok)
		if len(ctx) > p.depth {
			ctx = ctx[1:]
		}
	}
	return dst
}

// next returns the most frequent successor of the longest suffix of ctx
// (at most 64 tokens) either index knows (the sequence's own first), its
// frequency and the suffix's length (0: none known).
func (p *suffixProposer) next(own *suffixIndex, ctx []int32) (int32, float64, int) {
	var buf [64]uint64
	keys := suffixKeys(buf[:0], ctx)
	for d := len(ctx); d >= 1; d-- {
		for _, ix := range [2]*suffixIndex{own, p.global} {
			if tok, pr, ok := ix.successor(keys[d-1]); ok {
				return tok, pr, d
			}
		}
	}
	return 0, 0, 0
}

func (p *suffixProposer) finished(_ int64, tokens []int32, numPrompt int) {
	if p.maxReqs == 0 {
		return
	}
	out := slices.Clone(tokens[numPrompt:])
	p.global.add(out, +1)
	p.outs = append(p.outs, out)
	if len(p.outs) > p.maxReqs {
		p.global.add(p.outs[0], -1)
		p.outs = p.outs[1:]
	}
}

// suffixIndex counts, for every context of 1..depth tokens seen, the
// tokens that followed it. A context is known by a 64-bit hash of its
// tokens (suffixKeys); two contexts whose hashes collide share their
// counts, which can only make a proposal worse: proposals are verified,
// so the index never changes an output.
//
// The garbage collector has almost nothing to scan in it: ctxs's slots
// hold no pointers, and only the few contexts seen with more than one
// successor have a slice (in more). Invariants: a context is in ctxs iff
// its total > 0; best is its most frequent successor (the lowest id
// among equals) and bestCount that one's count; a context with more == 0
// has had only best after it (bestCount == total), otherwise
// more[e.more] holds its successors (at least two, each once, every
// count > 0, their sum total). freeMore lists the unused indices of more
// (0 is never used).
type suffixIndex struct {
	depth    int
	ctxs     ctxTable
	more     [][]succCount
	freeMore []int32
	done     int      // tokens of the sequence indexed so far (extend)
	keys     []uint64 // count's scratch
}

type ctxEntry struct{ total, best, bestCount, more int32 }

type succCount struct{ tok, count int32 }

func newSuffixIndex(depth int) *suffixIndex {
	return &suffixIndex{depth: depth, ctxs: newCtxTable(), more: make([][]succCount, 1), keys: make([]uint64, 0, depth)}
}

// suffixSeed starts every key, so that no input can be made to crowd a
// ctxTable (as a map's hash seed does).
var suffixSeed = rand.Uint64()

// suffixKeys appends to keys the keys of ctx's suffixes, the shortest
// first: each extends the previous one's hash by one token to the left.
// A key is never 0.
func suffixKeys(keys []uint64, ctx []int32) []uint64 {
	h := suffixSeed
	for j := len(ctx) - 1; j >= 0; j-- {
		h = mix64(h + uint64(uint32(ctx[j])) + 0x9e3779b97f4a7c15)
		keys = append(keys, h|1)
	}
	return keys
}

// mix64 is SplitMix64's finalizer, a bijection of 64-bit values in which
// every input bit affects every output bit.
func mix64(z uint64) uint64 {
	z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
	z = (z ^ z>>27) * 0x94d049bb133111eb
	return z ^ z>>31
}

// extend indexes the tokens of a growing sequence not indexed yet.
func (ix *suffixIndex) extend(tokens []int32) {
	for i := max(ix.done, 1); i < len(tokens); i++ {
		ix.count(tokens, i, +1)
	}
	ix.done = len(tokens)
}

// add indexes (delta +1) or forgets (−1) a whole sequence; it forgets
// only what it indexed.
func (ix *suffixIndex) add(tokens []int32, delta int32) {
	for i := 1; i < len(tokens); i++ {
		ix.count(tokens, i, delta)
	}
}

// count records tokens[i] as the successor (delta +1), or takes back one
// such record (−1), of each context ending at i.
func (ix *suffixIndex) count(tokens []int32, i int, delta int32) {
	ix.keys = suffixKeys(ix.keys[:0], tokens[max(0, i-ix.depth):i])
	for _, key := range ix.keys {
		if delta > 0 {
			ix.inc(key, tokens[i])
		} else {
			ix.dec(key, tokens[i])
		}
	}
}

func (ix *suffixIndex) inc(key uint64, tok int32) {
	e := &ix.ctxs.slots[ix.ctxs.add(key)].ctxEntry
	switch {
	case e.total == 0:
		*e = ctxEntry{total: 1, best: tok, bestCount: 1}
	case e.more == 0 && e.best == tok:
		e.total++
		e.bestCount++
	default:
		if e.more == 0 {
			e.more = ix.newMore(succCount{e.best, e.bestCount})
		}
		s := ix.more[e.more]
		j := succIndex(s, tok)
		if j < 0 {
			j = len(s)
			s = append(s, succCount{tok: tok})
			ix.more[e.more] = s
		}
		s[j].count++
		e.total++
		if c := s[j].count; c > e.bestCount || c == e.bestCount && tok < e.best {
			e.best, e.bestCount = tok, c
		}
	}
}

// dec takes back one record of tok after key that inc made.
func (ix *suffixIndex) dec(key uint64, tok int32) {
	i := ix.ctxs.find(key)
	e := &ix.ctxs.slots[i].ctxEntry
	if e.total--; e.total == 0 {
		ix.ctxs.remove(i)
		return
	}
	if e.more == 0 {
		e.bestCount--
		return
	}
	s := ix.more[e.more]
	j := succIndex(s, tok)
	if s[j].count--; s[j].count == 0 {
		s[j] = s[len(s)-1]
		s = s[:len(s)-1]
		ix.more[e.more] = s
	}
	if len(s) == 1 {
		e.best, e.bestCount = s[0].tok, s[0].count
		ix.more[e.more] = s[:0]
		ix.freeMore = append(ix.freeMore, e.more)
		e.more = 0
	} else if tok == e.best {
		e.bestCount = 0
		for _, sc := range s {
			if sc.count > e.bestCount || sc.count == e.bestCount && sc.tok < e.best {
				e.best, e.bestCount = sc.tok, sc.count
			}
		}
	}
}

// newMore returns an unused index of more, its slice holding sc.
func (ix *suffixIndex) newMore(sc succCount) int32 {
	if n := len(ix.freeMore); n > 0 {
		m := ix.freeMore[n-1]
		ix.freeMore = ix.freeMore[:n-1]
		ix.more[m] = append(ix.more[m], sc)
		return m
	}
	ix.more = append(ix.more, []succCount{sc})
	return int32(len(ix.more) - 1)
}

// succIndex returns the index of tok's count in s (−1: none).
func succIndex(s []succCount, tok int32) int {
	for j := range s {
		if s[j].tok == tok {
			return j
		}
	}
	return -1
}

// successor returns the most frequent token after the context key (the
// lowest id among equals) and its frequency.
func (ix *suffixIndex) successor(key uint64) (int32, float64, bool) {
	e := &ix.ctxs.slots[ix.ctxs.find(key)]
	if e.key == 0 {
		return 0, 0, false
	}
	return e.best, float64(e.bestCount) / float64(e.total), true
}

// ctxTable maps the keys of contexts to their entries: open addressing
// with linear probing, in which a key's probe starts at its top bits
// (keys are hashes already), and deletion by backward shift (no
// tombstones). Invariants: len(slots) is a power of two, 1<<(64−shift);
// n slots, at most 3/4 of them, are used; a slot with key 0 is empty; a
// key's slot is reached from its start without crossing an empty one.
type ctxTable struct {
	slots []ctxSlot
	shift uint
	n     int
}

type ctxSlot struct {
	key uint64
	ctxEntry
}

func newCtxTable() ctxTable { return ctxTable{slots: make([]ctxSlot, 16), shift: 60} }

// find returns the index of key's slot, or of the empty slot it would
// take.
func (t *ctxTable) find(key uint64) int {
	mask := len(t.slots) - 1
	i := int(key >> t.shift)
	for t.slots[i].key != key && t.slots[i].key != 0 {
		i = (i + 1) & mask
	}
	return i
}

// add returns the index of key's slot, taking an empty one (a zero entry)
// if key has none.
func (t *ctxTable) add(key uint64) int {
	i := t.find(key)
	if t.slots[i].key == 0 {
		if 4*(t.n+1) > 3*len(t.slots) {
			old := t.slots
			t.slots, t.shift = make([]ctxSlot, 2*len(old)), t.shift-1
			for _, s := range old {
				if s.key != 0 {
					t.slots[t.find(s.key)] = s
				}
			}
			i = t.find(key)
		}
		t.slots[i].key = key
		t.n++
	}
	return i
}

// remove empties slot i, moving back each later slot of its run that
// would otherwise be cut off from its start.
func (t *ctxTable) remove(i int) {
	mask := len(t.slots) - 1
	for j := (i + 1) & mask; t.slots[j].key != 0; j = (j + 1) & mask {
		if start := int(t.slots[j].key >> t.shift); (j-start)&mask >= (j-i)&mask {
			t.slots[i], i = t.slots[j], j
		}
	}
	t.slots[i] = ctxSlot{}
	t.n--
}
