package sample

import (
	"math"
	"slices"
)

// filter holds the temperature and the truncation parameters of a sampler,
// normalized: every field has a single "off" value.
type filter struct {
	temp   float64 // temperature, > 0
	invT   float64 // 1 / temp
	lnMinP float64 // log(min_p); −Inf when off
	topK   int     // ≥ 2, or 0 when off (top-k 1 is greedy and never gets here)
	topP   float64 // in (0, 1), or 1 when off
}

// support is what is left of the vocabulary after filtering: each kept
// token with its weight exp((l − max) / T), proportional to its probability.
// Exactly one of dense and cands is in use.
type support struct {
	dense []float32 // (vocab) weight of every token, 0 for a dropped one
	z     float64   // Σ dense as sum32 adds it: drawDense replays those partial sums
	cands []cand    // kept tokens, v = weight, in the order draws walk them
}

// apply filters the processed logits proc (vocab; they are overwritten)
// with min-p, top-k and top-p, in vLLM's order, each on the probabilities
// left by the one before.
//
// Cost, for V tokens: O(V) to find the max, then
//   - top-k: O(V) typically (O(V log k) worst) to select, O(k log k) to
//     sort, k exponentials; top-p then cuts the sorted k;
//   - no top-k: V exponentials; top-p adds two O(V) passes that bucket the
//     weights by binary exponent and sorts only the bucket where the nucleus
//     ends (O(b log b) for b tokens in it);
//   - neither: nothing more (the draw walks the dense weights).
func (f filter) apply(sc *Scratch, proc []float32) support {
	m := float32(math.Inf(-1))
	for _, v := range proc {
		if v > m {
			m = v
		}
	}
	if math.IsInf(float64(m), 0) {
		return support{} // nothing can be drawn (or a +Inf logit): caller falls back
	}
	mf := float64(m)
	// min-p: p_i ≥ min_p · p_max  ⇔  (l_i − m)/T ≥ log(min_p). The floor also
	// drops −Inf logits.
	floor := float32(-math.MaxFloat32)
	if fl := mf + f.temp*f.lnMinP; fl > -math.MaxFloat32 {
		floor = float32(fl)
	}
	if f.topK > 0 && f.topK < len(proc) {
		c := selectTop(sc.cands, proc, f.topK, floor)
		sc.cands = c
		for j := range c {
			c[j].v = float32(math.Exp((float64(c[j].v) - mf) * f.invT))
		}
		return support{cands: f.cut(c)}
	}
	expWeights(proc, proc, m, float32(f.invT), floor)
	z := sum32(proc)
	if f.topP < 1 {
		return support{cands: f.nucleus(sc, proc, z)}
	}
	return support{dense: proc, z: z}
}

// cut keeps the top-p nucleus of c, sorted by weight descending: a token is
// kept while the weight of the tokens before it is below top_p of the total.
func (f filter) cut(c []cand) []cand {
	if f.topP >= 1 {
		return c
	}
	z := 0.0
	for _, x := range c {
		z += float64(x.v)
	}
	target, acc, r := f.topP*z, 0.0, 0
	for r < len(c) && acc < target {
		acc += float64(c[r].v)
		r++
	}
	return c[:r]
}

// numBuckets is the number of weight buckets of nucleus: one per binary
// exponent of a float32 weight in (0, 1].
const numBuckets = 128

// weightBucket is 127 − the biased exponent of w in (0, 1]: bucket 0 holds
// 1, bucket b holds [2^−b, 2^(1−b)), and subnormals fall in bucket 127. A
// token in a lower bucket has a strictly larger weight than any token in a
// higher one.
func weightBucket(w float32) int {
	return max(0, 127-int(math.Float32bits(w)>>23&0xff))
}

