package gguf

import (
	"encoding/binary"
	"errors"
	"testing"
)

// Half-precision bit patterns used to build blocks by hand.
const (
	h025 = 0x3400 // 0.25
	h05  = 0x3800 // 0.5
	h1   = 0x3c00 // 1
	h2   = 0x4000 // 2
	hm1  = 0xbc00 // -1
)

// block assembles a block from little-endian pieces: uint16 (a half),
// uint32, float32-as-uint32 via f32Bytes, or raw []byte.
func block(parts ...any) []byte {
	var b []byte
	for _, p := range parts {
		switch v := p.(type) {
		case uint16:
			b = binary.LittleEndian.AppendUint16(b, v)
		case uint32:
			b = binary.LittleEndian.AppendUint32(b, v)
		case []byte:
			b = append(b, v...)
		default:
			panic("block: bad part")
		}
	}
	return b
}

// seq returns n bytes f(0), f(1), ….
func seq(n int, f func(i int) byte) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = f(i)
	}
	return b
}

// Scales of the K-quant blocks below, and their hand-packed bytes.
var (
	k4Scales = [8]uint8{1, 2, 17, 63, 5, 33, 48, 60}
	k4Mins   = [8]uint8{0, 3, 40, 7, 63, 16, 31, 2}
	// j<4: s[j] = sc[j] | sc[j+4]>>4<<6, s[j+4] = m[j] | m[j+4]>>4<<6,
	// s[j+8] = sc[j+4]&15 | (m[j+4]&15)<<4.
	k4Packed = []byte{0x01, 0x82, 0xD1, 0xFF, 0xC0, 0x43, 0x68, 0x07, 0xF5, 0x01, 0xF0, 0x2C}
	// Q3_K 6-bit scales (j·37)%64 = 0, 37, 10, …: low nibbles in s[j%8]
	// (nibble j/8), high 2 bits in s[8+j%4] (bits 2·(j/4)).
	q3Scales = [16]int{0, 37, 10, 47, 20, 57, 30, 3, 40, 13, 50, 23, 60, 33, 6, 43}
	q3Packed = []byte{0x80, 0xD5, 0x2A, 0x7F, 0xC4, 0x19, 0x6E, 0xB3, 0xE4, 0x8E, 0x34, 0x92}
)

func TestScalePacking(t *testing.T) {
	for j := range 8 {
		if sc, m := scaleMinK4(j, k4Packed); sc != k4Scales[j] || m != k4Mins[j] {
			t.Errorf("scaleMinK4(%d) = %d, %d; want %d, %d", j, sc, m, k4Scales[j], k4Mins[j])
		}
	}
	packed := make([]byte, 12)
	packScaleMinK4(&k4Scales, &k4Mins, packed)
	if string(packed) != string(k4Packed) {
		t.Errorf("packScaleMinK4 = % x, want % x", packed, k4Packed)
	}
	for j := range 16 {
		if got := scaleQ3K(j, q3Packed); got != q3Scales[j]-32 {
			t.Errorf("scaleQ3K(%d) = %d, want %d", j, got, q3Scales[j]-32)
		}
	}
}

// dequantCase is a hand-built block and the value of each element.
type dequantCase struct {
	t    Type
	data []byte
	want func(e int) float64
}

