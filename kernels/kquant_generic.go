package kernels

import "encoding/binary"

// K-quant super-blocks hold 256 elements. The decoders below unpack one
// super-block into signed quants q (256) and per-group integer scales.
//
// bit-exact contract (ggml's AVX2 vec_dot_q*_K_q8_K, which the AVX-512
// build runs): Σ scale·q·y is accumulated exactly in eight int32 lanes,
// lane (e mod 32)/4 taking element e (ggml's maddubs/madd pairing); each
// super-block then adds fma(d_w·d_a, lane, acc) to eight float lanes,
// reduced by hsum8. The minimum terms follow each type's kernel: Q2_K
// adds fma(−dmin_w·d_a, Σ two groups' min·bsum, acc) to the same lanes
// first; Q4_K keeps four float lanes of two sub-blocks each, reduced as
// (m0+m2)+(m1+m3) and added after hsum8; Q5_K keeps one float sum (fma
// per super-block) added after hsum8. Q6_K's −32 offset is applied per
// lane as 32·Σ scale·bsum over the lane's 32-element block, as ggml does.

// kScales6 unpacks the 12-byte 6-bit scale/min array of Q4_K and Q5_K.
func kScales6(s []byte, sc, mn *[8]int32) {
	for j := range 4 {
		sc[j] = int32(s[j] & 63)
		mn[j] = int32(s[j+4] & 63)
		sc[j+4] = int32(s[j+8]&0xF | (s[j]>>6)<<4)
		mn[j+4] = int32(s[j+8]>>4 | (s[j+4]>>6)<<4)
	}
}

// decodeQ4K: d f16, dmin f16, scales[12], qs[128]. Elements 64c+l and
// 64c+32+l are the low and high nibbles of qs[32c+l], in sub-blocks 2c and
// 2c+1.
func decodeQ4K(blk []byte, q *[256]int8, sc, mn *[8]int32) {
	kScales6(blk[4:16], sc, mn)
	qs := blk[16:144]
	for c := range 4 {
		for l := range 32 {
			b := qs[32*c+l]
			q[64*c+l] = int8(b & 15)
			q[64*c+32+l] = int8(b >> 4)
		}
	}
}

// decodeQ5K: d, dmin f16, scales[12], qh[32], qs[128]; as Q4_K plus 16
// when bit 2c (low nibble) or 2c+1 (high nibble) of qh[l] is set.
func decodeQ5K(blk []byte, q *[256]int8, sc, mn *[8]int32) {
	kScales6(blk[4:16], sc, mn)
	qh := blk[16:48]
	qs := blk[48:176]
	for c := range 4 {
		for l := range 32 {
			b := qs[32*c+l]
			q[64*c+l] = int8(b&15 | (qh[l]>>(2*c)&1)<<4)
			q[64*c+32+l] = int8(b>>4 | (qh[l]>>(2*c+1)&1)<<4)
		}
	}
}

// decodeQ6K: ql[128], qh[64], scales[16] int8, d f16. In half h, element
// 128h+32k+l takes a nibble of ql[64h+l (+32 for k odd)] (low for k<2) and
// bits 2k..2k+1 of qh[32h+l], minus 32. Group g (16 elements) has scale
// scales[g].
func decodeQ6K(blk []byte, q *[256]int8, sc *[16]int32) {
	ql, qh := blk[0:128], blk[128:192]
	for h := range 2 {
		for l := range 32 {
			a, b, hb := ql[64*h+l], ql[64*h+l+32], qh[32*h+l]
			q[128*h+l] = int8(a&15|(hb&3)<<4) - 32
			q[128*h+l+32] = int8(b&15|(hb>>2&3)<<4) - 32
			q[128*h+l+64] = int8(a>>4|(hb>>4&3)<<4) - 32
			q[128*h+l+96] = int8(b>>4|(hb>>6&3)<<4) - 32
		}
	}
	for g := range 16 {
		sc[g] = int32(int8(blk[192+g]))
	}
}

