package gguf

import (
	"encoding/binary"
	"fmt"
	"math"
)

// blockEncoder quantizes one block: len(x) == BlockSize, len(b) == TypeSize,
// b zeroed. It reports false when a block scale does not fit its storage
// type (the values are too large for the format).
type blockEncoder func(x []float32, b []byte) bool

// Quantize converts src to type t with reference quantizers: Q4_0, Q4_1,
// Q5_0, Q5_1, Q8_0, Q8_1 and Q8_K follow ggml's quantize_row_*_ref exactly;
// the other K-quants search for sub-block scales by least squares (simpler
// than ggml's search, same format). len(src) must be a multiple of the
// block size; block types reject NaN and ±Inf, and values so large that a
// block scale overflows half precision. A tensor of rows whose length is a
// multiple of the block size may be quantized in one call.
func Quantize(t Type, src []float32) ([]byte, error) {
	enc := traits[t].quant
	if enc == nil {
		return nil, fmt.Errorf("gguf: quantize to %s: %w", t, ErrBadType)
	}
	size, err := t.RowSize(len(src))
	if err != nil {
		return nil, fmt.Errorf("%w: %w", err, ErrBadLength)
	}
	bs, ts := t.BlockSize(), t.TypeSize()
	out := make([]byte, size)
	for i := range len(src) / bs {
		x := src[i*bs : (i+1)*bs]
		if bs > 1 {
			for j, v := range x {
				if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
					return nil, fmt.Errorf("gguf: quantize to %s: element %d is %v: %w", t, i*bs+j, v, ErrNotFinite)
				}
			}
		}
		if !enc(x, out[i*ts:(i+1)*ts]) {
			return nil, fmt.Errorf("gguf: quantize to %s: block %d (elements %d..%d): values too large for the format's scale: %w", t, i, i*bs, (i+1)*bs-1, ErrNotFinite)
		}
	}
	return out, nil
}

func quantF32(x []float32, b []byte) bool {
	binary.LittleEndian.PutUint32(b, math.Float32bits(x[0]))
	return true
}

func quantF16(x []float32, b []byte) bool {
	binary.LittleEndian.PutUint16(b, F32ToF16(x[0]))
	return true
}

func quantBF16(x []float32, b []byte) bool {
	binary.LittleEndian.PutUint16(b, F32ToBF16(x[0]))
	return true
}

func quantF64(x []float32, b []byte) bool {
	binary.LittleEndian.PutUint64(b, math.Float64bits(float64(x[0])))
	return true
}

// putF16 stores v as a half at b[0:2] and reports whether it is finite.
func putF16(b []byte, v float32) bool {
	h := F32ToF16(v)
	binary.LittleEndian.PutUint16(b, h)
	return h&0x7c00 != 0x7c00
}

// signedMax returns the element of largest magnitude (the first one on ties)
// and that magnitude.
func signedMax(x []float32) (m, amax float32) {
	for _, v := range x {
		if a := float32(math.Abs(float64(v))); a > amax {
			amax, m = a, v
		}
	}
	return m, amax
}

// minMax returns the smallest and largest element.
func minMax(x []float32) (lo, hi float32) {
	lo, hi = math.MaxFloat32, -math.MaxFloat32
	for _, v := range x {
		lo, hi = min(lo, v), max(hi, v)
	}
	return lo, hi
}

// inverse is 1/d, or 0 when d is 0.
func inverse(d float32) float32 {
	if d == 0 {
		return 0
	}
	return 1 / d
}

// quantSym32 is quantize_row_q4_0_ref / q5_0_ref: d = max/-half, q =
// min(2·half-1, trunc(x/d + half + 0.5)). It returns d and the codes.
func quantSym32(x []float32, half float32, q *[32]uint8) float32 {
	m, _ := signedMax(x)
	d := m / -half
	id := inverse(d)
	top := int(2*half - 1)
	for j, v := range x {
		q[j] = uint8(min(top, int(float32(v*id)+(half+0.5))))
	}
	return d
}

// quantAsym32 is quantize_row_q4_1_ref / q5_1_ref: d = (max-min)/levels,
// q = min(levels, trunc((x-min)/d + 0.5)). It returns d, min and the codes.
func quantAsym32(x []float32, levels float32, q *[32]uint8) (d, lo float32) {
	lo, hi := minMax(x)
	d = (hi - lo) / levels
	id := inverse(d)
	for j, v := range x {
		q[j] = uint8(min(int(levels), int(float32((v-lo)*id)+0.5)))
	}
	return d, lo
}

// packNibbles stores q[j] | q[j+16]<<4 in qs[j], and the 5th bits in the
// returned qh (bit j for element j).
func packNibbles(q *[32]uint8, qs []byte) (qh uint32) {
	for j := range 16 {
		qs[j] = q[j]&0xf | q[j+16]&0xf<<4
	}
	for j, v := range q {
		qh |= uint32(v>>4&1) << j
	}
	return qh
}

func quantQ4_0(x []float32, b []byte) bool {
	var q [32]uint8
	d := quantSym32(x, 8, &q)
	packNibbles(&q, b[2:18])
	return putF16(b, d)
}

func quantQ4_1(x []float32, b []byte) bool {
	var q [32]uint8
	d, lo := quantAsym32(x, 15, &q)
	packNibbles(&q, b[4:20])
	return putF16(b, d) && putF16(b[2:], lo)
}

func quantQ5_0(x []float32, b []byte) bool {
	var q [32]uint8
	d := quantSym32(x, 16, &q)
	binary.LittleEndian.PutUint32(b[2:], packNibbles(&q, b[6:22]))
	return putF16(b, d)
}

func quantQ5_1(x []float32, b []byte) bool {
	var q [32]uint8
	d, lo := quantAsym32(x, 31, &q)
	binary.LittleEndian.PutUint32(b[4:], packNibbles(&q, b[8:24]))
	return putF16(b, d) && putF16(b[2:], lo)
}

// quantInt8 is the shared part of quantize_row_q8_0_ref / q8_1_ref:
// d = amax/127, q = round(x/d) (half away from zero). It returns d and Σq.
func quantInt8(x []float32, qs []byte) (d float32, sum int) {
	_, amax := signedMax(x)
	d = amax / 127
	id := inverse(d)
	for j, v := range x {
		q := int8(math.Round(float64(float32(v * id))))
		qs[j] = byte(q)
		sum += int(q)
	}
	return d, sum
}

func quantQ8_0(x []float32, b []byte) bool {
	d, _ := quantInt8(x, b[2:34])
	return putF16(b, d)
}

func quantQ8_1(x []float32, b []byte) bool {
	d, sum := quantInt8(x, b[4:36])
	return putF16(b, d) && putF16(b[2:], float32(sum)*d)
}
