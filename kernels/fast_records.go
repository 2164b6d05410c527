package kernels

import (
	"encoding/binary"
	"math"
	"unsafe"
)

// Activation records of the fast kernels for the 32-element block types,
// fastRec bytes per block:
//
//	0  qs   [32]int8
//	32 x    int32 −bias·Σqs (types with an offset, see recordsBias*), or
//	        float32 s = d·Σqs (types with a minimum, recordsMin; exact:
//	        an 11-bit d times |Σqs| < 2¹²)
//	36 d    float32
const fastRec = 40

var (
	recordsBias8   = newFastRecords32(8, false)   // Q4_0: q−8
	recordsBias16  = newFastRecords32(16, false)  // Q5_0: q−16
	recordsBias128 = newFastRecords32(128, false) // Q8_0: VPDPBUSD's q+128
	recordsMin     = newFastRecords32(0, true)    // Q4_1, Q5_1
)

// newFastRecords32 returns the format of records whose x is −bias·Σqs, or d·Σqs
// with min, and its Go writer.
func newFastRecords32(bias int32, min bool) *fastRecords {
	r := &fastRecords{size: fastRec, blocks32: true, bias: bias, min: min, write: recordsBias(bias)}
	if min {
		r.write = writeRecordsMin
	}
	return r
}

// writeFast writes row's records of format r into rec: with k's record
// kernel when it has one for the format (the same bytes as r.write).
func (k *impl) writeFast(r *fastRecords, rec []byte, row *actRow) {
	if !r.blocks32 || k.fastRecords == nil {
		r.write(rec, row)
		return
	}
	k.fastRecords(rec, row, r.bias, r.min)
}

// recordsBias returns the writer of records whose x is −bias·Σqs: the
// kernels feed the weights to unsigned products as q+bias.
func recordsBias(bias int32) func(rec []byte, row *actRow) {
	return func(rec []byte, row *actRow) {
		writeRecords(rec, row, func(_ float32, sum int32) uint32 { return uint32(-bias * sum) })
	}
}

// writeRecordsMin writes records whose x is s = d·Σqs.
func writeRecordsMin(rec []byte, row *actRow) {
	writeRecords(rec, row, func(d float32, sum int32) uint32 { return math.Float32bits(d * float32(sum)) })
}

// writeRecords writes one record per 32-element block of row: the quants,
// x(d, Σqs) and d.
func writeRecords(rec []byte, row *actRow, x func(d float32, sum int32) uint32) {
	for b := range len(row.d) {
		r := rec[b*fastRec : (b+1)*fastRec]
		qs := row.qs[b*32 : (b+1)*32]
		q := unsafe.Slice((*byte)(unsafe.Pointer(&qs[0])), 32) // the int8s' bytes
		// the quants 8 at a time, summed as bytes: each one + 128 (xor of
		// the sign bit) in 0..255, added in 16-bit halves that cannot
		// carry (at most 8·255 each), all four halves at the end.
		var halves uint64
		for w := range 4 {
			v := binary.LittleEndian.Uint64(q[8*w:])
			binary.LittleEndian.PutUint64(r[8*w:], v)
			u := v ^ 0x8080808080808080
			halves += u&0x00FF00FF00FF00FF + u>>8&0x00FF00FF00FF00FF
		}
		sum := int32(halves*0x0001000100010001>>48) - 32*128
		binary.LittleEndian.PutUint32(r[32:], x(row.d[b], sum))
		binary.LittleEndian.PutUint32(r[36:], math.Float32bits(row.d[b]))
	}
}

// sumQ returns Σ of 32 activation quants.
func sumQ(y *[32]int8) int32 {
	var s int32
	for _, v := range y {
		s += int32(v)
	}
	return s
}
