package llama2c

import (
	"encoding/binary"
	"errors"
	"math"
	"strings"
	"testing"

	"pagoda/gguf"
	"pagoda/internal/testmodel"
)

// TestStories260KMatchesGGUF checks that every tensor of stories260K.gguf
// equals the .bin tensor of the same name bit for bit. output.weight is
// absent from the .bin (its classifier is shared), so the GGUF copy is
// compared with token_embd.weight. wq and wk are compared unpermuted: the
// converter did not permute their rows (the test also checks that the
// Hugging Face-style permutation would NOT match, so the equality is not an
// accident of symmetric data).
func TestStories260KMatchesGGUF(t *testing.T) {
	c, err := Load(testmodel.RepoFile(t, testmodel.StoriesBin))
	if err != nil {
		t.Fatal(err)
	}
	want := Config{Dim: 64, HiddenDim: 172, NumLayers: 5, NumHeads: 8, NumKVHeads: 4, VocabSize: 512, SeqLen: 512, SharedClassifier: true}
	if c.Config != want {
		t.Errorf("config %+v, want %+v", c.Config, want)
	}
	if len(c.Tensors) != 2+9*5 {
		t.Errorf("%d tensors, want 47", len(c.Tensors))
	}
	f, err := gguf.Open(testmodel.Stories(t))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, ti := range f.Tensors {
		name := ti.Name
		if name == "output.weight" && c.Config.SharedClassifier {
			name = "token_embd.weight"
		}
		bt, ok := c.Tensor(name)
		if !ok {
			t.Errorf("%s: not in the checkpoint", ti.Name)
			continue
		}
		g := ggufFloats(t, f, ti.Name)
		if !intsEqual(bt.Dims, ti.Dims) || len(bt.Data) != len(g) {
			t.Errorf("%s: dims %v, GGUF %v", ti.Name, bt.Dims, ti.Dims)
			continue
		}
		if i := firstDiff(bt.Data, g); i >= 0 {
			t.Errorf("%s: element %d is %v, GGUF has %v", ti.Name, i, bt.Data[i], g[i])
		}
		if strings.HasSuffix(name, "attn_q.weight") || strings.HasSuffix(name, "attn_k.weight") {
			heads := c.Config.NumHeads
			if strings.HasSuffix(name, "attn_k.weight") {
				heads = c.Config.NumKVHeads
			}
			if firstDiff(permuteHF(bt.Data, heads, bt.Dims[0]), g) < 0 {
				t.Errorf("%s: the permuted rows match too; the test cannot tell", ti.Name)
			}
		}
	}
}

func ggufFloats(t *testing.T, f *gguf.File, name string) []float32 {
	t.Helper()
	data, ti, err := f.TensorData(name)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]float32, ti.NumElements())
	if err := gguf.Dequantize(ti.Type, data, out); err != nil {
		t.Fatal(err)
	}
	return out
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

func firstDiff(a, b []float32) int {
	for i := range a {
		if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
			return i
		}
	}
	return -1
}

