package sample

import (
	"fmt"
	"math"
)

// TokenLogprob is one token with its log-probability.
type TokenLogprob struct {
	ID      int32
	Logprob float32
}

// Result is the outcome of one sampling step, or the score of a given token
// (see Logprobs).
type Result struct {
	ID int32
	// Logprob is the log-softmax of the raw logits at ID: before logit bias,
	// penalties and temperature, as vLLM returns by default.
	Logprob float32
	// Rank is vLLM's rank of ID: the number of tokens whose raw logit is
	// ≥ that of ID (1 for the most likely token).
	Rank int
	// Top holds the highest raw logprobs, at most the requested number,
	// sorted by logprob descending, ties by lower id.
	Top []TokenLogprob
}

// LogSoftmax writes the log-softmax of logits into out, which must have the
// same length; out may be logits itself. The sum of exponentials is within
// about 1e-7 (relative) of the exact one, so each result is within about
// 1e-7 plus float32 rounding. O(vocab).
func LogSoftmax(logits, out []float32) {
	if len(out) != len(logits) {
		panic(fmt.Sprintf("sample: LogSoftmax: len(out) = %d, want %d", len(out), len(logits)))
	}
	lse := logSumExp(logits)
	for i, v := range logits {
		out[i] = float32(float64(v) - lse)
	}
}

// TopLogprobs appends to dst the n highest entries of the log-softmax of
// logits, sorted descending, ties by lower id, and returns the extended
// slice. It does not allocate when n ≤ 64 and dst has room.
// O(vocab · log n) worst case, O(vocab) typically.
func TopLogprobs(dst []TokenLogprob, logits []float32, n int) []TokenLogprob {
	return appendTop(dst, logits, n, logSumExp(logits))
}

// Logprobs scores token id under the raw logits the way Sample does: its
// log-softmax, its rank, and the n highest logprobs appended to dst. It is
// what the engine needs for prompt logprobs. id must index logits.
// O(vocab · log n) worst case.
func Logprobs(logits []float32, id int32, n int, dst []TokenLogprob) Result {
	lse := logSumExp(logits)
	return Result{
		ID:      id,
		Logprob: float32(float64(logits[id]) - lse),
		Rank:    rank(logits, id),
		Top:     appendTop(dst, logits, n, lse),
	}
}

// appendTop appends the n highest logprobs of logits (whose log-sum-exp is
// lse) to dst, selecting them in a heap on the stack when n ≤ 64.
func appendTop(dst []TokenLogprob, logits []float32, n int, lse float64) []TokenLogprob {
	var buf [64]cand
	heap := buf[:0]
	if n > len(buf) {
		heap = make([]cand, 0, n)
	}
	_, dst = topInto(heap, dst, logits, n, lse)
	return dst
}

// topInto selects the n highest logits (n capped at the vocabulary) with
// heap as the selection buffer and appends their logprobs to dst; it
// returns both slices, which grow only when their capacity is short.
func topInto(heap []cand, dst []TokenLogprob, logits []float32, n int, lse float64) ([]cand, []TokenLogprob) {
	heap = selectTop(heap, logits, min(n, len(logits)), float32(math.Inf(-1)))
	for _, c := range heap {
		dst = append(dst, TokenLogprob{ID: c.id, Logprob: float32(float64(c.v) - lse)})
	}
	return heap, dst
}

// rank returns the number of entries of x that are ≥ x[id] (vLLM's rank).
func rank(x []float32, id int32) int {
	t, r := x[id], 0
	for _, v := range x {
		if v >= t {
			r++
		}
	}
	return r
}

// cand is a candidate token during selection; v is a logit or a weight,
// depending on the stage.
type cand struct {
	id int32
	v  float32
}

// before reports whether a ranks before b: higher value first, then lower id.
func before(a, b cand) bool { return a.v > b.v || (a.v == b.v && a.id < b.id) }

// compareCands orders candidates by rank (for slices.SortFunc).
func compareCands(a, b cand) int {
	switch {
	case before(a, b):
		return -1
	case before(b, a):
		return 1
	}
	return 0
}

// selectTop returns the n entries of vals that rank first (value
// descending, id ascending) among those ≥ floor (NaN never qualifies),
// sorted in that order, in h's storage (h is reset; it grows only if its
// capacity is below n). It keeps a heap of the n best seen so far, rooted at
// the worst of them: an entry that does not beat the root costs one
// comparison, so a scan is O(vocab) typically and O(vocab · log n) at worst,
// plus O(n log n) for the final heap sort.
func selectTop(h []cand, vals []float32, n int, floor float32) []cand {
	h = h[:0]
	if n <= 0 {
		return h
	}
	for i, v := range vals {
		if !(v >= floor) {
			continue
		}
		if len(h) < n {
			h = append(h, cand{int32(i), v})
			siftUp(h, len(h)-1)
		} else if v > h[0].v { // equal values arrive with higher ids: never better
			h[0] = cand{int32(i), v}
			siftDown(h, 0)
		}
	}
	// Heap sort: move the worst to the end, repeatedly.
	for end := len(h) - 1; end > 0; end-- {
		h[0], h[end] = h[end], h[0]
		siftDown(h[:end], 0)
	}
	return h
}

// siftUp restores the heap (every parent ranks after its children) after
// h[i] changed.
func siftUp(h []cand, i int) {
	for i > 0 {
		p := (i - 1) / 2
		if !before(h[p], h[i]) {
			return
		}
		h[p], h[i] = h[i], h[p]
		i = p
	}
}

// siftDown restores the heap after h[i] changed.
func siftDown(h []cand, i int) {
	for {
		worst, l := i, 2*i+1
		if l < len(h) && before(h[worst], h[l]) {
			worst = l
		}
		if r := l + 1; r < len(h) && before(h[worst], h[r]) {
			worst = r
		}
		if worst == i {
			return
		}
		h[i], h[worst] = h[worst], h[i]
		i = worst
	}
}
