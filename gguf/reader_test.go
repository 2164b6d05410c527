package gguf

import (
	"bytes"
	"errors"
	"math"
	"os"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"pagoda/internal/testmodel"
)

func TestStories260K(t *testing.T) {
	f := openFile(t, testmodel.Stories(t))
	if f.Version != 3 || f.Alignment != 32 || f.DataOffset%32 != 0 {
		t.Errorf("version %d alignment %d data offset %d", f.Version, f.Alignment, f.DataOffset)
	}
	wantKeys := []string{"tokenizer.ggml.tokens", "tokenizer.ggml.scores", "tokenizer.ggml.token_type",
		"tokenizer.ggml.model", "general.architecture", "general.name", "tokenizer.ggml.unknown_token_id",
		"tokenizer.ggml.bos_token_id", "tokenizer.ggml.eos_token_id", "tokenizer.ggml.seperator_token_id",
		"tokenizer.ggml.padding_token_id", "llama.context_length", "llama.embedding_length",
		"llama.feed_forward_length", "llama.attention.head_count", "llama.attention.head_count_kv",
		"llama.block_count", "llama.rope.dimension_count", "llama.attention.layer_norm_rms_epsilon"}
	var keys []string
	for _, kv := range f.KV {
		keys = append(keys, kv.Key)
	}
	if strings.Join(keys, ",") != strings.Join(wantKeys, ",") {
		t.Errorf("keys in file order:\n got %v\nwant %v", keys, wantKeys)
	}
	if s, _ := f.String("general.architecture"); s != "llama" {
		t.Errorf("architecture %q", s)
	}
	for key, want := range map[string]uint64{"llama.block_count": 5, "llama.embedding_length": 64,
		"llama.feed_forward_length": 172, "llama.attention.head_count": 8, "llama.attention.head_count_kv": 4,
		"llama.context_length": 2048, "tokenizer.ggml.bos_token_id": 1, "tokenizer.ggml.eos_token_id": 2} {
		if got, ok := f.Uint(key); !ok || got != want {
			t.Errorf("%s = %d, %v; want %d", key, got, ok, want)
		}
	}
	if eps, ok := f.Float("llama.attention.layer_norm_rms_epsilon"); !ok || !near(eps, 1e-5, 1e-12) {
		t.Errorf("rms epsilon %v %v", eps, ok)
	}
	tokens, _ := f.Strings("tokenizer.ggml.tokens")
	scores, _ := f.Float32s("tokenizer.ggml.scores")
	types, _ := f.Int32s("tokenizer.ggml.token_type")
	if len(tokens) != 512 || len(scores) != 512 || len(types) != 512 || tokens[1] != "<s>" || tokens[2] != "</s>" {
		t.Errorf("vocab: %d tokens, %d scores, %d types", len(tokens), len(scores), len(types))
	}
	checkStoriesTensors(t, f)
}

func checkStoriesTensors(t *testing.T, f *File) {
	if len(f.Tensors) != 48 {
		t.Fatalf("%d tensors, want 48 (3 + 5 layers × 9)", len(f.Tensors))
	}
	want := map[string][]int{"token_embd.weight": {64, 512}, "output.weight": {64, 512}, "output_norm.weight": {64},
		"blk.0.attn_q.weight": {64, 64}, "blk.0.attn_k.weight": {64, 32}, "blk.4.ffn_down.weight": {172, 64},
		"blk.4.ffn_gate.weight": {64, 172}, "blk.2.ffn_norm.weight": {64}}
	for name, dims := range want {
		ti, ok := f.TensorInfo(name)
		if !ok || !slices.Equal(ti.Dims, dims) || ti.Type != F32 {
			t.Errorf("%s: %+v %v, want dims %v F32", name, ti, ok, dims)
		}
	}
	for _, ti := range f.Tensors {
		data, _, err := f.TensorData(ti.Name)
		if err != nil || len(data) != 4*ti.NumElements() || int64(len(data)) != ti.Size || ti.Type != F32 {
			t.Fatalf("%s: %d bytes, %v", ti.Name, len(data), err)
		}
		out := make([]float32, ti.NumElements())
		if err := Dequantize(F32, data, out); err != nil {
			t.Fatal(err)
		}
		for _, v := range out {
			if math.IsNaN(float64(v)) || math.Abs(float64(v)) > 100 {
				t.Fatalf("%s: implausible weight %v", ti.Name, v)
			}
		}
	}
}

