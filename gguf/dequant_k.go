package gguf

import (
	"encoding/binary"
	"math"
)

// K-quants: super-blocks of 256 elements (ggml's QK_K) split into
// sub-blocks of 16 or 32 that share a quantized scale (and min).

// scaleMinK4 unpacks the 6-bit scale and min of sub-block j (0..7) from the
// 12-byte scales field of Q4_K and Q5_K (ggml's get_scale_min_k4):
//
//	j < 4:  sc = s[j] & 63,                        m = s[j+4] & 63
//	j >= 4: sc = s[j+4] & 15 | (s[j-4] >> 6) << 4, m = s[j+4] >> 4 | (s[j] >> 6) << 4
func scaleMinK4(j int, s []byte) (sc, m uint8) {
	if j < 4 {
		return s[j] & 63, s[j+4] & 63
	}
	return s[j+4]&0xf | (s[j-4]>>6)<<4, s[j+4]>>4 | (s[j]>>6)<<4
}

// scaleQ3K unpacks the 6-bit scale of sub-block j (0..15) of Q3_K, biased by
// 32: its low 4 bits are nibble j/8 of s[j%8], its high 2 bits are bits
// 2·(j/4)… of s[8+j%4].
func scaleQ3K(j int, s []byte) int {
	lo := s[j%8] >> (4 * (j / 8)) & 0xf
	hi := s[8+j%4] >> (2 * (j / 4)) & 3
	return int(lo|hi<<4) - 32
}

// Q2_K: scales[16] (lo nibble scale, hi nibble min) | qs[64] | d f16 | dmin f16.
// Element e: q = qs[32·(e/128) + e%32] >> 2·(e%128/32) & 3,
// y = d·sc·q - dmin·m with sc, m from scales[e/16].
func dequantQ2_K(b []byte, y []float32) {
	scales, qs := b[0:16], b[16:80]
	d, dmin := f16At(b, 80), f16At(b, 82)
	for s := range 16 { // sub-blocks of 16
		dl := d * float32(scales[s]&0xf)
		ml := dmin * float32(scales[s]>>4)
		for e := 16 * s; e < 16*s+16; e++ {
			q := qs[32*(e/128)+e%32] >> (2 * (e % 128 / 32)) & 3
			y[e] = float32(dl*float32(q)) - ml
		}
	}
}

// Q3_K: hmask[32] | qs[64] | scales[12] | d f16.
// Element e: 3-bit u = low 2 bits from qs (as Q2_K) | bit (4·(e/128) +
// e%128/32) of hmask[e%32] << 2; y = d·(scale-32)·(u-4).
func dequantQ3_K(b []byte, y []float32) {
	hmask, qs, scales := b[0:32], b[32:96], b[96:108]
	d := f16At(b, 108)
	for s := range 16 {
		dl := d * float32(scaleQ3K(s, scales))
		for e := 16 * s; e < 16*s+16; e++ {
			n, j, l := e/128, e%128/32, e%32
			low := int(qs[32*n+l] >> (2 * j) & 3)
			if hmask[l]>>(4*n+j)&1 == 0 {
				low -= 4
			}
			y[e] = dl * float32(low)
		}
	}
}

// Q4_K: d f16 | dmin f16 | scales[12] | qs[128].
// Element e: q = nibble (e%64/32) of qs[32·(e/64) + e%32];
// y = d·sc·q - dmin·m with sc, m = scaleMinK4(e/32).
func dequantQ4_K(b []byte, y []float32) {
	d, dmin := f16At(b, 0), f16At(b, 2)
	scales, qs := b[4:16], b[16:144]
	for s := range 8 { // sub-blocks of 32
		sc, m := scaleMinK4(s, scales)
		d1, m1 := d*float32(sc), dmin*float32(m)
		shift := 4 * (s % 2)
		for l := range 32 {
			q := qs[32*(s/2)+l] >> shift & 0xf
			y[32*s+l] = float32(d1*float32(q)) - m1
		}
	}
}

// Q5_K: d f16 | dmin f16 | scales[12] | qh[32] | qs[128].
// As Q4_K, plus 16 when bit e/32 of qh[e%32] is set.
func dequantQ5_K(b []byte, y []float32) {
	d, dmin := f16At(b, 0), f16At(b, 2)
	scales, qh, qs := b[4:16], b[16:48], b[48:176]
	for s := range 8 {
		sc, m := scaleMinK4(s, scales)
		d1, m1 := d*float32(sc), dmin*float32(m)
		shift := 4 * (s % 2)
		for l := range 32 {
			q := qs[32*(s/2)+l]>>shift&0xf | (qh[l]>>s&1)<<4
			y[32*s+l] = float32(d1*float32(q)) - m1
		}
	}
}

// Q6_K: ql[128] | qh[64] | scales[16] int8 | d f16.
// Element e (n = e/128, g = e%128/32, l = e%32): low 4 bits are nibble g/2 of
// ql[64n + 32·(g%2) + l], high 2 bits are bits 2g of qh[32n + l];
// y = d·scales[e/16]·(q-32).
func dequantQ6_K(b []byte, y []float32) {
	ql, qh, scales := b[0:128], b[128:192], b[192:208]
	d := f16At(b, 208)
	for s := range 16 {
		ds := d * float32(int8(scales[s]))
		for e := 16 * s; e < 16*s+16; e++ {
			n, g, l := e/128, e%128/32, e%32
			lo := ql[64*n+32*(g%2)+l] >> (4 * (g / 2)) & 0xf
			hi := qh[32*n+l] >> (2 * g) & 3
			y[e] = ds * float32(int(lo|hi<<4)-32)
		}
	}
}

// Q8_K: d f32 | qs[256] int8 | bsums[16] int16 (Σ of each 16 qs). y = d·q.
func dequantQ8_K(b []byte, y []float32) {
	d := math.Float32frombits(binary.LittleEndian.Uint32(b))
	for j, q := range b[4:260] {
		y[j] = d * float32(int8(q))
	}
}