func dequantCases() map[string]dequantCase {
	q4k := func(e int) int { return (e*7 + 3) % 16 } // the 4-bit code of element e
	q5k := func(e int) int { return (e*11 + 5) % 32 }
	q6k := func(e int) int { return (e*5 + 1) % 64 }
	return map[string]dequantCase{
		"F32":  {F32, f32Bytes(1.5, -2), func(e int) float64 { return []float64{1.5, -2}[e] }},
		"F16":  {F16, block(uint16(h1), uint16(0xc000), uint16(0x7bff), uint16(0x0001)), func(e int) float64 { return []float64{1, -2, 65504, 1.0 / (1 << 24)}[e] }},
		"BF16": {BF16, block(uint16(0x3f80), uint16(0xc0a0)), func(e int) float64 { return []float64{1, -5}[e] }},
		"I8":   {I8, []byte{0xff, 7}, func(e int) float64 { return []float64{-1, 7}[e] }},
		"I32":  {I32, block(uint32(0xfffffffe)), func(int) float64 { return -2 }},
		// qs[j] = j | (15-j)<<4: element j has code j, element j+16 code 15-j.
		"Q4_0": {Q4_0, block(uint16(h05), seq(16, func(j int) byte { return byte(j | (15-j)<<4) })),
			func(e int) float64 { return 0.5 * float64([]int{e, 31 - e}[e/16]-8) }},
		"Q4_1": {Q4_1, block(uint16(h025), uint16(hm1), seq(16, func(j int) byte { return byte(j | (15-j)<<4) })),
			func(e int) float64 { return 0.25*float64([]int{e, 31 - e}[e/16]) - 1 }},
		// qh = 0xF0F0F0F0: elements 4..7, 12..15, 20..23, 28..31 get the 5th bit.
		"Q5_0": {Q5_0, block(uint16(h1), uint32(0xF0F0F0F0), seq(16, func(j int) byte { return byte(j | (15-j)<<4) })),
			func(e int) float64 { return float64([]int{e, 31 - e}[e/16] - 16 + 16*(e/4%2)) }},
		"Q5_1": {Q5_1, block(uint16(h05), uint16(h2), uint32(0xF0F0F0F0), seq(16, func(j int) byte { return byte(j | (15-j)<<4) })),
			func(e int) float64 { return 0.5*float64([]int{e, 31 - e}[e/16]+16*(e/4%2)) + 2 }},
		"Q8_0": {Q8_0, block(uint16(h2), seq(32, func(j int) byte { return byte(int8(j*8 - 128)) })),
			func(e int) float64 { return 2 * float64(e*8-128) }},
		"Q8_1": {Q8_1, block(uint16(h05), uint16(0), seq(32, func(j int) byte { return byte(int8(127 - j*8)) })),
			func(e int) float64 { return 0.5 * float64(127-e*8) }},
		"Q8_K": {Q8_K, block(f32Bytes(0.25), seq(256, func(j int) byte { return byte(int8(j - 128)) }), make([]byte, 32)),
			func(e int) float64 { return 0.25 * float64(e-128) }},
		// Q2_K: scales[s] = (s%16) | (15-s)<<4, code of element e is e%4 at
		// bits 2·(e%128/32) of qs[32·(e/128) + e%32].
		"Q2_K": {Q2_K, block(seq(16, func(s int) byte { return byte(s | (15-s)<<4) }),
			seq(64, func(i int) byte { return byte(i%4 | i%4<<2 | i%4<<4 | i%4<<6) }), uint16(h05), uint16(h025)),
			func(e int) float64 { s := e / 16; return 0.5*float64(s)*float64(e%32%4) - 0.25*float64(15-s) }},
		// Q3_K: 3-bit code u of element e is (e/3)%8: low 2 bits in qs as Q2_K,
		// high bit in hmask[e%32] bit 4·(e/128)+e%128/32; value u-4.
		"Q3_K": {Q3_K, q3kBlock(func(e int) int { return e / 3 % 8 }), func(e int) float64 { return 0.5 * float64(q3Scales[e/16]-32) * float64(e/3%8-4) }},
		"Q4_K": {Q4_K, block(uint16(h05), uint16(h025), k4Packed, seq(128, func(i int) byte {
			c, l := i/32, i%32 // byte i holds elements 64c+l (low) and 64c+32+l (high)
			return byte(q4k(64*c+l) | q4k(64*c+32+l)<<4)
		})), func(e int) float64 {
			return 0.5*float64(k4Scales[e/32])*float64(q4k(e)) - 0.25*float64(k4Mins[e/32])
		}},
		"Q5_K": {Q5_K, block(uint16(h1), uint16(h05), k4Packed,
			seq(32, func(l int) byte { // bit e/32 of qh[e%32] is bit 4 of element e
				var h byte
				for s := range 8 {
					h |= byte(q5k(32*s+l)>>4) << s
				}
				return h
			}),
			seq(128, func(i int) byte {
				c, l := i/32, i%32
				return byte(q5k(64*c+l)&15 | (q5k(64*c+32+l)&15)<<4)
			})), func(e int) float64 {
			return float64(k4Scales[e/32])*float64(q5k(e)) - 0.5*float64(k4Mins[e/32])
		}},
		"Q6_K": {Q6_K, q6kBlock(q6k), func(e int) float64 { return 0.5 * float64(e/16-8) * float64(q6k(e)-32) }},
	}
}

// q3kBlock builds a Q3_K block with d = 0.5, scales q3Packed and codes u(e).
func q3kBlock(u func(e int) int) []byte {
	hmask, qs := make([]byte, 32), make([]byte, 64)
	for e := range 256 {
		n, j, l := e/128, e%128/32, e%32
		qs[32*n+l] |= byte(u(e)&3) << (2 * j)
		hmask[l] |= byte(u(e)>>2) << (4*n + j)
	}
	return block(hmask, qs, q3Packed, uint16(h05))
}

// q6kBlock builds a Q6_K block with d = 0.5, scales s-8 and codes q(e):
// element e = 128n + 32g + l has its low nibble in nibble g/2 of
// ql[64n + 32(g%2) + l] and its high 2 bits at bits 2g of qh[32n + l].
func q6kBlock(q func(e int) int) []byte {
	ql, qh := make([]byte, 128), make([]byte, 64)
	for e := range 256 {
		n, g, l := e/128, e%128/32, e%32
		ql[64*n+32*(g%2)+l] |= byte(q(e)&15) << (4 * (g / 2))
		qh[32*n+l] |= byte(q(e)>>4) << (2 * g)
	}
	return block(ql, qh, seq(16, func(s int) byte { return byte(int8(s - 8)) }), uint16(h05))
}

func TestDequantizeKnownValues(t *testing.T) {
	for name, c := range dequantCases() {
		t.Run(name, func(t *testing.T) {
			if len(c.data)%c.t.TypeSize() != 0 {
				t.Fatalf("test block is %d bytes, %s blocks are %d", len(c.data), c.t, c.t.TypeSize())
			}
			n := len(c.data) / c.t.TypeSize() * c.t.BlockSize()
			out := make([]float32, n)
			if err := Dequantize(c.t, c.data, out); err != nil {
				t.Fatal(err)
			}
			for e, got := range out {
				if want := c.want(e); !near(float64(got), want, 0) {
					t.Fatalf("element %d = %v, want %v", e, got, want)
				}
			}
		})
	}
}

func TestDequantizeErrors(t *testing.T) {
	cases := []struct {
		name     string
		t        Type
		data     int
		out      int
		sentinel error
	}{
		{"unsupported type", Type(99), 32, 8, ErrBadType},
		{"partial block", Q4_0, 18, 16, ErrBadLength},
		{"short data", Q8_0, 33, 32, ErrBadLength},
		{"short K data", Q6_K, 209, 256, ErrBadLength},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if err := Dequantize(c.t, make([]byte, c.data), make([]float32, c.out)); !errors.Is(err, c.sentinel) {
				t.Errorf("got %v, want %v", err, c.sentinel)
			}
		})
	}
	// Extra data is allowed: only the first RowSize bytes are read.
	out := make([]float32, 32)
	if err := Dequantize(Q8_0, make([]byte, 100), out); err != nil {
		t.Errorf("longer data: %v", err)
	}
}
