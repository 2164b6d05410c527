package sample

import "math"

// The softmax weights are computed in float32 with a polynomial exp
// (Cephes expf: reduction by ln 2 split in two parts, degree-5 polynomial;
// relative error below 1e-7 on [−87, 0]). It is about twice as fast as
// float32(math.Exp(float64(y))) in a loop, mostly because the float64 ↔
// float32 conversions chain the iterations through one register.
const (
	expLog2e = 1.44269504088896341
	expLn2Hi = 0.693359375
	expLn2Lo = -2.12194440e-4
	// expMin is the smallest exponent computed: e^−87 ≈ 1.6e−38 is near the
	// float32 normal minimum; smaller ones are clamped to it (a probability
	// that small relative to the top token never matters).
	expMin = -87
)

// expWeights sets w[i] = e^((x[i] − m)·s) for every i, or 0 where
// x[i] < floor; w may be x itself. It requires (x[i] − m)·s ≤ 0, i.e. m is
// the max of x and s > 0, and a finite floor (so −Inf entries get 0). NaN
// entries get either 0 or e^−87.
func expWeights(w, x []float32, m, s, floor float32) {
	w = w[:len(x)]
	for i, v := range x {
		y := (v - m) * s
		if !(y >= expMin) {
			y = expMin
		}
		n := int32(y*expLog2e - 0.5) // round(y·log2 e) for y ≤ 0
		fn := float32(n)
		r := y - fn*expLn2Hi - fn*expLn2Lo // y − n·ln 2, in [−ln2/2, ln2/2]
		p := ((((1.9875691500e-4*r+1.3981999507e-3)*r+8.3334519073e-3)*r+
			4.1665795894e-2)*r+1.6666665459e-1)*r + 5.0000001201e-1
		e := (p*(r*r) + r + 1) * math.Float32frombits(uint32(n+127)<<23) // e^r · 2^n
		// Zero e when v < floor, without a branch (min-p makes it
		// unpredictable): keep = all ones iff v − floor has no sign bit.
		keep := ^uint32(int32(math.Float32bits(v-floor)) >> 31)
		w[i] = math.Float32frombits(math.Float32bits(e) & keep)
	}
}

// sumBlock is how many float32 terms sum32 adds before moving the partial
// sums to float64.
const sumBlock = 64

// sum32 returns Σ w in float64: four float32 lanes per block of sumBlock,
// which keeps the relative error near 1e-7 for non-negative terms.
func sum32(w []float32) float64 {
	total := 0.0
	for len(w) > 0 {
		b := w[:min(len(w), sumBlock)]
		w = w[len(b):]
		var s0, s1, s2, s3 float32
		i := 0
		for ; i+4 <= len(b); i += 4 {
			s0 += b[i]
			s1 += b[i+1]
			s2 += b[i+2]
			s3 += b[i+3]
		}
		for ; i < len(b); i++ {
			s0 += b[i]
		}
		total += float64((s0 + s1) + (s2 + s3))
	}
	return total
}

// logSumExp returns log Σ exp(x[i]), computed as max + log Σ exp(x[i] − max).
// NaN entries are ignored for the max; it is −Inf when every entry is −Inf
// and +Inf when one is +Inf.
func logSumExp(x []float32) float64 {
	m := float32(math.Inf(-1))
	for _, v := range x {
		if v > m {
			m = v
		}
	}
	if math.IsInf(float64(m), 0) {
		return float64(m)
	}
	var buf [4 * sumBlock]float32 // exps of one chunk; stays on the stack
	s := 0.0
	for len(x) > 0 {
		c := x[:min(len(x), len(buf))]
		x = x[len(c):]
		expWeights(buf[:], c, m, 1, -math.MaxFloat32)
		s += sum32(buf[:len(c)])
	}
	return float64(m) + math.Log(s)
}
