package gguf

import (
	"errors"
	"strings"
	"testing"
)

// malformedCase is a broken file and what the error must say.
type malformedCase struct {
	name     string
	data     []byte
	sentinel error
	msg      []string // substrings of the error message
}

func TestParseMalformed(t *testing.T) {
	for _, c := range append(malformedHeaderCases(), malformedTensorCases()...) {
		t.Run(c.name, func(t *testing.T) {
			f, err := Parse(c.data)
			if err == nil {
				t.Fatalf("parsed: %+v", f)
			}
			if !errors.Is(err, c.sentinel) {
				t.Errorf("error %q does not wrap %v", err, c.sentinel)
			}
			var fe *FormatError
			if !errors.As(err, &fe) {
				t.Errorf("error %q is not a *FormatError", err)
			}
			for _, m := range c.msg {
				if !strings.Contains(err.Error(), m) {
					t.Errorf("error %q does not mention %q", err, m)
				}
			}
		})
	}
}

// malformedHeaderCases break the header and the metadata.
func malformedHeaderCases() []malformedCase {
	r := func() *raw { return &raw{} }
	// nested builds an array of arrays `levels` deep, innermost empty uint8.
	nested := func(levels int) *raw {
		x := r().header(3, 0, 1).str("deep").u32(uint32(typeArray))
		for range levels - 1 {
			x.u32(uint32(typeArray)).u64(1)
		}
		return x.u32(uint32(typeUint8)).u64(0)
	}
	return []malformedCase{
		{"empty", nil, ErrTruncated, []string{"magic"}},
		{"bad magic", []byte("GGJT\x03\x00\x00\x00"), ErrBadMagic, []string{"magic"}},
		{"version 1", r().header(1, 0, 0).b, ErrVersion, []string{"version 1"}},
		{"version 4", r().header(4, 0, 0).b, ErrVersion, []string{"version 4"}},
		{"big-endian", r().u32(magic).u32(0x03000000).u64(0).u64(0).b, ErrVersion, []string{"big-endian"}},
		{"truncated counts", r().u32(magic).u32(3).u64(0).b, ErrTruncated, []string{"metadata count"}},
		{"absurd tensor count", r().header(3, 1<<50, 0).b, ErrTruncated, []string{"tensor count"}},
		{"absurd kv count", r().header(3, 0, 1<<40).b, ErrTruncated, []string{"metadata count"}},
		{"key length past end", r().header(3, 0, 1).u64(1000).zeros(20).b, ErrTruncated, []string{"metadata entry 0", "key length 1000"}},
		{"string value past end", r().header(3, 0, 1).str("k").u32(uint32(typeString)).u64(1 << 60).b, ErrTruncated, []string{`key "k"`, "string length"}},
		{"absurd array count", r().header(3, 0, 1).str("arr").u32(uint32(typeArray)).u32(uint32(typeUint32)).u64(1 << 40).zeros(64).b,
			ErrTruncated, []string{`key "arr"`, "1099511627776"}},
		{"absurd string array count", r().header(3, 0, 1).str("toks").u32(uint32(typeArray)).u32(uint32(typeString)).u64(1 << 20).zeros(64).b,
			ErrTruncated, []string{`key "toks"`, "string"}},
		{"string element past end", r().header(3, 0, 1).str("toks").u32(uint32(typeArray)).u32(uint32(typeString)).u64(2).str("a").u64(99).b,
			ErrTruncated, []string{`key "toks"`, "array element 1"}},
		{"unknown value type", r().header(3, 0, 1).str("k").u32(13).b, ErrInvalid, []string{`key "k"`, "unknown value type 13"}},
		{"unknown array element type", r().header(3, 0, 1).str("k").u32(uint32(typeArray)).u32(77).u64(0).b, ErrInvalid, []string{`key "k"`, "77"}},
		{"arrays nested too deep", nested(maxArrayDepth + 1).b, ErrInvalid, []string{`key "deep"`, "nested"}},
		{"empty key", r().header(3, 0, 1).str("").u32(uint32(typeUint8)).u8(1).b, ErrInvalid, []string{"empty key"}},
		{"duplicate key", r().header(3, 0, 2).kvU32("a", 1).kvU32("a", 2).b, ErrDuplicated, []string{`key "a"`}},
		{"alignment not a power of two", r().header(3, 0, 1).kvU32("general.alignment", 48).b, ErrInvalid, []string{"general.alignment", "48"}},
		{"alignment zero", r().header(3, 0, 1).kvU32("general.alignment", 0).b, ErrInvalid, []string{"general.alignment"}},
		{"alignment a string", r().header(3, 0, 1).str("general.alignment").u32(uint32(typeString)).str("32").b, ErrInvalid, []string{"general.alignment"}},
	}
}

