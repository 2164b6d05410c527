package kernels

import (
	"encoding/binary"
	"math"

	"pagoda/gguf"
)

// Repacked Q4_0: llama.cpp's CPU_REPACK arithmetic.
//
// On x86 machines with AVX2, llama.cpp by default copies every Q4_0 matmul
// weight of a multiple of 8 rows into an interleaved layout (block_q4_0x8)
// and multiplies it with kernels of a different arithmetic than the plain
// vec_dot path: every block's whole integer dot product is converted once,
//
//	dst = fma(float(Σ_block (q−8)·y), f16(dw)·f16(da), dst)   block by block
//
// (ggml_gemv_q4_0_8x8_q8_0 and ggml_gemm_q4_0_8x8_q8_0, with AVX2 or
// AVX-512). That costs one conversion and one FMA per 32 products of a
// (row, token) instead of eight of each, and the kernels reach far closer
// to the int8 peak. A repacked Weight (Repack) is multiplied with exactly
// this arithmetic by every implementation, so MatMul matches llama.cpp's
// default configuration on such weights; the plain arithmetic (and so
// llama.cpp's --no-repack) is kept for weights that are not repacked.
//
// The accelerated kernels (_asm/gemmr.go) read the rows in groups of
// repackRows, block by block: per group-block the 8 f16 scales, then four
// 32-byte chunks, chunk c holding bytes 4c..4c+3 of each row's quants.
const (
	repackRows  = 8
	repackBlock = repackRows * 18
	gemmRRec    = 40 // activation record: qs [32]int8, −8·Σqs int32, d float32
)

// Repack returns w marked for llama.cpp's repacked arithmetic when
// llama.cpp would repack it (Q4_0 with a multiple of 8 rows), with the
// interleaved copy the accelerated kernels read (as much memory as Data)
// when the implementation in use has them; otherwise w unchanged. Call it
// once, at load time, instead of Pack.
func Repack(w Weight) Weight {
	return repack(def, w)
}

func repack(k *impl, w Weight) Weight {
	if w.Type != gguf.Q4_0 || w.Rows%8 != 0 || w.Validate() != nil {
		return w
	}
	w.repack, w.packed = true, nil
	if k.gemmR != nil {
		w.repacked = interleave8(w)
	}
	return w
}

// Repacked reports whether w is multiplied with the repacked arithmetic.
func (w Weight) Repacked() bool { return w.repack }

// interleave8 lays out w's rows (a multiple of repackRows) in groups of
// repackRows (see the constants above).
func interleave8(w Weight) []byte {
	nb, rb := w.Cols/32, w.RowBytes()
	return packGroups(w.Rows/repackRows, nb*repackBlock, func(out []byte, g int) {
		for i := range repackRows {
			row := w.Data[(repackRows*g+i)*rb:][:rb]
			for b := range nb {
				src, dst := row[b*18:(b+1)*18], out[b*repackBlock:][:repackBlock]
				copy(dst[2*i:], src[:2])
				for c := range 4 {
					copy(dst[2*repackRows+4*repackRows*c+4*i:][:4], src[2+4*c:][:4])
				}
			}
		}
	})
}

// dotQ4_0RGeneric is one (row, token) of the repacked arithmetic.
func dotQ4_0RGeneric(w []byte, a *actRow) float32 {
	var acc float32
	for b := range len(a.qs) / 32 {
		blk := (*[18]byte)(w[b*18:])
		y := (*[32]int8)(a.qs[b*32:])
		var sum int32
		for j, q := range blk[2:] {
			sum += (int32(q&15)-8)*int32(y[j]) + (int32(q>>4)-8)*int32(y[j+16])
		}
		acc = fma32(float32(sum), f16Table[le16(blk[0:])]*a.d[b], acc)
	}
	return acc
}

// recordsR writes the repacked kernels' records of one Q8_0 row into rec.
func recordsR(rec []byte, row *actRow) {
	for b := range len(row.d) {
		r := rec[b*gemmRRec : (b+1)*gemmRRec]
		var sum int32
		for i, v := range row.qs[b*32 : (b+1)*32] {
			r[i] = byte(v)
			sum += int32(v)
		}
		binary.LittleEndian.PutUint32(r[32:], uint32(-8*sum))
		binary.LittleEndian.PutUint32(r[36:], math.Float32bits(row.d[b]))
	}
}

// recordsRRows writes the repacked kernels' records of rows [t0, t1) into
// a.rec, already sized. Disjoint ranges may run concurrently.
func (a *actRows) recordsRRows(t0, t1 int) {
	stride := a.cols / 32 * gemmRRec
	for t := t0; t < t1; t++ {
		recordsR(a.rec[t*stride:(t+1)*stride], &a.rows[t])
	}
}
