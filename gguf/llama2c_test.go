package gguf

import (
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"slices"
	"strings"
	"testing"

	"pagoda/internal/testmodel"
)

// TestStories260KMatchesLlama2c cross-checks the reader against an encoding
// of the same weights that pagoda did not write: stories260K.gguf is the
// conversion of llama2.c's checkpoint stories260K.bin, and every GGUF
// tensor must equal the .bin array of the same name, dims and bits.
// output.weight is absent from the .bin (its classifier is shared), so the
// GGUF copy is compared with token_embd.weight. wq and wk are compared
// unpermuted: llama2.c and ggml's normal RoPE both rotate pairs (2i, 2i+1),
// so the converter did not permute their rows (the test also checks that
// the Hugging Face-style permutation would NOT match, so the equality is
// not an accident of symmetric data).
func TestStories260KMatchesLlama2c(t *testing.T) {
	bin, err := os.ReadFile(testmodel.RepoFile(t, testmodel.StoriesBin))
	if err != nil {
		t.Fatal(err)
	}
	hdr, arrays := llama2cArrays(t, bin)
	if want := [7]int{64, 172, 5, 8, 4, 512, 512}; hdr != want {
		t.Errorf("header %v, want %v", hdr, want)
	}
	if len(arrays) != 2+9*5 {
		t.Errorf("%d arrays, want 47", len(arrays))
	}
	f := openFile(t, testmodel.Stories(t))
	for _, ti := range f.Tensors {
		name := ti.Name
		if name == "output.weight" {
			name = "token_embd.weight"
		}
		a, ok := arrays[name]
		data, _, err := f.TensorData(ti.Name)
		if !ok || err != nil {
			t.Errorf("%s: in the checkpoint %v, %v", ti.Name, ok, err)
			continue
		}
		g := make([]float32, ti.NumElements())
		if err := Dequantize(ti.Type, data, g); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(a.dims, ti.Dims) || firstDiff(a.data, g) >= 0 {
			t.Errorf("%s: dims %v, GGUF %v; first different element %d", ti.Name, a.dims, ti.Dims, firstDiff(a.data, g))
		}
		heads := 0 // of a matrix RoPE rotates
		switch {
		case strings.HasSuffix(name, ".attn_q.weight"):
			heads = hdr[3]
		case strings.HasSuffix(name, ".attn_k.weight"):
			heads = hdr[4]
		}
		if heads > 0 && firstDiff(permuteHF(a.data, heads, a.dims[0]), g) < 0 {
			t.Errorf("%s: the permuted rows match too; the test cannot tell", ti.Name)
		}
	}
}

// llama2cArray is one float32 array of a llama2.c checkpoint under its GGUF
// name, dims in ggml order (dims[0] is the row length).
type llama2cArray struct {
	dims []int
	data []float32
}

// llama2cArrays splits a llama2.c legacy checkpoint: a header of 7 int32
// (dim, hidden_dim, n_layers, n_heads, n_kv_heads, vocab_size, seq_len;
// a negative vocab_size would mean an unshared classifier, which this
// fixture does not have), then float32 arrays, each kind for every layer
// in turn: token embedding, rms_att, wq, wk, wv, wo, rms_ffn, w1, w2, w3,
// rms_final, and freq_cis_real/imag (unused, not returned). The file must
// hold exactly these arrays.
func llama2cArrays(t *testing.T, b []byte) ([7]int, map[string]llama2cArray) {
	t.Helper()
	var h [7]int
	if len(b) < 4*len(h) {
		t.Fatalf("%d bytes: no header", len(b))
	}
	for i := range h {
		h[i] = int(int32(binary.LittleEndian.Uint32(b[4*i:])))
	}
	dim, hidden, layers, heads, kvHeads, vocab, seq := h[0], h[1], h[2], h[3], h[4], h[5], h[6]
	if vocab <= 0 || dim%heads != 0 || heads%kvHeads != 0 {
		t.Fatalf("unexpected header %v", h)
	}
	head := dim / heads
	out := map[string]llama2cArray{}
	off := 4 * len(h)
	take := func(name string, dims ...int) {
		n := 1
		for _, d := range dims {
			n *= d
		}
		if off+4*n > len(b) {
			t.Fatalf("%s runs past the end of the file", name)
		}
		a := llama2cArray{dims: dims, data: make([]float32, n)}
		for i := range a.data {
			a.data[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[off+4*i:]))
		}
		out[name], off = a, off+4*n
	}
	take("token_embd.weight", dim, vocab)
	for _, k := range []struct {
		suffix string
		dims   []int
	}{
		{"attn_norm.weight", []int{dim}}, {"attn_q.weight", []int{dim, dim}},
		{"attn_k.weight", []int{dim, kvHeads * head}}, {"attn_v.weight", []int{dim, kvHeads * head}},
		{"attn_output.weight", []int{dim, dim}}, {"ffn_norm.weight", []int{dim}},
		{"ffn_gate.weight", []int{dim, hidden}}, {"ffn_down.weight", []int{hidden, dim}},
		{"ffn_up.weight", []int{dim, hidden}},
	} {
		for l := range layers {
			take(fmt.Sprintf("blk.%d.%s", l, k.suffix), k.dims...)
		}
	}
	take("output_norm.weight", dim)
	take("freq_cis_real", head/2, seq)
	take("freq_cis_imag", head/2, seq)
	delete(out, "freq_cis_real")
	delete(out, "freq_cis_imag")
	if off != len(b) {
		t.Fatalf("%d bytes after the last array", len(b)-off)
	}
	return h, out
}

// permuteHF reorders the rows of a (heads·head, cols) matrix the way
// llama.cpp's converter does for Hugging Face checkpoints: within each head,
// rows (0, head/2, 1, head/2+1, …) become (0, 1, 2, …).
func permuteHF(w []float32, heads, cols int) []float32 {
	rows := len(w) / cols
	head := rows / heads
	out := make([]float32, len(w))
	for h := range heads {
		for i := range head / 2 {
			for half := range 2 {
				src := h*head + half*head/2 + i
				dst := h*head + 2*i + half
				copy(out[dst*cols:(dst+1)*cols], w[src*cols:(src+1)*cols])
			}
		}
	}
	return out
}

// firstDiff returns the first index where a and b differ in bits (or in
// length), or -1.
func firstDiff(a, b []float32) int {
	for i := range min(len(a), len(b)) {
		if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
			return i
		}
	}
	if len(a) != len(b) {
		return min(len(a), len(b))
	}
	return -1
}
