package kernels

import (
	"encoding/binary"
	"fmt"
)

// A Q8_0 KV cache (KVQ8_0, `--kv-cache-dtype q8_0`) stores every K and V
// row as llama.cpp stores a q8_0 cache: ggml's block_q8_0, one f16 scale d
// then 32 int8 quants q, 34 bytes per 32 elements along the head
// dimension (HeadDim a multiple of 32), so element e of a row stands for
// d·q exactly (an int8 times an f16 is exact in float32). KVLayer's element
// offsets keep their meaning: element offset e lies in block e/32 of K8
// (or V8), at byte q8Offset(e) + 2 + e%32; a cache block of BlockElems
// elements is one contiguous run of BlockElems/32·34 bytes, which swaps
// and copies move whole.
//
// Rows are quantized when they are written (WriteKV) as ggml's x86
// quantize_row_q8_0 quantizes them (what llama.cpp's set_rows runs on an
// x86 CPU): amax = max|x|, d = amax/127 rounded to f16, q =
// round-half-even(x·(127/amax)) (quantizeBlock8; TestKVQ8Golden checks the
// bytes against ggml's). The attention reads them only in AttnTiled, the
// fast arithmetic's attention: each block of 16 cache positions is
// converted to float32 (d·q, exact) as an F16 block is, by the
// implementation's blockQ8 kernel, and the scores and values follow with
// exactly the F16 cache's arithmetic on those values. So a Q8_0 cache
// changes only which values the attention sees (the quantization error),
// never its order of operations, and every implementation equals the
// generic one bit for bit. llama.cpp's exact attention paths (AttnMatMul,
// AttnFlash) are not reproduced on a Q8_0 cache: Attention panics, and the
// engine refuses the combination.

const (
	q8Block      = 32 // elements per block_q8_0
	q8BlockBytes = 34 // bytes per block_q8_0: f16 scale, 32 int8
)

// q8Offset is the byte offset in a Q8_0 cache of element offset e (a
// multiple of 32).
func q8Offset(e int) int { return e / q8Block * q8BlockBytes }

// NewKVLayer allocates a zeroed KV layer of blocks cache blocks of type t.
// A Q8_0 layer needs headDim to be a multiple of 32.
func NewKVLayer(t KVType, blocks, blockSize, kvHeads, headDim int) KVLayer {
	l := KVLayer{Type: t, BlockSize: blockSize, KVHeads: kvHeads, HeadDim: headDim}
	n := blocks * l.BlockElems()
	switch t {
	case KVF32:
		l.K32, l.V32 = make([]float32, n), make([]float32, n)
	case KVQ8_0:
		l.K8, l.V8 = make([]byte, t.Bytes(n)), make([]byte, t.Bytes(n))
	default:
		l.K16, l.V16 = make([]uint16, n), make([]uint16, n)
	}
	return l
}

// quantizeKVQ8 quantizes x (a multiple of 32 elements) into dst as
// block_q8_0s (ggml's x86 quantize_row_q8_0).
func quantizeKVQ8(dst []byte, x []float32) {
	for b := range len(x) / q8Block {
		blk := dst[b*q8BlockBytes:][:q8BlockBytes]
		var q [q8Block]int8
		d, _ := quantizeBlock8(q[:], x[b*q8Block:][:q8Block])
		binary.LittleEndian.PutUint16(blk, F32ToF16(d))
		for i, v := range q {
			blk[2+i] = byte(v)
		}
	}
}

// DequantizeKVQ8 returns the values of the Q8_0 row of n elements at
// element offset off of src (d·q, exact).
func DequantizeKVQ8(dst []float32, src []byte, off int) {
	row := src[q8Offset(off):][:q8Offset(len(dst))]
	for b := range len(dst) / q8Block {
		d := f16Table[binary.LittleEndian.Uint16(row[b*q8BlockBytes:])]
		for i, v := range row[b*q8BlockBytes+2:][:q8Block] {
			dst[b*q8Block+i] = d * float32(int8(v))
		}
	}
}

// blockQ8Generic is tiledKernels.blockQ8: the Q8_0 rows at element offsets
// offs (at most 16, hd a multiple of 32) into dst in the block layout
// (element 16m+l of position p at dst[(16m+p)·16+l]), positions past
// len(offs) zero.
func blockQ8Generic(dst []float32, src []byte, offs []int, hd int) {
	dst = dst[:16*hd]
	for p, off := range offs {
		row := src[q8Offset(off):][:q8Offset(hd)]
		for b := range hd / q8Block {
			d := f16Table[binary.LittleEndian.Uint16(row[b*q8BlockBytes:])]
			qs := row[b*q8BlockBytes+2:][:q8Block]
			for h := range 2 { // the block's two chunks of 16
				out := dst[((2*b+h)*16+p)*16:][:16]
				for l, v := range qs[16*h:][:16] {
					out[l] = d * float32(int8(v))
				}
			}
		}
	}
	for m := range hd / 16 { // the missing positions of every chunk
		clear(dst[(16*m+len(offs))*16 : (16*m+16)*16])
	}
}

// checkQ8 panics when a Q8_0 cache is read by anything but AttnTiled, or
// holds rows that are not whole blocks.
func checkQ8(a *Attention, kv *KVLayer) {
	if kv.Type == KVQ8_0 && (a.Mode != AttnTiled || kv.HeadDim%q8Block != 0) {
		panic(fmt.Sprintf("kernels: a Q8_0 KV cache is read by AttnTiled only, with a head dimension that is a multiple of 32 (mode %d, head dimension %d)",
			a.Mode, kv.HeadDim))
	}
}

// kvSide is the K or the V half of a cache layer, whichever type holds it.
type kvSide struct {
	x16 []uint16
	x32 []float32
	x8  []byte
}

// side returns l's K rows, or its V rows when v is set.
func (l *KVLayer) side(v bool) kvSide {
	if v {
		return kvSide{l.V16, l.V32, l.V8}
	}
	return kvSide{l.K16, l.K32, l.K8}
}

// prefetch hints that the rows at offs (hd elements each) are read soon.
func (s kvSide) prefetch(offs []int, hd int) {
	if s.x8 == nil {
		prefetchCacheRows(s.x16, s.x32, offs, hd)
		return
	}
	// A Q8_0 row is q8Offset(hd) bytes; a cache block's rows of one head
	// follow each other, so runs of consecutive rows are hinted at once.
	rb := q8Offset(hd)
	for i := 0; i < len(offs); {
		j := i + 1
		for j < len(offs) && offs[j] == offs[j-1]+hd {
			j++
		}
		start := q8Offset(offs[i])
		prefetchBytes(s.x8[start : start+(j-i)*rb])
		i = j
	}
}