// decodeQ2K: scales[16] (low nibble scale, high nibble min), qs[64],
// d f16, dmin f16. Element 128k+32j+l = (qs[32k+l] >> 2j) & 3, in group
// 8k+2j+l/16.
func decodeQ2K(blk []byte, q *[256]int8, sc, mn *[16]int32) {
	for g := range 16 {
		sc[g] = int32(blk[g] & 15)
		mn[g] = int32(blk[g] >> 4)
	}
	qs := blk[16:80]
	for k := range 2 {
		for j := range 4 {
			for l := range 32 {
				q[128*k+32*j+l] = int8(qs[32*k+l] >> (2 * j) & 3)
			}
		}
	}
}

// decodeQ3K: hmask[32], qs[64], scales[12] (16 packed 6-bit values, minus
// 32), d f16. Element 128h+32j+l = ((qs[32h+l] >> 2j) & 3) - 4 unless bit
// 4h+j of hmask[l] is set; group g = element/16.
func decodeQ3K(blk []byte, q *[256]int8, sc *[16]int32) {
	hm, qs, s := blk[0:32], blk[32:96], blk[96:108]
	const m1, m2 = 0x03030303, 0x0f0f0f0f
	a0 := binary.LittleEndian.Uint32(s[0:])
	a1 := binary.LittleEndian.Uint32(s[4:])
	tmp := binary.LittleEndian.Uint32(s[8:])
	aux := [4]uint32{
		a0&m2 | (tmp&m1)<<4,
		a1&m2 | (tmp>>2&m1)<<4,
		a0>>4&m2 | (tmp>>4&m1)<<4,
		a1>>4&m2 | (tmp>>6&m1)<<4,
	}
	for g := range 16 {
		sc[g] = int32(int8(aux[g/4]>>(8*(g%4)))) - 32
	}
	for h := range 2 {
		for j := range 4 {
			m := byte(1) << (4*h + j)
			for l := range 32 {
				v := int8(qs[32*h+l] >> (2 * j) & 3)
				if hm[l]&m == 0 {
					v -= 4
				}
				q[128*h+32*j+l] = v
			}
		}
	}
}

// laneDotK accumulates Σ scale(g)·q·y over one super-block into eight
// integer lanes, lane (e mod 32)/4 taking element e; groups are
// 256/len(sc) elements long.
func laneDotK(q *[256]int8, y []int8, sc []int32) (lanes [8]int32) {
	y = y[:256]
	gl := 256 / len(sc)
	for e := 0; e < 256; e += 4 {
		s := sc[e/gl]
		lanes[e%32/4] += s * (int32(q[e])*int32(y[e]) + int32(q[e+1])*int32(y[e+1]) +
			int32(q[e+2])*int32(y[e+2]) + int32(q[e+3])*int32(y[e+3]))
	}
	return lanes
}

// addLanes adds fma(d, lanes, acc) lane-wise.
func addLanes(acc *[8]float32, d float32, lanes *[8]int32) {
	for l, v := range lanes {
		if r, ok := fmaTry(d, float32(v), acc[l]); ok {
			acc[l] = r
		} else {
			acc[l] = fma32Slow(d, float32(v), acc[l])
		}
	}
}

// dotQ4KGeneric: the minimum terms go to four float lanes, lane m taking
// sub-blocks 2m and 2m+1.
func dotQ4KGeneric(w []byte, a *actRow) float32 {
	var acc [8]float32
	var accm [4]float32
	var q [256]int8
	var sc, mn [8]int32
	for b := range len(a.d) {
		blk := w[b*144 : (b+1)*144]
		decodeQ4K(blk, &q, &sc, &mn)
		lanes := laneDotK(&q, a.qs[b*256:], sc[:])
		addLanes(&acc, f16Table[le16(blk[0:])]*a.d[b], &lanes)
		dmin := -(a.d[b] * f16Table[le16(blk[2:])])
		bs := a.bsums[b*16 : (b+1)*16]
		for m := range accm {
			// q8s[k] = bsums[2k]+bsums[2k+1], the sum of sub-block k
			p := mn[2*m]*(int32(bs[4*m])+int32(bs[4*m+1])) + mn[2*m+1]*(int32(bs[4*m+2])+int32(bs[4*m+3]))
			accm[m] = fma32(dmin, float32(p), accm[m])
		}
	}
	return hsum8(&acc) + ((accm[0] + accm[2]) + (accm[1] + accm[3]))
}