// nucleus returns the top-p nucleus of the dense weights w (vocab, total z),
// without sorting the whole vocabulary. Pass 1 sums the weights per bucket;
// the nucleus ends in the first bucket b* where the running mass reaches
// top_p · z. Pass 2 gathers the tokens of the buckets before b* (all kept,
// in id order) and those of b* (sorted, then cut like a sorted list).
func (f filter) nucleus(sc *Scratch, w []float32, z float64) []cand {
	var mass [numBuckets]float64
	var count [numBuckets]int
	for _, x := range w {
		if x > 0 {
			b := weightBucket(x)
			mass[b] += float64(x)
			count[b]++
		}
	}
	target, acc, last, nonEmpty, nfront := f.topP*z, 0.0, -1, 0, 0
	for b := range numBuckets {
		if count[b] == 0 {
			continue
		}
		if acc+mass[b] >= target {
			last = b
			break
		}
		acc += mass[b]
		nfront += count[b]
		nonEmpty = b
	}
	if last < 0 { // z summed in another order fell short of p·z: the last bucket ends it
		last = nonEmpty
		acc -= mass[last]
		nfront -= count[last]
	}
	n := nfront + count[last]
	if cap(sc.cands) < n {
		sc.cands = make([]cand, n)
	}
	c := sc.cands[:n]
	front, back := 0, nfront
	for i, x := range w {
		if x <= 0 {
			continue
		}
		switch b := weightBucket(x); {
		case b < last:
			c[front] = cand{int32(i), x}
			front++
		case b == last:
			c[back] = cand{int32(i), x}
			back++
		}
	}
	edge := c[nfront:]
	slices.SortFunc(edge, compareCands)
	r := 0
	for r < len(edge) && acc < target {
		acc += float64(edge[r].v)
		r++
	}
	return c[:nfront+r]
}

// draw picks a token with probability proportional to its weight, by
// inverse CDF at u ∈ [0, 1): the first token whose running weight exceeds
// u · Σ weights. It returns false when every weight is 0. O(kept tokens).
func (s support) draw(u float64) (int32, bool) {
	if s.dense != nil {
		return drawDense(s.dense, s.z, u)
	}
	z := 0.0
	for _, c := range s.cands {
		z += float64(c.v)
	}
	if !(z > 0) {
		return 0, false
	}
	target, acc, last := u*z, 0.0, int32(-1)
	for _, c := range s.cands {
		if c.v > 0 {
			acc += float64(c.v)
			last = c.id
			if acc > target {
				return c.id, true
			}
		}
	}
	return last, true // u·z rounded up to z: the last kept token
}

// drawDense is draw over dense weights w whose total, as sum32 computes
// it, is z. It skips whole blocks by their sum32 sums (the same partial
// sums as z), then walks the block where the draw lands.
func drawDense(w []float32, z, u float64) (int32, bool) {
	if !(z > 0) {
		return 0, false
	}
	target, acc, lastBlock := u*z, 0.0, 0
	for base := 0; base < len(w); base += sumBlock {
		b := w[base:min(len(w), base+sumBlock)]
		bs := sum32(b)
		if bs == 0 {
			continue
		}
		lastBlock = base
		if acc+bs <= target {
			acc += bs
			continue
		}
		for i, x := range b {
			acc += float64(x)
			if x > 0 && acc > target {
				return int32(base + i), true
			}
		}
		return lastPositive(b, base), true // the block's float32 sum exceeded its float64 walk
	}
	// u·z rounded up to z: the last kept token.
	return lastPositive(w[lastBlock:min(len(w), lastBlock+sumBlock)], lastBlock), true
}

// lastPositive returns base + the index of the last positive weight of b
// (base when there is none).
func lastPositive(b []float32, base int) int32 {
	for i := len(b) - 1; i >= 0; i-- {
		if b[i] > 0 {
			return int32(base + i)
		}
	}
	return int32(base)
}

// argmax returns the index of the largest entry, the lowest on ties (0 when
// every entry is NaN).
func argmax(x []float32) int32 {
	best, m := 0, float32(math.Inf(-1))
	for i, v := range x {
		if v > m {
			best, m = i, v
		}
	}
	return int32(best)
}
