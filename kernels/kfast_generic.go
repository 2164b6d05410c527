package kernels

// The fast arithmetic of the K-quants (the default; the exact arithmetic of
// kquant_generic.go reproduces llama.cpp's vec_dot bit for bit).
//
// Per (row, token) and 256-element super-block b, everything integer is
// summed exactly into one int32:
//
//	isum = Σ_g sc_g · Σ_{e∈g} q_e·y_e     signed quants q (Q6_K's −32 and
//	                                       Q3_K's −4 offsets applied)
//	msum = Σ_g m_g · bsum_g                Q2_K, Q4_K, Q5_K: the minimums
//
// (g runs over the super-block's groups: eight of 32 elements for Q4_K and
// Q5_K, sixteen of 16 for the others; bsum_g is the sum of the activation
// quants of group g), and the float work is two fused multiply-adds into
// one float32 accumulator, super-block by super-block:
//
//	acc = fma(float(isum), f16(d)·d_a, acc)
//	acc = fma(float(msum), −(f16(dmin)·d_a), acc)        (types with minimums)
//
// starting from acc = 0; the dot product is acc. Every product named here
// is one float32 multiplication (rounded once), every fma rounds once, and
// float(·) rounds to nearest even. The order is the same for every row,
// token, batch size, thread count and implementation, so a (row, token)'s
// result never depends on how the work is split; accelerated kernels
// reproduce these functions bit for bit.
//
// Bounds: |y| ≤ 127 (Q8_K), so |isum| ≤ 256·63·31·127 for Q5_K and
// 256·128·32·127 for Q6_K, both below 2³¹; the minimum sums are smaller.

// groupDots returns Σ_g sc[g] · Σ_{e∈g} q_e·y_e over one super-block, the
// groups being 256/len(sc) elements long.
func groupDots(q *[256]int8, y []int8, sc []int32) int32 {
	y = y[:256]
	gl := 256 / len(sc)
	var isum int32
	for g, s := range sc {
		var t int32
		for e := g * gl; e < (g+1)*gl; e++ {
			t += int32(q[e]) * int32(y[e])
		}
		isum += s * t
	}
	return isum
}

// fastAdd adds one super-block's isum (and msum, when dmin is not nil) to
// acc in the order stated above.
func fastAdd(acc float32, isum int32, d, da float32, msum int32, dmin []byte) float32 {
	acc = fma32(float32(isum), float32(d*da), acc)
	if dmin != nil {
		acc = fma32(float32(msum), -float32(f16Table[le16(dmin)]*da), acc)
	}
	return acc
}

// dotQ4KFastGeneric is one (row, token) of the fast arithmetic on a Q4_K
// row as stored (d, dmin, scales[12], qs[128] per super-block).
func dotQ4KFastGeneric(w []byte, a *actRow) float32 {
	return dotMin32Fast(w, a, 144, decodeQ4K)
}

// dotQ5KFastGeneric: as Q4_K, with the fifth bits (d, dmin, scales[12],
// qh[32], qs[128]).
func dotQ5KFastGeneric(w []byte, a *actRow) float32 {
	return dotMin32Fast(w, a, 176, decodeQ5K)
}

// dotMin32Fast is the fast arithmetic of the types with eight 32-element
// groups and a minimum per group (Q4_K, Q5_K): super-blocks of size bytes
// starting with d and dmin, decoded by decode.
func dotMin32Fast(w []byte, a *actRow, size int, decode func([]byte, *[256]int8, *[8]int32, *[8]int32)) float32 {
	var acc float32
	var q [256]int8
	var sc, mn [8]int32
	for b := range len(a.d) {
		blk := w[b*size : (b+1)*size]
		decode(blk, &q, &sc, &mn)
		isum := groupDots(&q, a.qs[b*256:], sc[:])
		acc = fastAdd(acc, isum, f16Table[le16(blk[0:])], a.d[b], minSum32(&mn, a.bsums[b*16:]), blk[2:])
	}
	return acc
}

// minSum32 is Σ_j m_j · (bsum of the 32 elements of sub-block j).
func minSum32(mn *[8]int32, bs []int16) int32 {
	var s int32
	for j, m := range mn {
		s += m * (int32(bs[2*j]) + int32(bs[2*j+1]))
	}
	return s
}

// dotQ6KFastGeneric: signed quants q−32 (ql[128], qh[64], scales[16], d).
func dotQ6KFastGeneric(w []byte, a *actRow) float32 {
	return dotSigned16Fast(w, a, 210, decodeQ6K)
}

// dotQ3KFastGeneric: signed quants (hmask[32], qs[64], scales[12], d).
func dotQ3KFastGeneric(w []byte, a *actRow) float32 {
	return dotSigned16Fast(w, a, 110, decodeQ3K)
}

// dotSigned16Fast is the fast arithmetic of the types with sixteen
// 16-element groups of signed quants and no minimum (Q6_K, Q3_K):
// super-blocks of size bytes ending with d, decoded by decode.
func dotSigned16Fast(w []byte, a *actRow, size int, decode func([]byte, *[256]int8, *[16]int32)) float32 {
	var acc float32
	var q [256]int8
	var sc [16]int32
	for b := range len(a.d) {
		blk := w[b*size : (b+1)*size]
		decode(blk, &q, &sc)
		isum := groupDots(&q, a.qs[b*256:], sc[:])
		acc = fastAdd(acc, isum, f16Table[le16(blk[size-2:])], a.d[b], 0, nil)
	}
	return acc
}

// dotQ2KFastGeneric: unsigned quants with a minimum per 16-element group
// (scales[16], qs[64], d, dmin).
func dotQ2KFastGeneric(w []byte, a *actRow) float32 {
	var acc float32
	var q [256]int8
	var sc, mn [16]int32
	for b := range len(a.d) {
		blk := w[b*84 : (b+1)*84]
		decodeQ2K(blk, &q, &sc, &mn)
		isum := groupDots(&q, a.qs[b*256:], sc[:])
		var msum int32
		for g, m := range mn {
			msum += m * int32(a.bsums[b*16+g])
		}
		acc = fastAdd(acc, isum, f16Table[le16(blk[80:])], a.d[b], msum, blk[82:])
	}
	return acc
}
