package gguf

import "math"

// Scale searches for the K-quant quantizers. Each fits one sub-block of 16
// or 32 values; the caller then quantizes the sub-block scales themselves
// and recomputes the codes from the stored scales.

// nearest rounds to the nearest integer, ties to even (ggml's nearest_int).
func nearest(v float32) int { return int(math.RoundToEven(float64(v))) }

// clampInt limits v to [lo, hi].
func clampInt(v, lo, hi int) int { return max(lo, min(hi, v)) }

// fitAsym fits x ≈ scale·L − m with integer L in [0, nmax], scale ≥ 0 and
// m ≥ 0 (the sub-block minimum is never above zero, as in ggml's K-quants,
// so that zero is exactly representable). It tries the plain range split
// and 21 perturbed inverse scales, each refined by least squares given its
// codes, and keeps the fit with the smallest squared error.
func fitAsym(x []float32, nmax int) (scale, m float32) {
	lo, hi := minMax(x)
	lo = min(lo, 0)
	if hi <= lo {
		return 0, -lo
	}
	bestS, bestMin := (hi-lo)/float32(nmax), lo
	bestErr := asymError(x, bestS, bestMin, nmax)
	for step := -10; step <= 10; step++ {
		iscale := (float32(nmax) + 0.1*float32(step)) / (hi - lo)
		s, mn, ok := leastSquaresAsym(x, lo, iscale, nmax)
		if !ok {
			continue
		}
		if e := asymError(x, s, mn, nmax); e < bestErr {
			bestS, bestMin, bestErr = s, mn, e
		}
	}
	return bestS, -bestMin
}

// leastSquaresAsym assigns codes L = round((x−lo)·iscale) clamped to
// [0, nmax] and returns the scale and min (≤ 0) minimizing Σ(s·L+min−x)².
func leastSquaresAsym(x []float32, lo, iscale float32, nmax int) (s, mn float32, ok bool) {
	var n, sl, sl2, sx, slx float64
	for _, v := range x {
		l := float64(clampInt(nearest((v-lo)*iscale), 0, nmax))
		n++
		sl += l
		sl2 += l * l
		sx += float64(v)
		slx += l * float64(v)
	}
	det := n*sl2 - sl*sl
	if det <= 0 {
		return 0, 0, false
	}
	fs := (n*slx - sl*sx) / det
	fm := (sl2*sx - sl*slx) / det
	if fm > 0 { // keep min ≤ 0: refit the scale alone
		fm, fs = 0, slx/sl2
	}
	if fs <= 0 {
		return 0, 0, false
	}
	return float32(fs), float32(fm), true
}

// asymError is Σ(x − (s·L+mn))² with the best codes L in [0, nmax] for s, mn.
func asymError(x []float32, s, mn float32, nmax int) float64 {
	var e float64
	for _, v := range x {
		l := clampInt(nearest((v-mn)/s), 0, nmax)
		diff := float64(v) - float64(s*float32(l)+mn)
		e += diff * diff
	}
	return e
}

// fitSym fits x ≈ scale·L with integer L in [−nmax, nmax−1]. As in ggml's
// make_qx_quants, the inverse scale maps the element of largest magnitude
// to −nmax (so scale has the opposite sign of that element); 19 perturbed
// inverse scales are tried and the least-squares scale of the best codes is
// returned. All-zero input gives 0.
func fitSym(x []float32, nmax int) float32 {
	m, amax := signedMax(x)
	if amax < 1e-15 {
		return 0
	}
	var best, bestScore float64 // best scale; Σ(xL)²/ΣL² (larger is better)
	for step := -9; step <= 9; step++ {
		iscale := -(float32(nmax) + 0.1*float32(step)) / m
		var slx, sl2 float64
		for _, v := range x {
			l := float64(clampInt(nearest(iscale*v), -nmax, nmax-1))
			slx += float64(v) * l
			sl2 += l * l
		}
		if sl2 > 0 && slx*slx/sl2 > bestScore {
			best, bestScore = slx/sl2, slx*slx/sl2
		}
	}
	return float32(best)
}
