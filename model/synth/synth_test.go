package synth

import (
	"math"
	"math/rand/v2"
	"testing"

	"pagoda/gguf"
	"pagoda/internal/testmodel"
)

func TestShapes(t *testing.T) {
	headDims := map[string]int{"llama-3.2-3b": 128, "qwen3-0.6b": 128, "qwen3-1.7b": 128, "qwen3-4b": 128,
		"qwen3-30b-a3b": 128, "gemma-3-270m": 256, "gemma-3-1b": 256, "gemma-3-4b": 256, "phi-4-mini": 128}
	for _, name := range Shapes() {
		t.Run(name, func(t *testing.T) {
			s, err := Lookup(name)
			if err != nil {
				t.Fatal(err)
			}
			if err := s.Validate(); err != nil {
				t.Fatal(err)
			}
			want := 64 // the other listed models
			if hd, ok := headDims[name]; ok {
				want = hd
			}
			if s.HeadDim() != want {
				t.Fatalf("head dim %d, want %d", s.HeadDim(), want)
			}
			if s.Vocab == "" {
				t.Fatal("no default vocabulary")
			}
		})
	}
	if _, err := Lookup("TinyLlama-1.1B"); err != nil {
		t.Fatalf("lookup is not case-insensitive: %v", err)
	}
	if _, err := Lookup("gpt-5"); err == nil {
		t.Fatal("unknown shape accepted")
	}
}

func TestParseDims(t *testing.T) {
	cases := []struct {
		arch, in string
		ok       bool
	}{
		{"llama", "64,128,2,4,2,300", true},
		{"llama", "64,128,2,4", false},
		{"llama", "64,128,2,5,2,300", false}, // 64 dims over 5 heads
		{"llama", "64,128,2,4,3,300", false}, // 4 heads over 3 KV heads
		{"llama", "64,x,2,4,2,300", false},
		{"llama", "64,-1,2,4,2,300", false},
		{"llama", "64,128,2,4,2,300,32", true}, // a head size apart (key_length), rotated whole
		{"qwen2", "64,128,2,4,2,300", true},
		{"qwen3", "64,128,2,4,2,300,32", true}, // head size 32 ≠ 64/4
		{"qwen3", "64,128,2,4,2,300,7", false}, // odd head size
		{"gemma3", "64,128,2,4,1,300", true},
		{"phi3", "64,128,2,4,2,300", true},     // 12 of 16 dims rotated
		{"phi3", "64,128,2,4,2,300,32", false}, // heads × head size ≠ dim
		{"phi3", "40,128,2,4,2,300", false},    // 30/4 = 7 rotated dims: odd
		{"mamba", "64,128,2,4,2,300", false},
		{"llama3", "64,128,2,4,2,300", true},
		{"qwen3moe", "64,32,2,4,2,300", true}, // 16 experts of 32, 4 per token
	}
	for _, c := range cases {
		t.Run(c.arch+"/"+c.in, func(t *testing.T) {
			s, err := ParseArchDims(c.arch, c.in)
			if (err == nil) != c.ok {
				t.Fatalf("ParseArchDims(%q, %q) = %+v, %v; want ok=%v", c.arch, c.in, s, err, c.ok)
			}
			want := c.arch
			if want == "llama3" {
				want = "llama"
			}
			if err == nil && s.Arch != want {
				t.Fatalf("arch %q, want %q", s.Arch, want)
			}
		})
	}
	if s, err := ParseDims("64,128,2,4,2,300"); err != nil || s.Arch != "llama" || s.Vocab != "" || s.Llama3Rope != nil || s.HeadSize != 0 {
		t.Fatalf("ParseDims: %+v, %v; want a plain llama shape with no default vocabulary", s, err)
	}
	if s, err := ParseArchDims("llama3", "64,128,2,4,2,300"); err != nil || s.Arch != "llama" || s.Vocab != "llama-bpe" || s.Llama3Rope == nil || s.HeadSize != 16 {
		t.Fatalf("llama3: %+v, %v; want a llama shape with Llama 3.2's RoPE scaling and vocabulary", s, err)
	}
}