// dotQ5KGeneric: the minimum terms go to one float sum.
func dotQ5KGeneric(w []byte, a *actRow) float32 {
	var acc [8]float32
	var summ float32
	var q [256]int8
	var sc, mn [8]int32
	for b := range len(a.d) {
		blk := w[b*176 : (b+1)*176]
		decodeQ5K(blk, &q, &sc, &mn)
		lanes := laneDotK(&q, a.qs[b*256:], sc[:])
		addLanes(&acc, f16Table[le16(blk[0:])]*a.d[b], &lanes)
		var isum int32
		for j, s := range a.bsums[b*16 : (b+1)*16] {
			isum += int32(s) * mn[j/2]
		}
		summ = fma32(-(a.d[b] * f16Table[le16(blk[2:])]), float32(isum), summ)
	}
	return hsum8(&acc) + summ
}

// dotQ6KGeneric: ggml multiplies the unsigned 6-bit quants and subtracts
// 32·Σ scale·bsum of 32-element block m from lane m.
func dotQ6KGeneric(w []byte, a *actRow) float32 {
	var acc [8]float32
	var q [256]int8
	var sc [16]int32
	for b := range len(a.d) {
		blk := w[b*210 : (b+1)*210]
		decodeQ6K(blk, &q, &sc)
		for i := range q {
			q[i] += 32 // unsigned quants, 0..63
		}
		lanes := laneDotK(&q, a.qs[b*256:], sc[:])
		bs := a.bsums[b*16 : (b+1)*16]
		for m := range lanes {
			lanes[m] -= 32 * (int32(bs[2*m])*sc[2*m] + int32(bs[2*m+1])*sc[2*m+1])
		}
		addLanes(&acc, f16Table[le16(blk[208:])]*a.d[b], &lanes)
	}
	return hsum8(&acc)
}

func dotQ3KGeneric(w []byte, a *actRow) float32 {
	var acc [8]float32
	var q [256]int8
	var sc [16]int32
	for b := range len(a.d) {
		blk := w[b*110 : (b+1)*110]
		decodeQ3K(blk, &q, &sc)
		lanes := laneDotK(&q, a.qs[b*256:], sc[:])
		addLanes(&acc, f16Table[le16(blk[108:])]*a.d[b], &lanes)
	}
	return hsum8(&acc)
}

// dotQ2KGeneric: lane m first takes fma(dmin, min·bsum of groups 2m and
// 2m+1), then the super-block's quants.
func dotQ2KGeneric(w []byte, a *actRow) float32 {
	var acc [8]float32
	var q [256]int8
	var sc, mn [16]int32
	for b := range len(a.d) {
		blk := w[b*84 : (b+1)*84]
		decodeQ2K(blk, &q, &sc, &mn)
		bs := a.bsums[b*16 : (b+1)*16]
		var mins [8]int32
		for m := range mins {
			mins[m] = mn[2*m]*int32(bs[2*m]) + mn[2*m+1]*int32(bs[2*m+1])
		}
		addLanes(&acc, -(a.d[b] * f16Table[le16(blk[82:])]), &mins)
		lanes := laneDotK(&q, a.qs[b*256:], sc[:])
		addLanes(&acc, f16Table[le16(blk[80:])]*a.d[b], &lanes)
	}
	return hsum8(&acc)
}
