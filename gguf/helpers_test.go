package gguf

import (
	"bytes"
	"encoding/binary"
	"math"
	"path/filepath"
	"testing"

	"pagoda/internal/modelcache"
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

// sharedModel returns the path of a file under /work/shared/models.
func sharedModel(parts ...string) string {
	return filepath.Join(append([]string{"..", "..", "shared", "models"}, parts...)...)
}

// smolLMPath locates the default real model: $PAGODA_MODELS, else
// ~/.cache/pagoda/models. It fails the test when the file is missing.
func smolLMPath(t testing.TB) string {
	t.Helper()
	return modelcache.Require(t, modelcache.DefaultFile)
}

// near reports whether a and b differ by at most tol.
func near(a, b, tol float64) bool { return math.Abs(a-b) <= tol }
