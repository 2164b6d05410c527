package sample

import (
	"math"
	"math/rand/v2"
)

// pcgStream is the second PCG word of a seeded sampler (the seed is the
// first): any fixed constant works, this one is the golden-ratio constant.
const pcgStream = 0x9e3779b97f4a7c15

// Sampler draws the tokens of one sequence.
//
// Invariants:
//   - The random stream depends only on the seed and on the number of
//     non-greedy Sample calls made on this Sampler (each consumes exactly one
//     64-bit draw; greedy calls consume none), never on other samplers.
//   - Sample reads the penalty history but never changes it; only Accept
//     does. The engine calls Accept with every token it appends to the
//     sequence (sampled or otherwise, e.g. a beam search's choice).
//   - Sample never modifies the caller's logits (several samplers may read
//     one row, e.g. the n samples of a request at its first step); it works
//     on a copy in a Scratch.
//
// A Sampler is not safe for concurrent use; distinct Samplers are.
type Sampler struct {
	greedy bool
	filter filter
	bias   []bias // sorted by id
	pen    penalties
	hist   *history // nil when no penalty is on
	src    rand.PCG
	nTop   int // Params.Logprobs
	// unscored: Result carries only the ID (no logprob, rank or top
	// alternatives), saving a pass of exponentials over the vocabulary
	// per token; see SkipScores.
	unscored bool
	heap     []cand         // (nTop) selection heap for Result.Top
	top      []TokenLogprob // (nTop) backing store of Result.Top
	own      *Scratch       // Sample's scratch, allocated on first use
	// suppress lists tokens that cannot be drawn (their processed logit is
	// −Inf), e.g. EOS and stop tokens before min_tokens.
	suppress []int32
	// allowed, when not nil, is a bitset of the tokens that may be drawn
	// (bit id%64 of word id/64); the others' processed logit is −Inf. A
	// grammar's token mask (structured outputs).
	allowed []uint64
}

// SkipScores makes later Results carry only the token ID: Logprob and
// Rank are 0 and Top is empty. The tokens drawn are the same either way.
// Callers that use neither the logprob nor the alternatives (no logprobs
// asked, no ranking of samples) save a vocabulary-sized pass of
// exponentials per token.
func (s *Sampler) SkipScores() { s.unscored = true }

// Suppress makes ids impossible to draw until the next Suppress call
// (nil lifts it). Logprobs still score the raw logits. The slice is kept,
// not copied.
func (s *Sampler) Suppress(ids []int32) { s.suppress = ids }

// Allow restricts the next draws to the tokens whose bit is set in mask
// (bit id%64 of word id/64), until the next Allow call (nil lifts it). If
// mask allows no token at all, the restriction is ignored. Logprobs still
// score the raw logits. The slice is kept, not copied: the caller refills
// it before each Sample.
func (s *Sampler) Allow(mask []uint64) { s.allowed = mask }

// Scratch holds the working buffers of one Sample call: a copy of the
// logits and the candidate list. Sample uses one owned by the Sampler;
// SampleWith lets many samplers that run one after another (e.g. on the
// engine loop, or one per worker) share one, so that memory is one
// vocabulary-sized buffer per worker instead of one per running sequence.
// The zero value is ready to use; buffers grow to the largest vocabulary
// seen and are reused. Not safe for concurrent use.
type Scratch struct {
	proc  []float32 // (vocab) processed logits, then their weights
	cands []cand    // (candidates) tokens kept by top-k or top-p
}

// logits returns the processed-logits buffer, n long.
func (sc *Scratch) logits(n int) []float32 {
	if cap(sc.proc) < n {
		sc.proc = make([]float32, n)
	}
	return sc.proc[:n]
}

// New returns the sampler of one sequence. p should have passed Validate;
// out-of-range values are read as: temperature < 1e-5 greedy (and a
// positive one below 0.01 raised to 0.01, as vLLM does), top_k < 2 off
// (1 greedy), top_p outside (0, 1) off, min_p ≤ 0 off. promptTokens are
// read (not kept) for the repetition penalty.
func New(p Params, promptTokens []int32) *Sampler {
	s := &Sampler{
		greedy: p.Temperature < greedyEpsilon || p.TopK == 1,
		bias:   biasList(p.LogitBias),
		pen:    penalties{repetition: p.RepetitionPenalty, frequency: p.FrequencyPenalty, presence: p.PresencePenalty},
		nTop:   max(0, p.Logprobs),
	}
	if !(s.pen.repetition > 0) {
		s.pen.repetition = 1
	}
	t := max(float64(p.Temperature), minTemperature)
	s.filter = filter{temp: t, invT: 1 / t, lnMinP: math.Inf(-1), topP: 1}
	if p.MinP > 0 {
		s.filter.lnMinP = math.Log(float64(p.MinP))
	}
	if p.TopK > 1 {
		s.filter.topK = p.TopK
	}
	if p.TopP > 0 && p.TopP < 1 {
		s.filter.topP = float64(p.TopP)
	}
	if s.pen.on() {
		s.hist = newHistory(promptTokens, s.pen.repetition != 1)
	}
	if p.Seed != nil {
		s.src = *rand.NewPCG(uint64(*p.Seed), pcgStream)
	} else {
		s.src = *rand.NewPCG(rand.Uint64(), rand.Uint64())
	}
	s.heap = make([]cand, 0, s.nTop)
	s.top = make([]TokenLogprob, 0, s.nTop)
	return s
}

