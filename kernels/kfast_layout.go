package kernels

import (
	"encoding/binary"
	"math"
	"unsafe"
)

// Interleaved layouts of the K-quants for the fast kernels (_asm/kfast.go).
//
// Rows are interleaved in groups of kfRows = 16, one SIMD lane per row: a
// group-block holds super-block b of the group's 16 rows. Quants come in
// "quads": a 64-byte vector holding, for each row r, 4 consecutive bytes of
// its quants at bytes 4r..4r+3, so that one VPDPBUSD against 4 broadcast
// activation quants adds 4 products to each row's lane. The quads keep the
// file's bit packing (nibbles, 2-bit fields, high-bit planes), only bytes
// moving, except Q6_K's (repacked, see below). Q4_K's and Q5_K's scales
// and minimums keep the file's packing too (12 bytes per row, q[0..11]
// below, as llama.cpp's get_scale_min_k4 reads them), placed so that a
// few whole-vector operations unpack them for all 16 rows, already in
// pairs (scales 2c, 2c+1: chunk c's low and high nibbles; minimums 2i,
// 2i+1 side by side for VPDPWSSD against broadcast activation-sum pairs):
// their group-blocks are exactly the file's bytes. Q6_K's, Q2_K's and
// Q3_K's scales are one byte per (group, row), scale-major, so that one
// zero- or sign-extension gives a vector of one group's scales per row.
// Per type, at byte offset:
//
//	Q4_K (2304 = 16·144 bytes, the file's)
//	0    d    [16]f16
//	32   dmin [16]f16
//	64   sm   [3][2][16][2]u8  vector v, pair p, row r, element e: q[4v+2p+e]
//	                           of row r; bytewise, with A, B, C the vectors
//	                           at 64, 128, 192, pair p of
//	                           A & 0x3F is scales 2p, 2p+1,
//	                           B & 0x3F minimums 2p, 2p+1,
//	                           C & 0x0F | (A & 0xC0) >> 2 scales 4+2p, 5+2p,
//	                           C >> 4 | (B & 0xC0) >> 2 minimums 4+2p, 5+2p
//	256  qs   [4][8]quad       chunk c, quad k: qs[32c+4k..+3]; low nibbles
//	                           are elements 64c+4k+i, high 64c+32+4k+i
//	Q5_K (2816 = 16·176 bytes, the file's): Q4_K's header, then
//	256  qh   [8]quad          qh[4k..+3]: bit 2c (2c+1) is the fifth bit of
//	                           the low (high) nibble of chunk c, quad k
//	768  qs   [4][8]quad       as Q4_K
//	Q6_K (3360 = 16·210 bytes)
//	0    d    [16]f16
//	32   sc   [16][16]i8       group g, row r
//	288  qs   [4][4][3]quad    chunk i, quad k, part p (groups 3i+p, and 12+i):
//	                           byte 4r+j is the 6-bit quant (q+32) of element
//	                           16(3i+p)+4k+j in bits 0–5, and bits 2p, 2p+1
//	                           of that of element 16(12+i)+4k+j in bits 6, 7
//	Q2_K (1344 = 16·84 bytes)
//	0    d    [16]f16
//	32   dmin [16]f16
//	64   sm   [8][16][2]u8     pair i, row r: scale bytes 2i, 2i+1 (scale in
//	                           the low nibble, minimum in the high)
//	320  qs   [2][8]quad       half h, quad k: qs[32h+4k..+3]; bits 2j, 2j+1
//	                           are element 128h+32j+4k+i
//	Q3_K (1824 = 16·114 bytes)
//	0    d    [16]f16
//	32   sc   [16][16]i8       group g, row r: the decoded scale (−32..31)
//	288  hm   [8]quad          hmask[4k..+3]: bit 4h+j is the high bit of
//	                           element 128h+32j+4k+i
//	800  qs   [2][8]quad       as Q2_K
//
// Q6_K's quads are repacked so that three of every four quants take one
// mask and the fourth three shifts, a mask and two masked ors, where the
// file's packing takes a shift, a mask and an or each plus a shift per
// pair of nibbles: its
// one-token AVX-512 kernel went from 18 to 13 vector operations per four
// quads, 67 → 85 GB/s of weights per core from L2 on Zen 4
// (BenchmarkDecodeCompute). A chunk's quads are in the order that kernel
// reads them, so that a group's bytes are read front to back and the
// hardware prefetcher streams them, with no software prefetching (the
// previous layout, qh quads beside the ql ones they complete, took
// one-token Q6_K matmuls from 43–50% to 72–84% of the read bandwidth;
// docs/benchmarks.md). The other layouts are read in order as they are
// (Q5_K's kernels load the qh quads first).
const kfRows = 16

// Group-block sizes of the K-quant layouts.
const (
	kfQ4KBlock = 2304
	kfQ5KBlock = 2816
	kfQ6KBlock = 3360
	kfQ2KBlock = 1344
	kfQ3KBlock = 1824
)