// TestLlama3RopeFreqs: high frequencies are kept, low ones divided by the
// factor, and the ramp between is monotone.
func TestLlama3RopeFreqs(t *testing.T) {
	s, _ := Lookup("llama-3.2-1b")
	f := s.Llama3Rope.ropeFreqs(s.HeadDim(), s.RopeTheta)
	if len(f) != 32 || f[0] != 1 || f[31] != 32 {
		t.Fatalf("factors %v: want 32 of them from 1 to 32", f)
	}
	for i := 1; i < len(f); i++ {
		if f[i] < f[i-1] {
			t.Fatalf("factor %d = %v below factor %d = %v", i, f[i], i-1, f[i-1])
		}
	}
}

// errBound is the largest |dequantized − source| a type may produce on a
// block whose largest magnitude is amax and whose values span [lo, hi]:
// half a quantization step plus the rounding of the half-precision scale
// (relative 2⁻¹¹, or 2⁻²⁵ absolute below half precision's normal range)
// times the largest quant, for the 32-element formats (a whole step for
// Q4_0/Q5_0, whose extreme value on the far side is clamped); about one
// step for the K-quants, whose sub-block scales are themselves quantized.
func errBound(t gguf.Type, amax, lo, hi float64) float64 {
	const sub = 0x1p-25 // half the smallest half-precision subnormal
	switch t {
	case gguf.F32:
		return 0
	case gguf.F16:
		return amax*0x1p-11 + sub
	case gguf.BF16:
		return amax * 0x1p-8
	case gguf.Q8_0:
		return 0.6*amax/127 + 127*sub
	case gguf.Q4_0:
		return 1.01*amax/8 + 8*sub
	case gguf.Q5_0:
		return 1.01*amax/16 + 16*sub
	case gguf.Q4_1:
		return 0.55*(hi-lo)/15 + math.Abs(lo)*0x1p-10 + 16*sub
	case gguf.Q5_1:
		return 0.55*(hi-lo)/31 + math.Abs(lo)*0x1p-10 + 32*sub
	}
	k := map[gguf.Type]float64{gguf.Q2_K: 0.6, gguf.Q3_K: 0.35, gguf.Q4_K: 0.2, gguf.Q5_K: 0.1, gguf.Q6_K: 0.05}[t]
	return k*amax + 64*sub
}

// checkRoundTrip dequantizes data and compares it with src block by block.
func checkRoundTrip(t *testing.T, typ gguf.Type, src []float32, data []byte) {
	t.Helper()
	got := make([]float32, len(src))
	if err := gguf.Dequantize(typ, data, got); err != nil {
		t.Fatal(err)
	}
	bs := typ.BlockSize()
	if bs == 1 {
		bs = 32 // per-element formats: bound per group of 32
	}
	for b := 0; b < len(src); b += bs {
		x := src[b:min(b+bs, len(src))] // a per-element tensor may end in a short group
		lo, hi, amax := float64(x[0]), float64(x[0]), 0.0
		for _, v := range x {
			lo, hi, amax = min(lo, float64(v)), max(hi, float64(v)), max(amax, math.Abs(float64(v)))
		}
		bound := errBound(typ, amax, lo, hi)
		for i, v := range x {
			if e := math.Abs(float64(got[b+i]) - float64(v)); e > bound {
				t.Fatalf("%v: element %d: %v round-trips to %v, error %g > bound %g", typ, b+i, v, got[b+i], e, bound)
			}
		}
	}
}

// TestQuantizeErrorBounds: every type's quantize → dequantize error stays
// within its bound, on normal data at several scales and on skewed data.
func TestQuantizeErrorBounds(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	for _, typ := range Types() {
		t.Run(typ.String(), func(t *testing.T) {
			for trial := range 20 {
				x := make([]float32, 1024)
				scale := math.Exp(r.NormFloat64() * 3)
				for i := range x {
					x[i] = float32(r.NormFloat64() * scale)
					if trial%4 == 0 {
						x[i] = float32(r.Float64() * scale) // one-signed blocks
					}
				}
				data, err := gguf.Quantize(typ, x)
				if err != nil {
					t.Fatal(err)
				}
				checkRoundTrip(t, typ, x, data)
			}
		})
	}
}