// malformedTensorCases break the tensor infos and data.
func malformedTensorCases() []malformedCase {
	r := func() *raw { return &raw{} }
	f32Tensor := func(name string, n, off uint64) *raw { return r().header(3, 1, 0).tensor(name, []uint64{n}, F32, off) }
	return []malformedCase{
		{"five dims", r().header(3, 1, 0).tensor("t", []uint64{1, 1, 1, 1, 1}, F32, 0).b, ErrInvalid, []string{`tensor "t"`, "5 dims"}},
		{"zero dims", r().header(3, 1, 0).tensor("t", nil, F32, 0).b, ErrInvalid, []string{`tensor "t"`, "0 dims"}},
		{"zero dim", r().header(3, 1, 0).tensor("t", []uint64{4, 0}, F32, 0).b, ErrInvalid, []string{`tensor "t"`, "dim 1 is 0"}},
		{"negative dim", r().header(3, 1, 0).tensor("t", []uint64{1 << 63}, F32, 0).b, ErrInvalid, []string{`tensor "t"`, "dim 0"}},
		{"dims overflow", r().header(3, 1, 0).tensor("t", []uint64{1 << 32, 1 << 32}, F32, 0).b, ErrInvalid, []string{`tensor "t"`, "overflows"}},
		{"bytes overflow", r().header(3, 1, 0).tensor("t", []uint64{1 << 62}, F32, 0).b, ErrInvalid, []string{`tensor "t"`, "overflows"}},
		{"unknown tensor type", r().header(3, 1, 0).tensor("t", []uint64{4}, Type(99), 0).b, ErrBadType, []string{`tensor "t"`, "99"}},
		{"removed type Q4_2", r().header(3, 1, 0).tensor("t", []uint64{32}, Type(4), 0).b, ErrBadType, []string{`tensor "t"`}},
		{"row not whole blocks", r().header(3, 1, 0).tensor("t", []uint64{48, 2}, Q4_0, 0).b, ErrInvalid, []string{`tensor "t"`, "48", "block size 32"}},
		{"misaligned offset", f32Tensor("t", 4, 4).padTo(32).zeros(64).b, ErrInvalid, []string{`tensor "t"`, "offset 4", "alignment 32"}},
		{"empty tensor name", f32Tensor("", 4, 0).padTo(32).zeros(32).b, ErrInvalid, []string{"tensor info 0", "empty"}},
		{"truncated tensor info", r().header(3, 1, 0).str("t").u32(2).u64(4).b, ErrTruncated, []string{`tensor "t"`, "dim"}},
		{"data past end", f32Tensor("blk.0.attn_q.weight", 8, 0).padTo(32).zeros(16).b, ErrTruncated,
			[]string{`gguf: tensor "blk.0.attn_q.weight": data [96, 128) runs past end of file (size 112)`}},
		{"offset past end", f32Tensor("t", 8, 1<<62).padTo(32).zeros(32).b, ErrTruncated, []string{`tensor "t"`, "runs past end of file"}},
		{"huge offset", f32Tensor("t", 8, 1<<63).padTo(32).zeros(32).b, ErrInvalid, []string{`tensor "t"`, "overflows"}},
		{"duplicate tensor name", r().header(3, 2, 0).tensor("t", []uint64{8}, F32, 0).tensor("t", []uint64{8}, F32, 32).padTo(32).zeros(64).b,
			ErrDuplicated, []string{`tensor "t"`}},
		{"overlapping tensors", r().header(3, 2, 0).tensor("a", []uint64{16}, F32, 0).tensor("b", []uint64{8}, F32, 32).padTo(32).zeros(64).b,
			ErrInvalid, []string{`tensor "b"`, `overlaps tensor "a"`}},
		{"same offset", r().header(3, 2, 0).tensor("a", []uint64{8}, F32, 32).tensor("b", []uint64{8}, F32, 32).padTo(32).zeros(64).b,
			ErrInvalid, []string{"overlaps"}},
	}
}

