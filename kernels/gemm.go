package kernels

import (
	"encoding/binary"
	"math"
)

// Accelerated GEMM for the 32-element block types (Q4_0, Q4_1, Q8_0).
//
// The generated kernels (see _asm/gemm32.go) read the quantized activations
// as records of gemm32Rec bytes per block, one row of records per
// activation row:
//
//	0  qs   [32]int8   the block's quants, as the generic quantizer made them
//	32 corr [8]int32   −bias·(q[4k]+q[4k+1]+q[4k+2]+q[4k+3]), k = 0..7
//	64 d    float32    the block scale
//	68 s    float32    Q8_1's f16(d·Σq), else 0
//
// The kernels feed weights to VPDPBUSD as unsigned bytes: Q4_0 nibbles are
// q+8 and Q8_0 bytes are q+128 (xor 0x80), so every lane starts from the
// correction −bias·Σy of its four activation quants. Integer lanes are
// exact; the float work per block and lane follows the generic order.
const gemm32Rec = 72

// K-quant records (see _asm/gemmk.go), one per 256-element super-block:
//
//	0   qs   [256]int8
//	256 q8s  [8]int16   sums of 32 quants
//	272 bs   [16]int16  sums of 16 quants
//	304 d    float32
const gemmKRec = 308

// gemmFunc is the signature of the generated kernels: dst[a·dstStride+r] =
// row r of w (rows rows of rowBytes) · activation row a (nb records at
// act+a·actStride), for a below the kernel's tile width.
type gemmFunc func(w *byte, rowBytes, rows int, act *byte, actStride, nb int, dst *float32, dstStride int)

// blockGEMM is an accelerated MatMul for one block type.
type blockGEMM struct {
	tiles  []gemmFunc  // by number of activation rows − 1, up to the widest tile
	packed []gemmFunc  // the same on packed weights (Weight.packed), or nil
	bias   int32       // 32-element types: unsigned re-biasing of the quants (0: none)
	kq     bool        // K-quant: Q8_K activations in gemmKRec records
	float  bool        // F32/F16/BF16: the converted float rows themselves (act.f), nb = columns
	fast   *fastTraits // fast arithmetic: fast.rec records, weights in groups of fast.rows
	pairs  bool        // fast: a full-width pass takes two groups (an odd last group a half-width one)
	sAhead bool        // types with mins: records carry the s of the next 8 rows (actRows.sAhead)
}

// gemmFor returns the accelerated kernel k multiplies w with, or nil.
func (k *impl) gemmFor(w Weight) *blockGEMM {
	if w.fast != nil {
		if w.repacked == nil {
			return nil
		}
		return k.fast[w.Type]
	}
	return k.gemm[w.Type]
}

// dotFor returns the row-by-row product k multiplies w with where no
// accelerated kernel does.
func (k *impl) dotFor(w Weight) func([]byte, *actRow) float32 {
	if w.fast != nil {
		return w.fast.dot
	}
	return k.dot[w.Type]
}

// recordSize returns the block length and record size of g's activations.
func (g *blockGEMM) recordSize() (block, size int) {
	if g.float {
		return 1, 4
	}
	if g.kq {
		return 256, gemmKRec
	}
	if g.fast != nil {
		return g.fast.block, g.fast.rec.size
	}
	return 32, gemm32Rec
}

// recordsKRows writes the K-quant records of rows [t0, t1) into a.rec,
// already sized. Disjoint ranges may run concurrently.
func (a *actRows) recordsKRows(t0, t1 int) {
	stride := a.cols / 256 * gemmKRec
	for t := t0; t < t1; t++ {
		row := &a.rows[t]
		for b := range len(row.d) {
			r := a.rec[t*stride+b*gemmKRec:][:gemmKRec]
			for i, v := range row.qs[b*256 : (b+1)*256] {
				r[i] = byte(v)
			}
			bs := row.bsums[b*16 : (b+1)*16]
			for k := range 8 {
				binary.LittleEndian.PutUint16(r[256+2*k:], uint16(bs[2*k]+bs[2*k+1]))
			}
			for k, v := range bs {
				binary.LittleEndian.PutUint16(r[272+2*k:], uint16(v))
			}
			binary.LittleEndian.PutUint32(r[304:], math.Float32bits(row.d[b]))
		}
	}
}

// records32 lays out the quantized rows of a (kinds Q8_0, Q8_1) as
// gemm32 records for weights re-biased by bias, with k's record writer.
func (a *actRows) records32(k *impl, bias int32) {
	a.rec = grow(a.rec, len(a.rows)*(a.cols/32*gemm32Rec))
	a.records32Rows(k, bias, 0, len(a.rows))
}

// records32Rows writes the gemm32 records of rows [t0, t1) into a.rec,
// already sized. Disjoint ranges may run concurrently.
func (a *actRows) records32Rows(k *impl, bias int32, t0, t1 int) {
	stride := a.cols / 32 * gemm32Rec
	for t := t0; t < t1; t++ {
		k.records(a.rec[t*stride:(t+1)*stride], &a.rows[t], bias)
	}
}