// tiny is a small llama shape whose rows suit every block size.
var tiny = Shape{Arch: "llama", Name: "tiny", Dim: 256, HiddenDim: 512, Layers: 2, Heads: 4, KVHeads: 2,
	VocabSize: 300, ContextLen: 512, RopeTheta: 10000, RMSEps: 1e-5}

// TestBuildRoundTrip writes tiny models of every type (llama, qwen2) and
// family (one 32-value and one K-quant type for the others, whose tensors
// are quantized alike), parses them back, and checks metadata, tensor
// shapes and types, and every tensor's values against its source within
// the type's bound.
func TestBuildRoundTrip(t *testing.T) {
	qwen := tiny
	qwen.Arch, qwen.Tied = "qwen2", true
	qwen.Llama3Rope = &Llama3Rope{Factor: 8, LowFreqFactor: 1, HighFreqFactor: 4, OrigCtx: 256}
	for _, typ := range Types() {
		family := []Shape{tiny, qwen}
		if typ == gguf.Q8_0 || typ == gguf.Q4_K {
			family = append(family, tinyQwen3, tinyGemma3, tinyPhi3)
		}
		for _, s := range family {
			t.Run(s.Arch+"/"+typ.String(), func(t *testing.T) {
				o := Options{Shape: s, Type: typ, Seed: 3, Workers: 2}
				f := buildParse(t, o)
				checkModel(t, f, o)
			})
		}
	}
}

func buildParse(t *testing.T, o Options) *gguf.File {
	t.Helper()
	w, err := Build(o)
	if err != nil {
		t.Fatal(err)
	}
	f, err := w.File()
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func checkModel(t *testing.T, f *gguf.File, o Options) {
	t.Helper()
	s := o.Shape
	if arch, _ := f.String("general.architecture"); arch != s.Arch {
		t.Fatalf("architecture %q", arch)
	}
	if n, _ := f.Uint(s.Arch + ".block_count"); int(n) != s.Layers {
		t.Fatalf("block_count %d", n)
	}
	ts := tensors(s)
	if len(f.Tensors) != len(ts) {
		t.Fatalf("%d tensors, want %d", len(f.Tensors), len(ts))
	}
	for _, want := range ts {
		data, info, err := f.TensorData(want.name)
		if err != nil {
			t.Fatal(err)
		}
		typ := gguf.F32
		if isMatrix(want) {
			typ = o.Type
		}
		if info.Type != typ || len(info.Dims) != len(want.dims) || info.Dims[0] != want.dims[0] {
			t.Fatalf("%s: %v %v, want %v %v", want.name, info.Type, info.Dims, typ, want.dims)
		}
		checkRoundTrip(t, info.Type, source(want, o.Seed), data)
	}
}

// TestBuildRejects: K-quants need rows of 256 values; unknown types fail.
func TestBuildRejects(t *testing.T) {
	small := tiny
	small.Dim, small.Heads, small.KVHeads = 96, 2, 1
	if _, err := Build(Options{Shape: small, Type: gguf.Q4_K}); err == nil {
		t.Fatal("Q4_K with 96-value rows accepted")
	}
	if _, err := Build(Options{Shape: tiny, Type: gguf.Q8_K}); err == nil {
		t.Fatal("Q8_K weights accepted")
	}
}

// TestVocabFromDefaultModel copies SmolLM2's tokenizer: the vocabulary
// size follows its token count.
func TestVocabFromDefaultModel(t *testing.T) {
	v, err := gguf.Open(testmodel.Default(t))
	if err != nil {
		t.Fatalf("%v (run `make model`)", err)
	}
	defer v.Close()
	o := Options{Shape: tiny, Type: gguf.Q8_0, Vocab: v, Seed: 1}
	f := buildParse(t, o)
	toks, _ := f.Strings("tokenizer.ggml.tokens")
	if len(toks) != 49152 {
		t.Fatalf("%d tokens", len(toks))
	}
	if model, _ := f.String("tokenizer.ggml.model"); model != "gpt2" {
		t.Fatalf("tokenizer model %q", model)
	}
	info, _ := f.TensorInfo("token_embd.weight")
	if info.Dims[1] != 49152 {
		t.Fatalf("embeddings %v, want 49152 rows", info.Dims)
	}
}