// putQuads writes quads [0, n) of the group's rows: quad k of row r is the
// 4 bytes at src[r][off+4k:], written to dst[64k+4r:].
func putQuads(dst []byte, src [][]byte, off, n int) {
	for k := range n {
		for r, blk := range src {
			copy(dst[64*k+4*r:][:4], blk[off+4*k:][:4])
		}
	}
}

// putF16s writes the f16 at byte off of each row's block to dst[2r:].
func putF16s(dst []byte, src [][]byte, off int) {
	for r, blk := range src {
		copy(dst[2*r:][:2], blk[off:][:2])
	}
}

// putScales6 writes the packed 6-bit scales and minimums of Q4_K and
// Q5_K (bytes 4..15 of each row's block, q[k] = byte 4+k) at dst: q[k] of
// row r at 64·(k/4) + 32·(k%4/2) + 2r + k%2.
func putScales6(dst []byte, src [][]byte) {
	for r, blk := range src {
		for k, q := range blk[4:16] {
			dst[64*(k/4)+32*(k%4/2)+2*r+k%2] = q
		}
	}
}

func interleaveQ4K(dst []byte, src [][]byte) {
	putF16s(dst[0:], src, 0)
	putF16s(dst[32:], src, 2)
	putScales6(dst[64:], src)
	putQuads(dst[256:], src, 16, 32)
}

func interleaveQ5K(dst []byte, src [][]byte) {
	putF16s(dst[0:], src, 0)
	putF16s(dst[32:], src, 2)
	putScales6(dst[64:], src)
	putQuads(dst[256:], src, 16, 8)
	putQuads(dst[768:], src, 48, 32)
}

func interleaveQ6K(dst []byte, src [][]byte) {
	putF16s(dst[0:], src, 208)
	var q [256]int8
	var sc [16]int32
	for r, blk := range src {
		decodeQ6K(blk, &q, &sc)
		for g, s := range sc {
			dst[32+16*g+r] = byte(s)
		}
		for i := range 4 {
			for k := range 4 {
				for p := range 3 {
					quad := dst[288+64*(12*i+3*k+p)+4*r:][:4]
					for j := range quad {
						top := byte(q[16*(12+i)+4*k+j]+32) >> (2 * p) & 3
						quad[j] = byte(q[16*(3*i+p)+4*k+j]+32) | top<<6
					}
				}
			}
		}
	}
}

func interleaveQ2K(dst []byte, src [][]byte) {
	putF16s(dst[0:], src, 80)
	putF16s(dst[32:], src, 82)
	for r, blk := range src {
		for g := range 16 {
			dst[64+32*(g/2)+2*r+g%2] = blk[g]
		}
	}
	putQuads(dst[320:], src, 16, 16)
}

func interleaveQ3K(dst []byte, src [][]byte) {
	putF16s(dst[0:], src, 108)
	var q [256]int8
	var sc [16]int32
	for r, blk := range src {
		decodeQ3K(blk, &q, &sc)
		for g := range 16 {
			dst[32+16*g+r] = byte(int8(sc[g]))
		}
	}
	putQuads(dst[288:], src, 0, 8)
	putQuads(dst[800:], src, 32, 16)
}

// Activation records of the fast K-quant kernels, kfRec bytes per
// super-block, the same for all five types (so MatMulN converts once for a
// layer's Q4_K and Q6_K weights):
//
//	0   qs   [256]int8
//	256 n32  [16]int32   −32·bsum_g (Q6_K: a group's sum starts there)
//	320 n4   [16]int32   −4·bsum_g  (Q3_K)
//	384 bs   [16]int16   bsum_g, the sums of 16 quants (Q2_K's minimums)
//	416 q8s  [8]int16    bsum_2j + bsum_2j+1, the sums of 32 (Q4_K, Q5_K)
//	432 d    float32
//	436 (padding to 448)
const kfRec = 448

// writeRecordsKFast writes the records of one Q8_K row.
func writeRecordsKFast(rec []byte, row *actRow) {
	// Fixed-size views and one copy of the quants: a loop of byte stores
	// with bounds checks took twice the Q8_K quantizer's time, and for one
	// token the caller converts alone while the other workers wait.
	le := binary.LittleEndian
	for b := range len(row.d) {
		r := (*[kfRec]byte)(rec[b*kfRec:])
		copy(r[:256], unsafe.Slice((*byte)(unsafe.Pointer(&row.qs[b*256])), 256))
		bs := (*[16]int16)(row.bsums[b*16:])
		n32, n4, b16 := (*[64]byte)(r[256:]), (*[64]byte)(r[320:]), (*[32]byte)(r[384:])
		for g, v := range bs {
			le.PutUint32(n32[4*g:], uint32(-32*int32(v)))
			le.PutUint32(n4[4*g:], uint32(-4*int32(v)))
			le.PutUint16(b16[2*g:], uint16(v))
		}
		q8s := (*[16]byte)(r[416:])
		for j := range 8 {
			le.PutUint16(q8s[2*j:], uint16(bs[2*j]+bs[2*j+1]))
		}
		le.PutUint32(r[432:], math.Float32bits(row.d[b]))
		clear(r[436:])
	}
}
