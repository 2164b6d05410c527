package engine

import (
	"slices"

	"github.com/cespare/xxhash/v2"
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
type suffixProposer struct {
	depth   int
	minProb float64
	factor  float64
	global  *suffixIndex
	recent  [][]int32 // the outputs in global, oldest first
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
// either index knows (the sequence's own first), its frequency and the
// suffix's length (0: none known).
func (p *suffixProposer) next(own *suffixIndex, ctx []int32) (int32, float64, int) {
	for d := len(ctx); d >= 1; d-- {
		for _, ix := range [2]*suffixIndex{own, p.global} {
			if tok, pr, ok := ix.successor(ctx[len(ctx)-d:]); ok {
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
	p.recent = append(p.recent, out)
	if len(p.recent) > p.maxReqs {
		p.global.add(p.recent[0], -1)
		p.recent = p.recent[1:]
	}
}

// suffixIndex counts, for every context of 1..depth tokens seen, the
// tokens that followed it.
type suffixIndex struct {
	depth int
	next  map[uint64]*successors
	done  int // tokens of the sequence indexed so far (extend)
}

type successors struct {
	total  int32
	counts map[int32]int32
}

func newSuffixIndex(depth int) *suffixIndex {
	return &suffixIndex{depth: depth, next: map[uint64]*successors{}}
}

// ctxKey hashes a context (its length is part of the hash input).
func ctxKey(ctx []int32) uint64 {
	var d xxhash.Digest
	d.Reset()
	var b [4]byte
	for _, t := range ctx {
		b[0], b[1], b[2], b[3] = byte(t), byte(t>>8), byte(t>>16), byte(t>>24)
		d.Write(b[:])
	}
	b[0], b[1], b[2], b[3] = byte(len(ctx)), 0, 0, 0xff
	d.Write(b[:])
	return d.Sum64()
}

// extend indexes the tokens of a growing sequence not indexed yet.
func (ix *suffixIndex) extend(tokens []int32) {
	for i := max(ix.done, 1); i < len(tokens); i++ {
		ix.count(tokens, i, +1)
	}
	ix.done = len(tokens)
}

// add indexes (delta +1) or forgets (−1) a whole sequence.
func (ix *suffixIndex) add(tokens []int32, delta int32) {
	for i := 1; i < len(tokens); i++ {
		ix.count(tokens, i, delta)
	}
}

// count records tokens[i] as the successor of each context ending at i.
func (ix *suffixIndex) count(tokens []int32, i int, delta int32) {
	for d := 1; d <= min(ix.depth, i); d++ {
		key := ctxKey(tokens[i-d : i])
		s := ix.next[key]
		if s == nil {
			if delta < 0 {
				continue
			}
			s = &successors{counts: map[int32]int32{}}
			ix.next[key] = s
		}
		s.total += delta
		s.counts[tokens[i]] += delta
		if s.counts[tokens[i]] <= 0 {
			delete(s.counts, tokens[i])
		}
		if s.total <= 0 {
			delete(ix.next, key)
		}
	}
}

// successor returns the most frequent token after ctx (the lowest id among
// equals) and its frequency.
func (ix *suffixIndex) successor(ctx []int32) (int32, float64, bool) {
	s := ix.next[ctxKey(ctx)]
	if s == nil || s.total <= 0 {
		return 0, 0, false
	}
	best, bc := int32(-1), int32(0)
	for t, c := range s.counts {
		if c > bc || (c == bc && t < best) {
			best, bc = t, c
		}
	}
	return best, float64(bc) / float64(s.total), best >= 0
}
