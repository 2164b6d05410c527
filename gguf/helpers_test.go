package gguf

import (
	"bytes"
	"encoding/binary"
	"math"
	"testing"
	"unicode/utf8"
)

// raw builds GGUF bytes field by field, so tests can write files the Writer
// refuses to produce.
type raw struct{ b []byte }

func (r *raw) u8(v uint8) *raw   { r.b = append(r.b, v); return r }
func (r *raw) u32(v uint32) *raw { r.b = binary.LittleEndian.AppendUint32(r.b, v); return r }
func (r *raw) u64(v uint64) *raw { r.b = binary.LittleEndian.AppendUint64(r.b, v); return r }
func (r *raw) str(s string) *raw { r.u64(uint64(len(s))); r.b = append(r.b, s...); return r }

// header writes magic, version and the two counts.
func (r *raw) header(version uint32, nTensors, nKV uint64) *raw {
	return r.u32(magic).u32(version).u64(nTensors).u64(nKV)
}

// kvU32 writes a uint32 metadata entry.
func (r *raw) kvU32(key string, v uint32) *raw { return r.str(key).u32(uint32(typeUint32)).u32(v) }

// tensor writes a tensor info.
func (r *raw) tensor(name string, dims []uint64, t Type, off uint64) *raw {
	r.str(name).u32(uint32(len(dims)))
	for _, d := range dims {
		r.u64(d)
	}
	return r.u32(uint32(t)).u64(off)
}

// padTo appends zeros up to a multiple of a, then n more bytes of data.
func (r *raw) padTo(a int) *raw {
	for len(r.b)%a != 0 {
		r.b = append(r.b, 0)
	}
	return r
}

func (r *raw) zeros(n int) *raw { r.b = append(r.b, make([]byte, n)...); return r }

// writeBytes renders w to memory.
func writeBytes(t testing.TB, w *Writer) []byte {
	t.Helper()
	var buf bytes.Buffer
	n, err := w.WriteTo(&buf)
	if err != nil {
		t.Fatalf("WriteTo: %v", err)
	}
	if n != int64(buf.Len()) {
		t.Fatalf("WriteTo reported %d bytes, wrote %d", n, buf.Len())
	}
	return buf.Bytes()
}

// f32Bytes encodes float32s little-endian.
func f32Bytes(x ...float32) []byte {
	b := make([]byte, 0, 4*len(x))
	for _, v := range x {
		b = binary.LittleEndian.AppendUint32(b, math.Float32bits(v))
	}
	return b
}

// mangle is what a text conversion does to binary data: decoding it as
// UTF-8 with each maximal ill-formed subpart replaced by U+FFFD (Python's
// data.decode("utf-8", "replace"), the Unicode practice), then encoding
// the text again.
func mangle(data []byte) []byte {
	out := make([]byte, 0, len(data)+len(data)/4)
	for len(data) > 0 {
		r, n := utf8.DecodeRune(data)
		if r == utf8.RuneError && n == 1 { // ill-formed (an encoded U+FFFD has n == 3)
			out = utf8.AppendRune(out, utf8.RuneError)
			data = data[illFormedPrefix(data):]
			continue
		}
		out = append(out, data[:n]...)
		data = data[n:]
	}
	return out
}

// illFormedPrefix is the length of the maximal subpart of data's first
// (ill-formed) sequence: the longest prefix that a valid sequence could
// start with, and at least 1.
func illFormedPrefix(data []byte) int {
	size := 0
	switch b := data[0]; {
	case b >= 0xC2 && b <= 0xDF:
		size = 2
	case b >= 0xE0 && b <= 0xEF:
		size = 3
	case b >= 0xF0 && b <= 0xF4:
		size = 4
	}
	for n := min(len(data), size-1); n > 1; n-- {
		// Continuation bytes 0x80 complete any valid prefix.
		if utf8.Valid(append(append([]byte(nil), data[:n]...), bytes.Repeat([]byte{0x80}, size-n)...)) {
			return n
		}
	}
	return 1
}

// near reports whether a and b differ by at most tol.
func near(a, b, tol float64) bool { return math.Abs(a-b) <= tol }

// mustRoundTrip quantizes x to typ and dequantizes it back, failing the
// test on either error; it returns the quantized bytes and the values.
func mustRoundTrip(t *testing.T, typ Type, x []float32) ([]byte, []float32) {
	t.Helper()
	q, err := Quantize(typ, x)
	if err != nil {
		t.Fatal(err)
	}
	y := make([]float32, len(x))
	if err := Dequantize(typ, q, y); err != nil {
		t.Fatal(err)
	}
	return q, y
}

// openFile opens the GGUF file at path for the test, closed at its end.
func openFile(t *testing.T, path string) *File {
	t.Helper()
	f, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}