// The vocab files are read as llama.cpp's test data. A copy whose binary
// bytes were replaced by U+FFFD (a text conversion: the whole file is then
// valid UTF-8, which no GGUF with float metadata is) must fail to parse
// with a FormatError, not panic or allocate wildly: such copies were once
// handed to the project (they are what mangle makes of the pristine files).
func TestVocabFiles(t *testing.T) {
	cases := []struct {
		name, arch, model string
		tokens            int
	}{
		{"llama-spm", "llama", "llama", 32000},
		{"phi-3", "phi3", "llama", 32064},
		{"gpt-2", "gpt2", "gpt2", 50257},
		{"deepseek-llm", "llama", "gpt2", 102400},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			path := testmodel.Vocab(t, c.name)
			f, err := Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			arch, _ := f.String("general.architecture")
			model, _ := f.String("tokenizer.ggml.model")
			tokens, _ := f.Strings("tokenizer.ggml.tokens")
			if arch != c.arch || model != c.model || len(tokens) != c.tokens || len(f.Tensors) != 0 {
				t.Errorf("arch %q model %q, %d tokens, %d tensors; want %q %q %d 0", arch, model, len(tokens), len(f.Tensors), c.arch, c.model, c.tokens)
			}
			if types, ok := f.Int32s("tokenizer.ggml.token_type"); !ok || len(types) != len(tokens) {
				t.Errorf("%d token types for %d tokens", len(types), len(tokens))
			}
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			damaged := mangle(data)
			if !utf8.Valid(damaged) || !bytes.Contains(damaged, []byte("\uFFFD")) {
				t.Fatal("mangle left invalid UTF-8 or replaced nothing")
			}
			var fe *FormatError
			if _, err := Parse(damaged); err == nil || !errors.As(err, &fe) {
				t.Fatalf("text-mangled copy parsed or failed without a FormatError: %v", err)
			}
		})
	}
}

func TestSmolLM2(t *testing.T) {
	f := openFile(t, testmodel.Default(t))
	if len(f.Tensors) != 272 {
		t.Errorf("%d tensors, want 272", len(f.Tensors))
	}
	count := map[Type]int{}
	for _, ti := range f.Tensors {
		count[ti.Type]++
	}
	if count[Q4_1] != 210 || count[F32] != 61 || count[Q8_0] != 1 || len(count) != 3 {
		t.Errorf("type counts %v, want Q4_1 210, F32 61, Q8_0 1", count)
	}
	emb, ok := f.TensorInfo("token_embd.weight")
	if !ok || emb.Type != Q8_0 || !slices.Equal(emb.Dims, []int{576, 49152}) {
		t.Errorf("token_embd.weight: %+v", emb)
	}
	if n, _ := f.Uint("llama.block_count"); n != 30 {
		t.Errorf("block_count %d", n)
	}
	if pre, _ := f.String("tokenizer.ggml.pre"); pre != "smollm" {
		t.Errorf("tokenizer.ggml.pre %q", pre)
	}
	if tokens, _ := f.Strings("tokenizer.ggml.tokens"); len(tokens) != 49152 {
		t.Errorf("%d tokens", len(tokens))
	}
	if theta, _ := f.Float("llama.rope.freq_base"); !near(theta, 100000, 1e-9) {
		t.Errorf("rope theta %v", theta)
	}
	// Dequantize one row of each weight type and check it is plausible.
	for _, name := range []string{"token_embd.weight", "blk.0.attn_q.weight", "blk.29.ffn_down.weight", "output_norm.weight"} {
		data, ti, err := f.TensorData(name)
		if err != nil {
			t.Fatal(err)
		}
		row := make([]float32, ti.Dims[0])
		if err := Dequantize(ti.Type, data, row); err != nil {
			t.Fatal(err)
		}
		var sum float64
		for _, v := range row {
			if math.IsNaN(float64(v)) || math.Abs(float64(v)) > 50 {
				t.Fatalf("%s: implausible value %v", name, v)
			}
			sum += math.Abs(float64(v))
		}
		if sum == 0 {
			t.Errorf("%s: first row is all zeros", name)
		}
	}
}

func TestTensorDataAfterClose(t *testing.T) {
	f, err := Open(testmodel.Stories(t))
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if _, _, err := f.TensorData("output_norm.weight"); !errors.Is(err, ErrClosed) {
		t.Errorf("TensorData after Close: %v, want ErrClosed", err)
	}
	if _, _, err := f.TensorData("nope"); !errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), `"nope"`) {
		t.Errorf("missing tensor: %v", err)
	}
	if s, ok := f.String("general.architecture"); !ok || s != "llama" {
		t.Errorf("metadata after Close: %q %v", s, ok)
	}
}

func TestOpenErrors(t *testing.T) {
	dir := t.TempDir()
	empty := dir + "/empty.gguf"
	if err := os.WriteFile(empty, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(empty); !errors.Is(err, ErrTruncated) || !strings.Contains(err.Error(), empty) {
		t.Errorf("empty file: %v", err)
	}
	if _, err := Open(dir + "/missing.gguf"); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
	bad := dir + "/bad.gguf"
	if err := os.WriteFile(bad, []byte("GGML\x03\x00\x00\x00"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(bad); !errors.Is(err, ErrBadMagic) {
		t.Errorf("bad magic: %v", err)
	}
}

// mangle replaces maximal ill-formed subparts as Python's
// decode("utf-8", "replace") does (values computed with Python 3.11).
func TestMangle(t *testing.T) {
	const r = "\uFFFD"
	for in, want := range map[string]string{
		"\xf0\x90A":       r + "A",
		"\xe0\x80":        r + r,
		"\xed\xa0\x80":    r + r + r,
		"\xf4\x8f\xbf":    r,
		"a\xff\xc3":       "a" + r + r,
		"\uFFFD\u00e9 ok": "\uFFFD\u00e9 ok",
	} {
		if got := string(mangle([]byte(in))); got != want {
			t.Errorf("mangle(%q) = %q, want %q", in, got, want)
		}
	}
}