// TestParseValidEdgeCases checks files that are unusual but valid.
func TestParseValidEdgeCases(t *testing.T) {
	r := func() *raw { return &raw{} }
	cases := []struct {
		name  string
		data  []byte
		check func(*File) bool
	}{
		{"version 2, nothing", r().header(2, 0, 0).b, func(f *File) bool { return f.Version == 2 && f.DataOffset == 32 }},
		{"no tensors, data offset past end", r().header(3, 0, 1).kvU32("x", 7).b, func(f *File) bool { v, _ := f.Uint("x"); return v == 7 }},
		{"alignment 1", r().header(3, 1, 1).kvU32("general.alignment", 1).tensor("t", []uint64{2}, F16, 0).zeros(4).b,
			func(f *File) bool { return f.Alignment == 1 && f.Tensors[0].Size == 4 }},
		{"tensors out of offset order", r().header(3, 2, 0).tensor("a", []uint64{8}, F32, 32).tensor("b", []uint64{8}, F32, 0).padTo(32).zeros(64).b,
			func(f *File) bool { return f.Tensors[0].Name == "a" && f.Tensors[1].Offset == 0 }},
		{"non-zero bool", r().header(3, 0, 1).str("b").u32(uint32(typeBool)).u8(2).b, func(f *File) bool { v, ok := f.Bool("b"); return v && ok }},
		{"max nesting", func() []byte {
			x := r().header(3, 0, 1).str("deep").u32(uint32(typeArray))
			for range maxArrayDepth - 1 {
				x.u32(uint32(typeArray)).u64(1)
			}
			return x.u32(uint32(typeUint8)).u64(0).b
		}(), func(f *File) bool { _, ok := f.Value("deep"); return ok }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f, err := Parse(c.data)
			if err != nil {
				t.Fatal(err)
			}
			if !c.check(f) {
				t.Errorf("unexpected result: %+v", f)
			}
		})
	}
}

// TestParseTruncated cuts a valid file at every length: each prefix must
// fail with ErrTruncated.
func TestParseTruncated(t *testing.T) {
	w := NewWriter()
	w.AddKV("general.architecture", "llama")
	w.AddKV("tokens", []string{"a", "bc", ""})
	w.AddKV("nested", []any{[]int32{1, 2}, []string{"x"}})
	w.AddKV("f", float64(1.5))
	if err := w.AddTensor("w", Q8_0, []int{32, 2}, make([]byte, 68)); err != nil {
		t.Fatal(err)
	}
	if err := w.AddTensor("b", F32, []int{3}, f32Bytes(1, 2, 3)); err != nil {
		t.Fatal(err)
	}
	full := writeBytes(t, w)
	if _, err := Parse(full); err != nil {
		t.Fatal(err)
	}
	// The last tensor's padding is not needed to parse.
	last := 0
	for n := range full {
		_, err := Parse(full[:n])
		if err == nil {
			last = n
			continue
		}
		if !errors.Is(err, ErrTruncated) {
			t.Errorf("prefix %d: %v, want ErrTruncated", n, err)
		}
	}
	if f, _ := Parse(full); last != 0 && int64(last) < f.DataOffset+f.Tensors[1].Offset+f.Tensors[1].Size {
		t.Errorf("prefix %d parsed although it cuts tensor data", last)
	}
}
