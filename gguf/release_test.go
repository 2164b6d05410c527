package gguf

import (
	"bytes"
	"errors"
	"testing"

	"pagoda/internal/testmodel"
)

// Release drops pages from memory, never data: the tensor reads the same
// afterwards. Bad ranges and names are errors.
func TestRelease(t *testing.T) {
	f := openFile(t, testmodel.Default(t))
	const name = "token_embd.weight" // megabytes: many whole pages
	data, ti, err := f.TensorData(name)
	if err != nil {
		t.Fatal(err)
	}
	want := bytes.Clone(data)
	if err := f.Release(name, 0, ti.Size); err != nil {
		t.Fatal(err)
	}
	if err := f.Release(name, 1000, ti.Size/2+123); err != nil { // unaligned: the pages inside
		t.Fatal(err)
	}
	if !bytes.Equal(data, want) {
		t.Fatal("tensor data changed after Release")
	}
	for _, r := range [][2]int64{{-1, 10}, {0, ti.Size + 1}, {10, 5}} {
		if err := f.Release(name, r[0], r[1]); err == nil {
			t.Errorf("Release(%d, %d) of %d bytes: no error", r[0], r[1], ti.Size)
		}
	}
	if err := f.Release("no.such.tensor", 0, 0); !errors.Is(err, ErrNotFound) {
		t.Errorf("Release of a missing tensor: %v, want ErrNotFound", err)
	}
}
