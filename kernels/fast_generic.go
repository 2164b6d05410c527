package kernels

import "encoding/binary"

// Fast records and generic reference dots of Q4_1, Q5_0, Q5_1 and Q8_0
// (Q4_0's is repack.go's). Every interleaved layout holds groups of 8 rows
// (repackRows), per group-block: each f16 header field of the 8 rows
// (d, then m for the types with a minimum), for the 5-bit types the 8
// rows' high bits (qhLanes), then the quants in 32-byte chunks, chunk c
// holding bytes 4c..4c+3 of each row's quants.
var (
	fastQ4_1 = fastTraits{act: actQ8_1, block: 32, rows: repackRows, groupBlock: repackRows * 20,
		interleave: interleaveQ4(4), dot: dotQ4_1FGeneric, rec: recordsMin}
	fastQ5_0 = fastTraits{act: actQ8_0, block: 32, rows: repackRows, groupBlock: repackRows * 22,
		interleave: interleaveQ5(2), dot: dotQ5_0FGeneric, rec: recordsBias16}
	fastQ5_1 = fastTraits{act: actQ8_1, block: 32, rows: repackRows, groupBlock: repackRows * 24,
		interleave: interleaveQ5(4), dot: dotQ5_1FGeneric, rec: recordsMin}
	fastQ8_0 = fastTraits{act: actQ8_0, block: 32, rows: repackRows, groupBlock: repackRows * 34,
		interleave: interleaveQ8_0, dot: dotQ8_0FGeneric, rec: recordsBias128}
)

// interleaveQ5 returns the group-block writer of a 5-bit type whose
// blocks start with hdr bytes of f16 fields, then qh, then 16 bytes of
// nibbles: the fields, 8 qhLanes words, then the nibbles as interleaveQ4.
func interleaveQ5(hdr int) func(dst []byte, src [][]byte) {
	return func(dst []byte, src [][]byte) {
		for i, blk := range src {
			for f := 0; f < hdr; f += 2 {
				copy(dst[8*f+2*i:][:2], blk[f:f+2])
			}
			binary.LittleEndian.PutUint32(dst[8*hdr+4*i:], qhLanes(binary.LittleEndian.Uint32(blk[hdr:])))
			for c := range 4 {
				copy(dst[8*hdr+32+32*c+4*i:][:4], blk[hdr+4+4*c:][:4])
			}
		}
	}
}

// qhLanes rearranges a 5-bit block's high bits for the kernels: bit i of
// byte k is the high bit of the element in byte k of nibble chunk c = i mod
// 4, low nibbles for i < 4 (element 4c+k), high ones for i ≥ 4 (element
// 16+4c+k). So (word << (4−i)) & 0x10101010 (or >> (i−4)) puts the high
// bits of chunk c's elements at bit 4 of their bytes.
func qhLanes(qh uint32) uint32 {
	var out uint32
	for i := range 8 {
		c, h := i%4, i/4
		for k := range 4 {
			out |= (qh >> (16*h + 4*c + k) & 1) << (8*k + i)
		}
	}
	return out
}

// interleaveQ8_0 writes a Q8_0 group-block: the 8 scales, then eight
// 32-byte chunks, chunk c holding bytes 4c..4c+3 of each row's quants.
func interleaveQ8_0(dst []byte, src [][]byte) {
	for i, blk := range src {
		copy(dst[2*i:][:2], blk[:2])
		for c := range 8 {
			copy(dst[16+32*c+4*i:][:4], blk[2+4*c:][:4])
		}
	}
}

// dotQ4_1FGeneric: block = d f16, m f16, 16 bytes of nibbles.
func dotQ4_1FGeneric(w []byte, a *actRow) float32 {
	var acc float32
	for b := range len(a.qs) / 32 {
		blk := (*[20]byte)(w[b*20:])
		y := (*[32]int8)(a.qs[b*32:])
		var sum int32
		for j, q := range blk[4:] {
			sum += int32(q&15)*int32(y[j]) + int32(q>>4)*int32(y[j+16])
		}
		acc = fma32(float32(sum), f16Table[le16(blk[0:])]*a.d[b], acc)
		acc = fma32(f16Table[le16(blk[2:])], a.d[b]*float32(sumQ(y)), acc)
	}
	return acc
}

// q5Sum returns Σ q·y over a 5-bit block's quants (qh, then 16 bytes of
// nibbles), q = 0..31.
func q5Sum(qh uint32, qs []byte, y *[32]int8) int32 {
	var sum int32
	for j, q := range qs[:16] {
		lo := int32(q&15 | byte(qh>>j&1)<<4)
		hi := int32(q>>4 | byte(qh>>(j+16)&1)<<4)
		sum += lo*int32(y[j]) + hi*int32(y[j+16])
	}
	return sum
}

// dotQ5_0FGeneric: block = d f16, qh, 16 bytes; elements q−16.
func dotQ5_0FGeneric(w []byte, a *actRow) float32 {
	var acc float32
	for b := range len(a.qs) / 32 {
		blk := (*[22]byte)(w[b*22:])
		y := (*[32]int8)(a.qs[b*32:])
		sum := q5Sum(binary.LittleEndian.Uint32(blk[2:]), blk[6:], y) - 16*sumQ(y)
		acc = fma32(float32(sum), f16Table[le16(blk[0:])]*a.d[b], acc)
	}
	return acc
}

// dotQ5_1FGeneric: block = d f16, m f16, qh, 16 bytes.
func dotQ5_1FGeneric(w []byte, a *actRow) float32 {
	var acc float32
	for b := range len(a.qs) / 32 {
		blk := (*[24]byte)(w[b*24:])
		y := (*[32]int8)(a.qs[b*32:])
		sum := q5Sum(binary.LittleEndian.Uint32(blk[4:]), blk[8:], y)
		acc = fma32(float32(sum), f16Table[le16(blk[0:])]*a.d[b], acc)
		acc = fma32(f16Table[le16(blk[2:])], a.d[b]*float32(sumQ(y)), acc)
	}
	return acc
}

// dotQ8_0FGeneric: block = d f16, 32 int8.
func dotQ8_0FGeneric(w []byte, a *actRow) float32 {
	var acc float32
	for b := range len(a.qs) / 32 {
		blk := (*[34]byte)(w[b*34:])
		y := (*[32]int8)(a.qs[b*32:])
		var sum int32
		for j, q := range blk[2:] {
			sum += int32(int8(q)) * int32(y[j])
		}
		acc = fma32(float32(sum), f16Table[le16(blk[0:])]*a.d[b], acc)
	}
	return acc
}
