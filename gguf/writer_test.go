package gguf

import (
	"bytes"
	"errors"
	"io"
	"math"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// allValues has one value of every encodable kind, in insertion order.
var allValues = []KV{
	{"u8", uint8(200)}, {"i8", int8(-100)}, {"u16", uint16(60000)}, {"i16", int16(-30000)},
	{"u32", uint32(4000000000)}, {"i32", int32(-2000000000)}, {"u64", uint64(math.MaxUint64)},
	{"i64", int64(math.MinInt64)}, {"f32", float32(-1.25)}, {"f64", math.Pi}, {"t", true}, {"f", false},
	{"s", "héllo"}, {"empty", ""},
	{"a.u8", []uint8{1, 2, 255}}, {"a.i8", []int8{-1, 0, 1}}, {"a.u16", []uint16{65535}}, {"a.i16", []int16{-2}},
	{"a.u32", []uint32{7, 8}}, {"a.i32", []int32{-7, 8}}, {"a.u64", []uint64{1 << 63}}, {"a.i64", []int64{-1 << 62}},
	{"a.f32", []float32{0.5, float32(math.Inf(-1))}}, {"a.f64", []float64{-0.25}}, {"a.bool", []bool{true, false, true}},
	{"a.str", []string{"a", "", "ü"}}, {"a.empty", []string{}},
	{"a.nested", []any{[]int32{1, 2}, []string{"x"}, []any{[]bool{true}}, []uint8{}}},
}

func TestWriterRoundTrip(t *testing.T) {
	w := NewWriter()
	for _, kv := range allValues {
		w.AddKV(kv.Key, kv.Value)
	}
	w.AddKV("u8", uint8(201)) // replaces, keeps the first position
	q8, err := Quantize(Q8_0, make([]float32, 64))
	if err != nil {
		t.Fatal(err)
	}
	tensors := []struct {
		name string
		t    Type
		dims []int
		data []byte
	}{
		{"a.f32", F32, []int{3}, f32Bytes(1, 2, 3)},
		{"b.q8", Q8_0, []int{32, 2}, q8},
		{"c.f16", F16, []int{5, 1, 1, 2}, bytes.Repeat([]byte{0, 0x3c}, 10)},
	}
	for _, tc := range tensors {
		if err := w.AddTensor(tc.name, tc.t, tc.dims, tc.data); err != nil {
			t.Fatal(err)
		}
	}
	f, err := Parse(writeBytes(t, w))
	if err != nil {
		t.Fatal(err)
	}
	if inMemory, err := w.File(); err != nil || !bytes.Equal(inMemory.data, f.data) {
		t.Errorf("File: %v, or its bytes differ from WriteTo's", err)
	}
	if f.Version != 3 || len(f.KV) != len(allValues) {
		t.Fatalf("version %d, %d KVs", f.Version, len(f.KV))
	}
	for i, kv := range allValues {
		want := kv.Value
		if kv.Key == "u8" {
			want = uint8(201)
		}
		if f.KV[i].Key != kv.Key || !reflect.DeepEqual(f.KV[i].Value, want) {
			t.Errorf("KV %d: %s=%#v, want %s=%#v", i, f.KV[i].Key, f.KV[i].Value, kv.Key, want)
		}
	}
	for i, tc := range tensors {
		data, ti, err := f.TensorData(tc.name)
		if err != nil || f.Tensors[i].Name != tc.name || ti.Type != tc.t || !slices.Equal(ti.Dims, tc.dims) || !bytes.Equal(data, tc.data) {
			t.Errorf("tensor %s: %+v %v", tc.name, ti, err)
		}
		if ti.Offset%32 != 0 || (f.DataOffset+ti.Offset)%32 != 0 {
			t.Errorf("tensor %s at unaligned offset %d", tc.name, ti.Offset)
		}
	}
}

func TestWriterAlignmentAndFile(t *testing.T) {
	w := NewWriter()
	w.AddKV("general.architecture", "test")
	w.AddKV("general.alignment", uint32(64))
	for i, n := range []int{1, 17, 64} {
		data := f32Bytes(make([]float32, n)...)
		data[0] = byte(i + 1)
		if err := w.AddTensor(strings.Repeat("x", i+1), F32, []int{n}, data); err != nil {
			t.Fatal(err)
		}
	}
	path := filepath.Join(t.TempDir(), "a.gguf")
	if err := w.WriteFile(path); err != nil {
		t.Fatal(err)
	}
	f, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if f.Alignment != 64 || f.DataOffset%64 != 0 {
		t.Errorf("alignment %d, data offset %d", f.Alignment, f.DataOffset)
	}
	wantOffsets := []int64{0, 64, 192} // 4 B → 64, 68 B → 128, 256 B
	for i, ti := range f.Tensors {
		data, _, err := f.TensorData(ti.Name)
		if err != nil || ti.Offset != wantOffsets[i] || data[0] != byte(i+1) {
			t.Errorf("tensor %d: offset %d (want %d), %v", i, ti.Offset, wantOffsets[i], err)
		}
	}
	// The data section is padded to the alignment after the last tensor too.
	if size := f.DataOffset + 192 + 256; int64(len(f.data)) != size {
		t.Errorf("file size %d, want %d", len(f.data), size)
	}
}

func TestWriterErrors(t *testing.T) {
	kvCases := []struct {
		name  string
		key   string
		value any
	}{
		{"int", "n", 3},
		{"uint", "n", uint(3)},
		{"int slice", "n", []int{3}},
		{"map", "m", map[string]int{}},
		{"nil", "z", nil},
		{"mixed nested", "n", []any{[]int32{1}, int32(2)}},
		{"empty key", "", uint32(1)},
		{"alignment type", "general.alignment", int32(32)},
		{"alignment value", "general.alignment", uint32(24)},
	}
	for _, c := range kvCases {
		t.Run(c.name, func(t *testing.T) {
			w := NewWriter()
			w.AddKV(c.key, c.value)
			w.AddKV("ok", uint32(1))
			if _, err := w.WriteTo(&bytes.Buffer{}); !errors.Is(err, ErrBadValue) || !strings.Contains(err.Error(), c.key) {
				t.Errorf("WriteTo: %v, want ErrBadValue naming %q", err, c.key)
			}
			if f, err := w.File(); f != nil || !errors.Is(err, ErrBadValue) {
				t.Errorf("File: %v, %v; want nil, ErrBadValue", f, err)
			}
		})
	}
	tensorCases := []struct {
		name     string
		tname    string
		typ      Type
		dims     []int
		size     int
		sentinel error
	}{
		{"duplicate", "dup", F32, []int{1}, 4, ErrDuplicated},
		{"empty name", "", F32, []int{1}, 4, ErrInvalid},
		{"long name", strings.Repeat("n", 64), F32, []int{1}, 4, ErrInvalid},
		{"no dims", "t", F32, nil, 4, ErrInvalid},
		{"five dims", "t", F32, []int{1, 1, 1, 1, 1}, 4, ErrInvalid},
		{"zero dim", "t", F32, []int{0}, 0, ErrInvalid},
		{"negative dim", "t", F32, []int{-1}, 4, ErrInvalid},
		{"partial block", "t", Q4_0, []int{16}, 9, ErrInvalid},
		{"unknown type", "t", Type(77), []int{4}, 4, ErrBadType},
		{"short data", "t", F32, []int{4}, 15, ErrBadLength},
		{"long data", "t", Q8_0, []int{32}, 35, ErrBadLength},
	}
	for _, c := range tensorCases {
		t.Run(c.name, func(t *testing.T) {
			w := NewWriter()
			if err := w.AddTensor("dup", F32, []int{1}, make([]byte, 4)); err != nil {
				t.Fatal(err)
			}
			err := w.AddTensor(c.tname, c.typ, c.dims, make([]byte, c.size))
			if !errors.Is(err, c.sentinel) || !strings.Contains(err.Error(), "tensor") {
				t.Errorf("AddTensor: %v, want %v", err, c.sentinel)
			}
		})
	}
}

// failWriter fails after n bytes.
type failWriter struct{ n int }

var errDiskFull = errors.New("disk full")

func (w *failWriter) Write(p []byte) (int, error) {
	if len(p) > w.n {
		k := w.n
		w.n = 0
		return k, errDiskFull
	}
	w.n -= len(p)
	return len(p), nil
}

func TestWriterOutputError(t *testing.T) {
	w := NewWriter()
	if err := w.AddTensor("t", F32, []int{4096}, make([]byte, 4*4096)); err != nil {
		t.Fatal(err)
	}
	if _, err := w.WriteTo(&failWriter{n: 5000}); !errors.Is(err, errDiskFull) {
		t.Errorf("WriteTo: %v, want the writer's error", err)
	}
}

// TestWriterTensorFrom: a tensor written by its function is the same file
// as one added with its data (its function writing in pieces); a function
// that writes the wrong length, or fails, fails WriteTo.
func TestWriterTensorFrom(t *testing.T) {
	data := bytes.Repeat([]byte{1, 2, 3, 4, 5, 6, 7}, 4*10)[:4*64]
	w := NewWriter()
	w.AddKV("k", uint32(1))
	if err := w.AddTensor("a", F32, []int{64}, data); err != nil {
		t.Fatal(err)
	}
	want := writeBytes(t, w)
	errBroken := errors.New("broken")
	for _, c := range []struct {
		name  string
		write func(dst io.Writer) error
		err   error
	}{
		{"pieces", func(dst io.Writer) error {
			for i := 0; i < len(data); i += 100 {
				if _, err := dst.Write(data[i:min(i+100, len(data))]); err != nil {
					return err
				}
			}
			return nil
		}, nil},
		{"short", func(dst io.Writer) error { _, err := dst.Write(data[1:]); return err }, ErrBadLength},
		{"long", func(dst io.Writer) error { _, err := dst.Write(append(data, 0)); return err }, ErrBadLength},
		{"fails", func(io.Writer) error { return errBroken }, errBroken},
	} {
		t.Run(c.name, func(t *testing.T) {
			w := NewWriter()
			w.AddKV("k", uint32(1))
			if err := w.AddTensorFrom("a", F32, []int{64}, c.write); err != nil {
				t.Fatal(err)
			}
			if err := w.AddTensorFrom("a", F32, []int{64}, c.write); !errors.Is(err, ErrDuplicated) {
				t.Fatalf("second tensor a: %v", err)
			}
			var b bytes.Buffer
			_, err := w.WriteTo(&b)
			if !errors.Is(err, c.err) || c.err == nil && !bytes.Equal(b.Bytes(), want) {
				t.Fatalf("WriteTo: %v (want %v), same bytes %v", err, c.err, bytes.Equal(b.Bytes(), want))
			}
		})
	}
}