// Accept records that id was appended to the sequence's output, for the
// penalties. O(1) amortized; a no-op when no penalty is on.
func (s *Sampler) Accept(id int32) {
	if s.hist != nil {
		s.hist.add(id)
	}
}

// Clone returns an independent copy: same parameters, same history, same
// random state (so it draws what s would draw next), its own buffers. Beam
// search forks a beam with it.
func (s *Sampler) Clone() *Sampler {
	c := *s
	if s.hist != nil {
		c.hist = s.hist.clone()
	}
	c.heap = make([]cand, 0, s.nTop)
	c.top = make([]TokenLogprob, 0, s.nTop)
	c.own = nil
	return &c
}

// Sample picks the next token from logits (vocab; not modified) and scores
// it with the raw logprobs. It uses the Sampler's own Scratch (one
// vocabulary-sized copy, allocated on the first call); see SampleWith.
// Result.Top aliases a buffer of the Sampler, valid until its next Sample.
// After the first call it does not allocate.
func (s *Sampler) Sample(logits []float32) Result {
	if s.own == nil {
		s.own = new(Scratch)
	}
	return s.SampleWith(s.own, logits)
}

// SampleWith is Sample with the working buffers of sc, which must not be in
// use by another call at the same time.
//
// Cost for V tokens: O(V) for the copy, bias and penalties (the latter
// O(distinct history tokens)), O(V) for the raw log-sum-exp (V
// exponentials) and the rank, plus the filter's cost (see filter.apply):
// greedy needs no exponential, top-k about k, otherwise V more.
func (s *Sampler) SampleWith(sc *Scratch, logits []float32) Result {
	if len(logits) == 0 {
		panic("sample: empty logits")
	}
	var id int32
	if s.greedy {
		id = s.argmax(sc, logits)
	} else {
		id = s.draw(sc, logits)
	}
	return s.score(logits, id)
}

// process copies logits into sc and applies the logit bias and penalties.
func (s *Sampler) process(sc *Scratch, logits []float32) []float32 {
	proc := sc.logits(len(logits))
	copy(proc, logits)
	applyBias(s.bias, proc)
	if s.hist != nil {
		s.pen.apply(s.hist, proc)
	}
	for _, id := range s.suppress {
		if id >= 0 && int(id) < len(proc) {
			proc[id] = float32(math.Inf(-1))
		}
	}
	if s.allowed != nil {
		applyMask(s.allowed, proc)
	}
	return proc
}

// applyMask sets the logits of the tokens not in mask to −Inf, unless mask
// allows none of them.
func applyMask(mask []uint64, proc []float32) {
	any := false
	for w := range min(len(mask), (len(proc)+63)/64) {
		if mask[w] != 0 {
			any = true
			break
		}
	}
	if !any {
		return
	}
	inf := float32(math.Inf(-1))
	for w := range (len(proc) + 63) / 64 {
		var m uint64
		if w < len(mask) {
			m = mask[w]
		}
		if m == ^uint64(0) {
			continue
		}
		base := w * 64
		for b := range min(64, len(proc)-base) {
			if m&(1<<b) == 0 {
				proc[base+b] = inf
			}
		}
	}
}

// argmax is greedy decoding: the argmax of the biased and penalized logits,
// ties to the lowest id. Without bias or penalty it reads logits directly.
func (s *Sampler) argmax(sc *Scratch, logits []float32) int32 {
	if len(s.bias) == 0 && len(s.suppress) == 0 && s.allowed == nil && (s.hist == nil || len(s.hist.entries) == 0) {
		return argmax(logits)
	}
	return argmax(s.process(sc, logits))
}

// draw is random sampling: process, filter, then draw one uniform. If
// nothing survives (every processed logit −Inf), it falls back to the
// argmax of the raw logits.
func (s *Sampler) draw(sc *Scratch, logits []float32) int32 {
	u := s.uniform()
	sup := s.filter.apply(sc, s.process(sc, logits))
	if id, ok := sup.draw(u); ok {
		return id
	}
	return argmax(logits)
}

// uniform returns a float64 uniform in [0, 1) from the top 53 bits of one
// draw.
func (s *Sampler) uniform() float64 {
	return float64(s.src.Uint64()>>11) * 0x1p-53
}

// score fills the Result of token id: raw logprob, rank and top logprobs.
func (s *Sampler) score(logits []float32, id int32) Result {
	if s.unscored {
		return Result{ID: id}
	}
	lse := logSumExp(logits)
	r := Result{ID: id, Logprob: float32(float64(logits[id]) - lse), Rank: rank(logits, id)}
	if s.nTop > 0 {
		s.heap, s.top = topInto(s.heap, s.top[:0], logits, s.nTop, lse)
		r.Top = s.top
	}
	return r
}
