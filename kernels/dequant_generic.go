package kernels

import (
	"encoding/binary"
	"fmt"
	"math"

	"pagoda/gguf"
)

// DequantizeRow writes row r of w, converted to float32, into dst
// (len w.Cols). It is the embedding lookup: one row of a table of any
// supported type, never the whole tensor. It panics if r or dst is out of
// range; w must have passed Validate.
func DequantizeRow(dst []float32, w Weight, r int) {
	if r < 0 || r >= w.Rows || len(dst) != w.Cols {
		panic(fmt.Sprintf("kernels: DequantizeRow row %d of %d into %d of %d columns", r, w.Rows, len(dst), w.Cols))
	}
	rb := w.RowBytes()
	dequantRow(w.Type, w.row(r, rb), dst)
}

// dequantRow converts one row of type t into dst.
func dequantRow(t gguf.Type, src []byte, dst []float32) {
	switch t {
	case gguf.F32:
		for i := range dst {
			dst[i] = math.Float32frombits(binary.LittleEndian.Uint32(src[4*i:]))
		}
	case gguf.F16:
		for i := range dst {
			dst[i] = f16Table[le16(src[2*i:])]
		}
	case gguf.BF16:
		for i := range dst {
			dst[i] = BF16ToF32(le16(src[2*i:]))
		}
	case gguf.Q4_0, gguf.Q4_1, gguf.Q5_0, gguf.Q5_1, gguf.Q8_0:
		for b := range len(dst) / 32 {
			dequantBlock32(t, src[b*t.TypeSize():], dst[b*32:(b+1)*32])
		}
	default:
		for b := range len(dst) / 256 {
			dequantBlockK(t, src[b*t.TypeSize():(b+1)*t.TypeSize()], dst[b*256:(b+1)*256])
		}
	}
}

// dequantBlock32 converts one 32-element block.
func dequantBlock32(t gguf.Type, blk []byte, y []float32) {
	d := f16Table[le16(blk)]
	switch t {
	case gguf.Q4_0:
		for j, b := range blk[2:18] {
			y[j] = float32(int32(b&15)-8) * d
			y[j+16] = float32(int32(b>>4)-8) * d
		}
	case gguf.Q4_1:
		m := f16Table[le16(blk[2:])]
		for j, b := range blk[4:20] {
			y[j] = fma32(float32(b&15), d, m)
			y[j+16] = fma32(float32(b>>4), d, m)
		}
	case gguf.Q5_0:
		qh := binary.LittleEndian.Uint32(blk[2:])
		for j, b := range blk[6:22] {
			y[j] = float32(int32(b&15|byte(qh>>j&1)<<4)-16) * d
			y[j+16] = float32(int32(b>>4|byte(qh>>(j+16)&1)<<4)-16) * d
		}
	case gguf.Q5_1:
		m := f16Table[le16(blk[2:])]
		qh := binary.LittleEndian.Uint32(blk[4:])
		for j, b := range blk[8:24] {
			y[j] = fma32(float32(b&15|byte(qh>>j&1)<<4), d, m)
			y[j+16] = fma32(float32(b>>4|byte(qh>>(j+16)&1)<<4), d, m)
		}
	case gguf.Q8_0:
		for j, b := range blk[2:34] {
			y[j] = float32(int8(b)) * d
		}
	}
}

// dequantBlockK converts one 256-element K-quant super-block:
// x = d·scale·q − dmin·min.
func dequantBlockK(t gguf.Type, blk []byte, y []float32) {
	var q [256]int8
	switch t {
	case gguf.Q4_K, gguf.Q5_K:
		var sc, mn [8]int32
		if t == gguf.Q4_K {
			decodeQ4K(blk, &q, &sc, &mn)
		} else {
			decodeQ5K(blk, &q, &sc, &mn)
		}
		d, dmin := f16Table[le16(blk)], f16Table[le16(blk[2:])]
		for e := range 256 {
			y[e] = d*float32(sc[e/32])*float32(q[e]) - dmin*float32(mn[e/32])
		}
	case gguf.Q2_K:
		var sc, mn [16]int32
		decodeQ2K(blk, &q, &sc, &mn)
		d, dmin := f16Table[le16(blk[80:])], f16Table[le16(blk[82:])]
		for e := range 256 {
			y[e] = d*float32(sc[e/16])*float32(q[e]) - dmin*float32(mn[e/16])
		}
	case gguf.Q3_K, gguf.Q6_K:
		var sc [16]int32
		var d float32
		if t == gguf.Q3_K {
			decodeQ3K(blk, &q, &sc)
			d = f16Table[le16(blk[108:])]
		} else {
			decodeQ6K(blk, &q, &sc)
			d = f16Table[le16(blk[208:])]
		}
		for e := range 256 {
			y[e] = d * float32(sc[e/16]) * float32(q[e])
		}
	default:
		panic(fmt.Sprintf("kernels: cannot dequantize %v", t))
	}
}
