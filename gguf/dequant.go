package gguf

import (
	"encoding/binary"
	"fmt"
	"math"
)

// blockDecoder dequantizes one block: len(b) == TypeSize, len(y) == BlockSize.
type blockDecoder func(b []byte, y []float32)

// The plain types' decoders: one element per block.
func decodeF32(b []byte, y []float32)  { y[0] = math.Float32frombits(binary.LittleEndian.Uint32(b)) }
func decodeF16(b []byte, y []float32)  { y[0] = F16ToF32(binary.LittleEndian.Uint16(b)) }
func decodeBF16(b []byte, y []float32) { y[0] = BF16ToF32(binary.LittleEndian.Uint16(b)) }
func decodeF64(b []byte, y []float32) {
	y[0] = float32(math.Float64frombits(binary.LittleEndian.Uint64(b)))
}
func decodeI8(b []byte, y []float32)  { y[0] = float32(int8(b[0])) }
func decodeI16(b []byte, y []float32) { y[0] = float32(int16(binary.LittleEndian.Uint16(b))) }
func decodeI32(b []byte, y []float32) { y[0] = float32(int32(binary.LittleEndian.Uint32(b))) }
func decodeI64(b []byte, y []float32) { y[0] = float32(int64(binary.LittleEndian.Uint64(b))) }

// Dequantize converts len(out) elements of type t, read from the first
// t.RowSize(len(out)) bytes of data, to float32. len(out) must be a multiple
// of the block size. The formulas are ggml's dequantize_row_*, with every
// operation rounded separately (no fused multiply-add).
func Dequantize(t Type, data []byte, out []float32) error {
	dec := traits[t].dequant
	if dec == nil {
		return fmt.Errorf("gguf: dequantize %s: %w", t, ErrBadType)
	}
	need, err := t.RowSize(len(out))
	if err != nil {
		return fmt.Errorf("%w: %w", err, ErrBadLength)
	}
	if len(data) < need {
		return fmt.Errorf("gguf: dequantize %d %s elements: need %d bytes, have %d: %w", len(out), t, need, len(data), ErrBadLength)
	}
	bs, ts := t.BlockSize(), t.TypeSize()
	for i := range len(out) / bs {
		dec(data[i*ts:(i+1)*ts], out[i*bs:(i+1)*bs])
	}
	return nil
}

// f16At reads the little-endian half at b[i:] as float32.
func f16At(b []byte, i int) float32 { return F16ToF32(binary.LittleEndian.Uint16(b[i:])) }

// Block layouts below are ggml's (ggml-common.h). Products are wrapped in
// float32() so that no platform fuses them into an FMA: results must match
// ggml's separately rounded operations bit for bit.

// Q4_0: d f16 | qs[16]. y[j] = d·(lo(qs[j])-8), y[j+16] = d·(hi(qs[j])-8).
func dequantQ4_0(b []byte, y []float32) {
	d := f16At(b, 0)
	qs := b[2:18]
	for j, q := range qs {
		y[j] = float32(int(q&0xf)-8) * d
		y[j+16] = float32(int(q>>4)-8) * d
	}
}

// Q4_1: d f16 | m f16 | qs[16]. y = d·q + m.
func dequantQ4_1(b []byte, y []float32) {
	d, m := f16At(b, 0), f16At(b, 2)
	qs := b[4:20]
	for j, q := range qs {
		y[j] = float32(float32(q&0xf)*d) + m
		y[j+16] = float32(float32(q>>4)*d) + m
	}
}

// Q5_0: d f16 | qh u32 (bit j = 5th bit of element j) | qs[16]. y = d·(q-16).
func dequantQ5_0(b []byte, y []float32) {
	d := f16At(b, 0)
	qh := binary.LittleEndian.Uint32(b[2:])
	qs := b[6:22]
	for j, q := range qs {
		h0 := byte(qh>>j&1) << 4
		h1 := byte(qh>>(j+16)&1) << 4
		y[j] = float32(int(q&0xf|h0)-16) * d
		y[j+16] = float32(int(q>>4|h1)-16) * d
	}
}

// Q5_1: d f16 | m f16 | qh u32 | qs[16]. y = d·q + m.
func dequantQ5_1(b []byte, y []float32) {
	d, m := f16At(b, 0), f16At(b, 2)
	qh := binary.LittleEndian.Uint32(b[4:])
	qs := b[8:24]
	for j, q := range qs {
		h0 := byte(qh>>j&1) << 4
		h1 := byte(qh>>(j+16)&1) << 4
		y[j] = float32(float32(q&0xf|h0)*d) + m
		y[j+16] = float32(float32(q>>4|h1)*d) + m
	}
}

// Q8_0: d f16 | qs[32] int8. y = d·q.
func dequantQ8_0(b []byte, y []float32) {
	d := f16At(b, 0)
	for j, q := range b[2:34] {
		y[j] = float32(int8(q)) * d
	}
}

// Q8_1: d f16 | s f16 (= d·Σq) | qs[32] int8. y = d·q.
func dequantQ8_1(b []byte, y []float32) {
	d := f16At(b, 0)
	for j, q := range b[4:36] {
		y[j] = float32(int8(q)) * d
	}
}