func intsEqual(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// headerOnly is a header followed by 64 zero floats, for invalid headers.
func headerOnly(h [7]int32) []byte {
	var b []byte
	for _, v := range h {
		b = binary.LittleEndian.AppendUint32(b, uint32(v))
	}
	return append(b, make([]byte, 256)...)
}

// synth builds a checkpoint whose i-th float (after the header) is i, so
// each tensor's first element is its offset in floats. h must be valid.
func synth(h [7]int32, extraFloats int) []byte {
	c := Config{Dim: int(h[0]), HiddenDim: int(h[1]), NumLayers: int(h[2]), NumHeads: int(h[3]),
		NumKVHeads: int(h[4]), VocabSize: int(max(h[5], -h[5])), SeqLen: int(h[6]), SharedClassifier: h[5] > 0}
	var n int64
	for a := range layout(c) {
		n += a.elems
	}
	b := make([]byte, 0, headerSize+4*(int(n)+extraFloats))
	for _, v := range h {
		b = binary.LittleEndian.AppendUint32(b, uint32(v))
	}
	for i := range int(n) + extraFloats {
		b = binary.LittleEndian.AppendUint32(b, math.Float32bits(float32(i)))
	}
	return b
}

func TestSyntheticLayout(t *testing.T) {
	// dim 8, hidden 12, 2 layers, 4 heads (head 2), 2 kv heads, vocab 10 unshared, seq 3.
	c, err := Parse(synth([7]int32{8, 12, 2, 4, 2, -10, 3}, 0))
	if err != nil {
		t.Fatal(err)
	}
	if c.Config.SharedClassifier || c.Config.VocabSize != 10 || c.Config.HeadDim() != 2 {
		t.Errorf("config %+v", c.Config)
	}
	// Offsets in floats: embedding 80, then per kind × 2 layers.
	want := []struct {
		name  string
		dims  []int
		first float32
	}{
		{"token_embd.weight", []int{8, 10}, 0},
		{"blk.0.attn_norm.weight", []int{8}, 80},
		{"blk.1.attn_norm.weight", []int{8}, 88},
		{"blk.0.attn_q.weight", []int{8, 8}, 96},
		{"blk.1.attn_q.weight", []int{8, 8}, 160},
		{"blk.0.attn_k.weight", []int{8, 4}, 224},
		{"blk.0.attn_v.weight", []int{8, 4}, 288},
		{"blk.0.attn_output.weight", []int{8, 8}, 352},
		{"blk.0.ffn_norm.weight", []int{8}, 480},
		{"blk.0.ffn_gate.weight", []int{8, 12}, 496},
		{"blk.0.ffn_down.weight", []int{12, 8}, 688},
		{"blk.1.ffn_up.weight", []int{8, 12}, 976},
		{"output_norm.weight", []int{8}, 1072},
		{"output.weight", []int{8, 10}, 1080 + 2*3}, // after 2 × freq_cis (seq 3 × head/2 1)
	}
	for _, w := range want {
		tn, ok := c.Tensor(w.name)
		if !ok || !intsEqual(tn.Dims, w.dims) || len(tn.Data) != tn.Dims[0]*max(1, dimAt(tn.Dims, 1)) || tn.Data[0] != w.first {
			t.Errorf("%s: %v %v, first %v; want dims %v first %v", w.name, ok, tn.Dims, first(tn.Data), w.dims, w.first)
		}
	}
	if len(c.Tensors) != 2+9*2+1 {
		t.Errorf("%d tensors", len(c.Tensors))
	}
}

func dimAt(d []int, i int) int {
	if i < len(d) {
		return d[i]
	}
	return 0
}

func first(x []float32) float32 {
	if len(x) == 0 {
		return float32(math.NaN())
	}
	return x[0]
}

func TestParseErrors(t *testing.T) {
	good := [7]int32{8, 12, 2, 4, 2, 10, 3}
	with := func(i int, v int32) [7]int32 { h := good; h[i] = v; return h }
	full := synth(good, 0)
	cases := []struct {
		name     string
		data     []byte
		sentinel error
		msg      string
	}{
		{"empty", nil, ErrTruncated, "header"},
		{"short header", full[:27], ErrTruncated, "header"},
		{"versioned export", headerOnly([7]int32{versionMagic, 2, 8, 2, 4, 2, 10}), ErrUnsupported, "ak42"},
		{"zero dim", headerOnly(with(0, 0)), ErrInvalid, "dim = 0"},
		{"negative layers", headerOnly(with(2, -1)), ErrInvalid, "n_layers = -1"},
		{"zero vocab", headerOnly(with(5, 0)), ErrInvalid, "vocab_size = 0"},
		{"huge seq", headerOnly(with(6, 1<<30)), ErrInvalid, "seq_len"},
		{"dim not multiple of heads", headerOnly(with(3, 3)), ErrInvalid, "n_heads 3"},
		{"heads not multiple of kv", headerOnly(with(4, 3)), ErrInvalid, "n_kv_heads 3"},
		{"odd head size", headerOnly(with(3, 8)), ErrInvalid, "odd"},
		{"truncated weights", full[:headerSize+4*100], ErrTruncated, `tensor "blk.0.attn_q.weight": data [412, 668) runs past end of file (size 428)`},
		{"truncated classifier", synth(with(5, -10), 0)[:len(full)+4], ErrTruncated, `tensor "output.weight"`},
		{"trailing bytes", synth(good, 1), ErrInvalid, "4 bytes after"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse(c.data)
			if !errors.Is(err, c.sentinel) || !strings.Contains(err.Error(), c.msg) {
				t.Errorf("got %v, want %v mentioning %q", err, c.sentinel, c.msg)
			}
		})
	}
}

func FuzzParse(f *testing.F) {
	f.Add(synth([7]int32{8, 12, 2, 4, 2, 10, 3}, 0))
	f.Add(synth([7]int32{8, 12, 1, 2, 1, -4, 2}, 0))
	f.Add(synth([7]int32{2, 1, 1, 1, 1, 1, 1}, 3)[:40])
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := Parse(data)
		if err != nil {
			return
		}
		var n int
		for _, tn := range c.Tensors {
			size := 1
			for _, d := range tn.Dims {
				size *= d
			}
			if size != len(tn.Data) {
				t.Fatalf("%s: dims %v, %d floats", tn.Name, tn.Dims, len(tn.Data))
			}
			n += size
		}
		if 4*n > len(data) {
			t.Fatalf("%d floats from %d bytes", n, len(data))
		}
	})
}
