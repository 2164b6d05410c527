package gguf

import (
	"encoding/binary"
	"math"
)

// K-quant block encoders. Each fits every sub-block (quant_fit.go),
// quantizes the sub-block scales against the block's largest one, stores
// the block scales as halves, and only then computes the codes from the
// stored (rounded) scales, so that dequantization sees exactly what the
// codes were chosen for.

// asymScales fits each of the len(scales) sub-blocks of x and quantizes
// their scales and mins to [0, levels] against the largest of each. It
// returns the stored block scale d and dmin.
func asymScales(x []float32, nmax int, levels float32, ls, lm []uint8, b []byte) (d, dmin float32, ok bool) {
	n := len(x) / len(ls)
	var scaleBuf, minBuf [16]float32 // per sub-block (at most 16)
	scales, mins := scaleBuf[:len(ls)], minBuf[:len(ls)]
	var maxScale, maxMin float32
	for j := range ls {
		scales[j], mins[j] = fitAsym(x[j*n:(j+1)*n], nmax)
		maxScale, maxMin = max(maxScale, scales[j]), max(maxMin, mins[j])
	}
	invScale, invMin := inverse(maxScale)*levels, inverse(maxMin)*levels
	for j := range ls {
		ls[j] = uint8(min(int(levels), nearest(invScale*scales[j])))
		lm[j] = uint8(min(int(levels), nearest(invMin*mins[j])))
	}
	ok = putF16(b, maxScale/levels) && putF16(b[2:], maxMin/levels)
	return f16At(b, 0), f16At(b, 2), ok
}

// asymCodes computes the codes of sub-block x from its stored scale and min.
func asymCodes(x []float32, dsub, msub float32, nmax int, q []uint8) {
	for i, v := range x {
		if dsub == 0 {
			q[i] = 0
			continue
		}
		q[i] = uint8(clampInt(nearest((v+msub)/dsub), 0, nmax))
	}
}

// Q2_K: scales[16] | qs[64] | d | dmin; see dequantQ2_K.
func quantQ2_K(x []float32, b []byte) bool {
	var ls, lm [16]uint8
	d, dmin, ok := asymScales(x, 3, 15, ls[:], lm[:], b[80:84])
	var q [256]uint8
	for j := range 16 {
		b[j] = ls[j] | lm[j]<<4
		asymCodes(x[16*j:16*j+16], d*float32(ls[j]), dmin*float32(lm[j]), 3, q[16*j:16*j+16])
	}
	for e, v := range q {
		b[16+32*(e/128)+e%32] |= v << (2 * (e % 128 / 32))
	}
	return ok
}

// packScaleMinK4 is the inverse of scaleMinK4.
func packScaleMinK4(ls, lm *[8]uint8, s []byte) {
	for j := range 8 {
		if j < 4 {
			s[j] = ls[j]
			s[j+4] = lm[j]
			continue
		}
		s[j+4] = ls[j]&0xf | lm[j]&0xf<<4
		s[j-4] |= ls[j] >> 4 << 6
		s[j] |= lm[j] >> 4 << 6
	}
}

// quantK32 is the shared part of Q4_K and Q5_K: 8 sub-blocks of 32 with
// 6-bit scales and mins; it writes d, dmin and scales into b[0:16].
func quantK32(x []float32, b []byte, nmax int, q *[256]uint8) bool {
	var ls, lm [8]uint8
	d, dmin, ok := asymScales(x, nmax, 63, ls[:], lm[:], b[0:4])
	packScaleMinK4(&ls, &lm, b[4:16])
	for j := range 8 {
		asymCodes(x[32*j:32*j+32], d*float32(ls[j]), dmin*float32(lm[j]), nmax, q[32*j:32*j+32])
	}
	return ok
}

// Q4_K: d | dmin | scales[12] | qs[128]; see dequantQ4_K.
func quantQ4_K(x []float32, b []byte) bool {
	var q [256]uint8
	ok := quantK32(x, b, 15, &q)
	for e, v := range q {
		b[16+32*(e/64)+e%32] |= v << (4 * (e % 64 / 32))
	}
	return ok
}

