package gguf

import (
	"bytes"
	"errors"
	"os"
	"strings"
	"testing"

	"pagoda/internal/testmodel"
)

// fuzzSeeds returns small valid files made with the Writer, a few broken
// ones, and the first bytes of the real files (stories260K and the
// vocabularies), the latter also text-mangled.
func fuzzSeeds(t testing.TB) [][]byte {
	var seeds [][]byte
	w := NewWriter()
	w.AddKV("general.architecture", "llama")
	seeds = append(seeds, writeBytes(t, w))

	w = NewWriter()
	for _, kv := range allValues {
		w.AddKV(kv.Key, kv.Value)
	}
	for i, typ := range []Type{F32, F16, Q4_0, Q8_0, Q4_K, Q6_K} {
		n := typ.BlockSize() * 2
		data, err := Quantize(typ, ramp(n, -1, 2/float32(n)))
		if err != nil {
			t.Fatal(err)
		}
		if err := w.AddTensor(string(rune('a'+i))+".weight", typ, []int{n / 2, 2}, data); err != nil {
			t.Fatal(err)
		}
	}
	full := writeBytes(t, w)
	seeds = append(seeds, full, full[:len(full)/2], full[:200])

	w = NewWriter()
	w.AddKV("general.alignment", uint32(64))
	if err := w.AddTensor("t", BF16, []int{3, 1, 1, 1}, make([]byte, 6)); err != nil {
		t.Fatal(err)
	}
	seeds = append(seeds, writeBytes(t, w))
	seeds = append(seeds, (&raw{}).header(2, 0, 0).b, (&raw{}).header(1, 0, 0).b, []byte("GGUF"))

	stories, err := os.ReadFile(testmodel.Stories(t))
	if err != nil {
		t.Fatal(err)
	}
	seeds = append(seeds, stories[:2048])
	for _, name := range []string{"llama-spm", "gpt-2", "phi-3", "deepseek-llm"} {
		data, err := os.ReadFile(testmodel.Vocab(t, name))
		if err != nil {
			t.Fatal(err)
		}
		data = data[:min(len(data), 2048)]
		seeds = append(seeds, data, mangle(data))
	}
	return seeds
}

// FuzzGGUF checks that Parse never panics, fails only with a FormatError,
// and that what it accepts satisfies the package invariants and survives a
// write/parse round trip unchanged.
func FuzzGGUF(f *testing.F) {
	for _, s := range fuzzSeeds(f) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		file, err := Parse(data)
		if err != nil {
			var fe *FormatError
			if !errors.As(err, &fe) {
				t.Fatalf("error %v is not a *FormatError", err)
			}
			return
		}
		checkInvariants(t, file)
		once, ok := rewrite(t, file)
		if !ok {
			return
		}
		again, err := Parse(once)
		if err != nil {
			t.Fatalf("rewritten file does not parse: %v", err)
		}
		if twice, _ := rewrite(t, again); !bytes.Equal(once, twice) {
			t.Fatal("rewriting is not idempotent")
		}
	})
}

func checkInvariants(t *testing.T, f *File) {
	if a := f.Alignment; a <= 0 || a&(a-1) != 0 || f.DataOffset%int64(a) != 0 {
		t.Fatalf("alignment %d, data offset %d", a, f.DataOffset)
	}
	for i, kv := range f.KV {
		if j := f.kvIndex[kv.Key]; j != i {
			t.Fatalf("key %q indexed at %d, is at %d", kv.Key, j, i)
		}
	}
	for _, ti := range f.Tensors {
		data, info, err := f.TensorData(ti.Name)
		if err != nil || int64(len(data)) != ti.Size || info.Offset%int64(f.Alignment) != 0 {
			t.Fatalf("tensor %q: %d bytes, %+v, %v", ti.Name, len(data), info, err)
		}
		row, err := ti.Type.RowSize(ti.Dims[0])
		if err != nil || int64(row*ti.NumElements()/ti.Dims[0]) != ti.Size {
			t.Fatalf("tensor %q: size %d, row %d, %v", ti.Name, ti.Size, row, err)
		}
	}
}

// rewrite writes f's metadata and tensors with the Writer. It reports false
// when f holds something the Writer deliberately refuses (a name too long
// for llama.cpp, general.alignment not a uint32).
func rewrite(t *testing.T, f *File) ([]byte, bool) {
	w := NewWriter()
	for _, kv := range f.KV {
		w.AddKV(kv.Key, kv.Value)
	}
	for _, ti := range f.Tensors {
		data, _, _ := f.TensorData(ti.Name)
		if err := w.AddTensor(ti.Name, ti.Type, ti.Dims, data); err != nil {
			if len(ti.Name) > maxNameLen {
				return nil, false
			}
			t.Fatalf("AddTensor(%q): %v", ti.Name, err)
		}
	}
	var buf bytes.Buffer
	if _, err := w.WriteTo(&buf); err != nil {
		if errors.Is(err, ErrBadValue) && strings.Contains(err.Error(), keyAlignment) {
			return nil, false
		}
		t.Fatal(err)
	}
	return buf.Bytes(), true
}