// records32Go writes the records of one quantized row into rec.
func records32Go(rec []byte, row *actRow, bias int32) {
	for b := range len(row.d) {
		r := rec[b*gemm32Rec : (b+1)*gemm32Rec]
		q := row.qs[b*32 : (b+1)*32]
		for i, v := range q {
			r[i] = byte(v)
		}
		for k := range 8 {
			s := int32(q[4*k]) + int32(q[4*k+1]) + int32(q[4*k+2]) + int32(q[4*k+3])
			binary.LittleEndian.PutUint32(r[32+4*k:], uint32(-bias*s))
		}
		binary.LittleEndian.PutUint32(r[64:], math.Float32bits(row.d[b]))
		var s float32
		if row.s != nil {
			s = row.s[b]
		}
		binary.LittleEndian.PutUint32(r[68:], math.Float32bits(s))
	}
}

// sAhead writes, in the unused correction field of every gemm32 record
// (kinds with mins: no re-biasing), the block's s of the record's row and
// of the 7 rows after it (0 past the last), so that a kernel reads the s of
// a tile of rows with one load. It runs once all n rows are converted.
func (a *actRows) sAhead(n int) { a.sAheadBlocks(n, 0, a.cols/32) }

// sAheadBlocks is sAhead on the records of blocks [b0, b1) of every row.
func (a *actRows) sAheadBlocks(n, b0, b1 int) {
	stride := a.cols / 32 * gemm32Rec
	for t := range n {
		for b := b0; b < b1; b++ {
			r := a.rec[t*stride+b*gemm32Rec+32:][:32]
			for k := range 8 {
				var s float32
				if t+k < n {
					s = a.rows[t+k].s[b]
				}
				binary.LittleEndian.PutUint32(r[4*k:], math.Float32bits(s))
			}
		}
	}
}

// runGEMM computes output rows [r0, r1) of tokens [t0, t1) with the
// accelerated kernel, in as few passes over the rows as its widest tile
// allows, of as even widths as possible.
func (j *matmulJob) runGEMM(r0, r1, t0, t1 int) {
	block, size := j.gemm.recordSize()
	rows, nb := j.w.Rows, j.w.Cols/block
	stride := nb * size
	tiles, wb := j.gemm.tiles, j.rowBytes // the stride of rows or row groups
	switch j.weightLayout(r0) {
	case layoutFast:
		wb = nb * j.gemm.fast.groupBlock
	case layoutPacked:
		tiles, wb = j.gemm.packed, 4*j.rowBytes
	}
	w := &j.weightRows(r0, r1)[0]
	// As few passes over the weights as the widest tile allows, as even as
	// possible (16 tokens on 5-wide tiles: 4+4+4+4, not 5+5+5+1).
	passes := (t1 - t0 + len(tiles) - 1) / len(tiles)
	act := j.act.rec
	if j.gemm.float {
		act = floatBytes(j.act.f)
	}
	for t := t0; t < t1; passes-- {
		na := (t1 - t + passes - 1) / passes
		tiles[na-1](w, wb, r1-r0, &act[t*stride], stride, nb, &j.dst[t*rows+r0], rows)
		t += na
	}
}

// The layouts compute reads a weight's rows in.
const (
	layoutRows   = iota // w.Data, row after row
	layoutFast          // w.repacked: groups of gemm.fast.rows rows
	layoutPacked        // w.packed: groups of four rows
)

// weightLayout is the layout runGEMM reads rows from r0 on in.
func (j *matmulJob) weightLayout(r0 int) int {
	switch g := j.gemm; {
	case g == nil:
	case g.fast != nil:
		return layoutFast // planMatmul makes r0 a multiple of the group
	case j.w.packed != nil && g.packed != nil && r0%4 == 0:
		return layoutPacked // newMatmulJob makes r0 a multiple of four
	}
	return layoutRows
}

// weightRows is the weight memory compute reads for rows [r0, r1): whole
// groups of the grouped layouts.
func (j *matmulJob) weightRows(r0, r1 int) []byte {
	switch j.weightLayout(r0) {
	case layoutFast:
		f := j.gemm.fast
		block, _ := j.gemm.recordSize()
		gb := j.w.Cols / block * f.groupBlock
		return j.w.repacked[r0/f.rows*gb : min(len(j.w.repacked), (r1+f.rows-1)/f.rows*gb)]
	case layoutPacked:
		gb := 4 * j.rowBytes
		return j.w.packed[r0/4*gb : min(len(j.w.packed), (r1+3)/4*gb)]
	}
	return j.w.Data[r0*j.rowBytes : r1*j.rowBytes]
}

// fmaRoundsOnce reports whether the generic fma32 is an IEEE fused
// multiply-add (one rounding), as the FMA instructions of the accelerated
// kernels are: a·b+c below is 1+2⁻²³+2⁻²⁴−2⁻⁶⁴, which rounds once to
// 1+2⁻²³ but, through float64, to the tie 1+2⁻²³+2⁻²⁴ and then to 1+2⁻²².
func fmaRoundsOnce() bool {
	a := float32(1+0x1p-20) * 0x1p-24
	return fma32(a, 1-0x1p-20, 1+0x1p-23) == 1+0x1p-23
}