// Q5_K: d | dmin | scales[12] | qh[32] | qs[128]; see dequantQ5_K.
func quantQ5_K(x []float32, b []byte) bool {
	var q [256]uint8
	ok := quantK32(x, b, 31, &q)
	for e, v := range q {
		b[48+32*(e/64)+e%32] |= v & 0xf << (4 * (e % 64 / 32))
		b[16+e%32] |= v >> 4 << (e / 32)
	}
	return ok
}

// symScales fits the 16 sub-blocks of 16 and quantizes their signed scales
// to [-bias, bias-1] against the largest (which maps to -bias). It stores
// the block scale d as a half at dst and returns it; ls holds the scales.
func symScales(x []float32, nmax, bias int, ls *[16]int, dst []byte) (float32, bool) {
	var scales [16]float32
	var maxScale, maxAbs float32
	for j := range 16 {
		scales[j] = fitSym(x[16*j:16*j+16], nmax)
		if a := float32(math.Abs(float64(scales[j]))); a > maxAbs {
			maxAbs, maxScale = a, scales[j]
		}
	}
	if maxAbs < 1e-15 {
		*ls = [16]int{}
		return 0, putF16(dst, 0)
	}
	iscale := -float32(bias) / maxScale
	for j := range 16 {
		ls[j] = clampInt(nearest(iscale*scales[j]), -bias, bias-1)
	}
	ok := putF16(dst, 1/iscale)
	return f16At(dst, 0), ok
}

// symCodes computes codes in [0, 2·nmax) (biased by nmax) of sub-block x.
func symCodes(x []float32, dsub float32, nmax int, q []uint8) {
	for i, v := range x {
		if dsub == 0 {
			q[i] = uint8(nmax)
			continue
		}
		q[i] = uint8(clampInt(nearest(v/dsub), -nmax, nmax-1) + nmax)
	}
}

// Q3_K: hmask[32] | qs[64] | scales[12] | d; see dequantQ3_K.
func quantQ3_K(x []float32, b []byte) bool {
	var ls [16]int
	d, ok := symScales(x, 4, 32, &ls, b[108:110])
	var q [256]uint8
	for j := range 16 {
		u := uint8(ls[j] + 32) // 6-bit biased scale
		b[96+j%8] |= u & 0xf << (4 * (j / 8))
		b[96+8+j%4] |= u >> 4 << (2 * (j / 4))
		symCodes(x[16*j:16*j+16], d*float32(ls[j]), 4, q[16*j:16*j+16])
	}
	for e, u := range q {
		n, j, l := e/128, e%128/32, e%32
		b[32+32*n+l] |= u & 3 << (2 * j)
		b[l] |= u >> 2 << (4*n + j)
	}
	return ok
}

// Q6_K: ql[128] | qh[64] | scales[16] int8 | d; see dequantQ6_K.
func quantQ6_K(x []float32, b []byte) bool {
	var ls [16]int
	d, ok := symScales(x, 32, 128, &ls, b[208:210])
	var q [256]uint8
	for j := range 16 {
		b[192+j] = byte(int8(ls[j]))
		symCodes(x[16*j:16*j+16], d*float32(ls[j]), 32, q[16*j:16*j+16])
	}
	for e, v := range q {
		n, g, l := e/128, e%128/32, e%32
		b[64*n+32*(g%2)+l] |= v & 0xf << (4 * (g / 2))
		b[128+32*n+l] |= v >> 4 << (2 * g)
	}
	return ok
}

// Q8_K is quantize_row_q8_K_ref: d = max/-127 (max the element of largest
// magnitude), q = min(127, nearest(x/d)), bsums[k] = Σ q[16k:16k+16].
func quantQ8_K(x []float32, b []byte) bool {
	m, amax := signedMax(x)
	if amax == 0 {
		return true // d = 0, all codes and sums 0
	}
	iscale := -127 / m
	for k := range 16 {
		sum := 0
		for j := 16 * k; j < 16*k+16; j++ {
			q := min(127, nearest(iscale*x[j]))
			b[4+j] = byte(int8(q))
			sum += q
		}
		binary.LittleEndian.PutUint16(b[260+2*k:], uint16(int16(sum)))
	}
	binary.LittleEndian.PutUint32(b, math.Float32bits(1/iscale))
	return true
}
