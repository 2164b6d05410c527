package kernels

import "encoding/binary"

// Dot products of one weight row with one row of converted activations,
// for the 32-element block types.
//
// bit-exact contract (ggml's x86 vec_dot_q*_q8_* kernels, whose AVX2 code
// the AVX-512 build runs): lane k of eight float32 accumulators takes
// elements 4k..4k+3 of every block; each block adds the exact integer sum
// of its lane's four products times d = dw·da (one float32 product of two
// halves, exact) with a fused multiply-add; the lanes are summed by hsum8.
// For Q4_1 and Q5_1 the m·s terms (products of halves, exact) are summed
// in a separate float32 accumulator in block order and added last. The
// hot loops inline fma32 as fmaTry with fma32Slow as the rare fallback.

// hsum8 reduces eight lanes in the package's fixed order.
func hsum8(l *[8]float32) float32 {
	return ((l[0] + l[4]) + (l[2] + l[6])) + ((l[1] + l[5]) + (l[3] + l[7]))
}

func le16(b []byte) uint16 { return binary.LittleEndian.Uint16(b) }

// dotQ4_0Generic: block = d f16, 16 bytes; element j = (qs[j]&15)-8,
// element j+16 = (qs[j]>>4)-8.
func dotQ4_0Generic(w []byte, a *actRow) float32 {
	var acc [8]float32
	for b := range len(a.qs) / 32 {
		blk := (*[18]byte)(w[b*18:])
		y := (*[32]int8)(a.qs[b*32:])
		d := f16Table[le16(blk[0:])] * a.d[b]
		qs := blk[2:]
		var lanes [8]int32
		for k := range 4 {
			var lo, hi int32
			for j := 4 * k; j < 4*k+4; j++ {
				lo += (int32(qs[j]&15) - 8) * int32(y[j])
				hi += (int32(qs[j]>>4) - 8) * int32(y[j+16])
			}
			lanes[k], lanes[k+4] = lo, hi
		}
		addLanes(&acc, d, &lanes)
	}
	return hsum8(&acc)
}

// dotQ4_1Generic: block = d f16, m f16, 16 bytes; element = d·q + m. The
// m terms contribute m·s (s = d_a·Σq_a) accumulated separately and added
// after the lanes, as ggml.
func dotQ4_1Generic(w []byte, a *actRow) float32 {
	var acc [8]float32
	var summs float32
	for b := range len(a.qs) / 32 {
		blk := (*[20]byte)(w[b*20:])
		y := (*[32]int8)(a.qs[b*32:])
		d := f16Table[le16(blk[0:])] * a.d[b]
		summs += f16Table[le16(blk[2:])] * a.s[b] // exact product of halves: a fused add
		qs := blk[4:]
		for k := range 4 {
			j := 4 * k
			lo := int32(qs[j]&15)*int32(y[j]) + int32(qs[j+1]&15)*int32(y[j+1]) +
				int32(qs[j+2]&15)*int32(y[j+2]) + int32(qs[j+3]&15)*int32(y[j+3])
			hi := int32(qs[j]>>4)*int32(y[j+16]) + int32(qs[j+1]>>4)*int32(y[j+17]) +
				int32(qs[j+2]>>4)*int32(y[j+18]) + int32(qs[j+3]>>4)*int32(y[j+19])
			if r, ok := fmaTry(d, float32(lo), acc[k]); ok {
				acc[k] = r
			} else {
				acc[k] = fma32Slow(d, float32(lo), acc[k])
			}
			if r, ok := fmaTry(d, float32(hi), acc[k+4]); ok {
				acc[k+4] = r
			} else {
				acc[k+4] = fma32Slow(d, float32(hi), acc[k+4])
			}
		}
	}
	return hsum8(&acc) + summs
}

// dotQ5_0Generic: block = d f16, qh uint32, 16 bytes; element j =
// ((qs[j]&15) | bit j of qh <<4) - 16, element j+16 uses the high nibble
// and bit j+16.
func dotQ5_0Generic(w []byte, a *actRow) float32 {
	var acc [8]float32
	for b := range len(a.qs) / 32 {
		blk := (*[22]byte)(w[b*22:])
		y := (*[32]int8)(a.qs[b*32:])
		d := f16Table[le16(blk[0:])] * a.d[b]
		qh := binary.LittleEndian.Uint32(blk[2:])
		qs := blk[6:]
		var lanes [8]int32
		for k := range 4 {
			var lo, hi int32
			for j := 4 * k; j < 4*k+4; j++ {
				x0 := int32(qs[j]&15|byte(qh>>j&1)<<4) - 16
				x1 := int32(qs[j]>>4|byte(qh>>(j+16)&1)<<4) - 16
				lo += x0 * int32(y[j])
				hi += x1 * int32(y[j+16])
			}
			lanes[k], lanes[k+4] = lo, hi
		}
		addLanes(&acc, d, &lanes)
	}
	return hsum8(&acc)
}

// dotQ5_1Generic: block = d f16, m f16, qh uint32, 16 bytes; element =
// d·q + m with 5-bit q.
func dotQ5_1Generic(w []byte, a *actRow) float32 {
	var acc [8]float32
	var summs float32
	for b := range len(a.qs) / 32 {
		blk := (*[24]byte)(w[b*24:])
		y := (*[32]int8)(a.qs[b*32:])
		d := f16Table[le16(blk[0:])] * a.d[b]
		summs += f16Table[le16(blk[2:])] * a.s[b] // exact product of halves: a fused add
		qh := binary.LittleEndian.Uint32(blk[4:])
		qs := blk[8:]
		var lanes [8]int32
		for k := range 4 {
			var lo, hi int32
			for j := 4 * k; j < 4*k+4; j++ {
				lo += int32(qs[j]&15|byte(qh>>j&1)<<4) * int32(y[j])
				hi += int32(qs[j]>>4|byte(qh>>(j+16)&1)<<4) * int32(y[j+16])
			}
			lanes[k], lanes[k+4] = lo, hi
		}
		addLanes(&acc, d, &lanes)
	}
	return hsum8(&acc) + summs
}

// dotQ8_0Generic: block = d f16, 32 int8.
func dotQ8_0Generic(w []byte, a *actRow) float32 {
	var acc [8]float32
	for b := range len(a.qs) / 32 {
		blk := (*[34]byte)(w[b*34:])
		y := (*[32]int8)(a.qs[b*32:])
		d := f16Table[le16(blk[0:])] * a.d[b]
		qs := blk[2:]
		for k := range 8 {
			j := 4 * k
			s := float32(int32(int8(qs[j]))*int32(y[j]) + int32(int8(qs[j+1]))*int32(y[j+1]) +
				int32(int8(qs[j+2]))*int32(y[j+2]) + int32(int8(qs[j+3]))*int32(y[j+3]))
			if r, ok := fmaTry(d, s, acc[k]); ok {
				acc[k] = r
			} else {
				acc[k] = fma32Slow(d, s, acc[k])
			}
		}
	}
	return hsum8(&acc)
}
