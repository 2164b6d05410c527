// Package synth writes GGUF models with random weights at the shapes of
// real models, for benchmarks that need a model of a given size without
// its weights: the architecture metadata of the real model, a real
// vocabulary copied from another GGUF file, and every matrix quantized by
// pagoda's own quantizers (gguf.Quantize).
package synth

import (
	"fmt"
	"math"
	"sort"
	"strings"
)

// Shape is the architecture of a model: what its GGUF metadata and tensor
// dimensions say.
type Shape struct {
	Arch       string // general.architecture: "llama" or "qwen2" (biased Q, K, V)
	Name       string
	Dim        int // embedding length
	HiddenDim  int // feed-forward length
	Layers     int
	Heads      int
	KVHeads    int
	VocabSize  int // rows of the embeddings; the vocabulary file may change it
	ContextLen int
	RopeTheta  float32
	RMSEps     float32
	Tied       bool // the output head reuses the token embeddings
	// Llama3Rope, if set, is Llama 3's frequency scaling, written as the
	// rope_freqs.weight tensor as llama.cpp's converter does.
	Llama3Rope *Llama3Rope
	// Vocab names the vocabulary file Load looks for by default: "default"
	// for the default model, else a llama.cpp ggml-vocab-NAME.gguf.
	Vocab string
}

// Llama3Rope is the "llama3" RoPE frequency scaling.
type Llama3Rope struct {
	Factor, LowFreqFactor, HighFreqFactor float64
	OrigCtx                               int
}

// HeadDim is the per-head dimension.
func (s Shape) HeadDim() int { return s.Dim / s.Heads }

// Validate checks that the dimensions are positive and consistent.
func (s Shape) Validate() error {
	switch {
	case s.Arch != "llama" && s.Arch != "qwen2":
		return fmt.Errorf("synth: architecture %q (want llama or qwen2)", s.Arch)
	case s.Dim <= 0 || s.HiddenDim <= 0 || s.Layers <= 0 || s.Heads <= 0 || s.KVHeads <= 0 || s.VocabSize <= 0:
		return fmt.Errorf("synth: dims must be positive: %+v", s)
	case s.Dim%s.Heads != 0 || s.Heads%s.KVHeads != 0 || s.HeadDim()%2 != 0:
		return fmt.Errorf("synth: %d dims over %d heads (%d KV heads) do not give an even head size shared by whole groups", s.Dim, s.Heads, s.KVHeads)
	case s.ContextLen <= 0 || !(s.RopeTheta > 0) || !(s.RMSEps > 0):
		return fmt.Errorf("synth: context length, rope theta and RMS epsilon must be positive")
	}
	return nil
}

// shapes are the real models synth knows by name (from their Hugging Face
// configs).
var shapes = map[string]Shape{
	"smollm2-135m": {Arch: "llama", Name: "SmolLM2-135M", Dim: 576, HiddenDim: 1536, Layers: 30, Heads: 9, KVHeads: 3,
		VocabSize: 49152, ContextLen: 8192, RopeTheta: 100000, RMSEps: 1e-5, Tied: true, Vocab: "default"},
	"smollm2-360m": {Arch: "llama", Name: "SmolLM2-360M", Dim: 960, HiddenDim: 2560, Layers: 32, Heads: 15, KVHeads: 5,
		VocabSize: 49152, ContextLen: 8192, RopeTheta: 100000, RMSEps: 1e-5, Tied: true, Vocab: "default"},
	"qwen2.5-0.5b": {Arch: "qwen2", Name: "Qwen2.5-0.5B", Dim: 896, HiddenDim: 4864, Layers: 24, Heads: 14, KVHeads: 2,
		VocabSize: 151936, ContextLen: 32768, RopeTheta: 1e6, RMSEps: 1e-6, Tied: true, Vocab: "qwen2"},
	"tinyllama-1.1b": {Arch: "llama", Name: "TinyLlama-1.1B", Dim: 2048, HiddenDim: 5632, Layers: 22, Heads: 32, KVHeads: 4,
		VocabSize: 32000, ContextLen: 2048, RopeTheta: 10000, RMSEps: 1e-5, Vocab: "llama-spm"},
	"llama-3.2-1b": {Arch: "llama", Name: "Llama-3.2-1B", Dim: 2048, HiddenDim: 8192, Layers: 16, Heads: 32, KVHeads: 8,
		VocabSize: 128256, ContextLen: 131072, RopeTheta: 500000, RMSEps: 1e-5, Tied: true, Vocab: "llama-bpe",
		Llama3Rope: &Llama3Rope{Factor: 32, LowFreqFactor: 1, HighFreqFactor: 4, OrigCtx: 8192}},
}

// Shapes lists the known shape names, sorted.
func Shapes() []string {
	var names []string
	for n := range shapes {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Lookup returns the shape called name (case-insensitive).
func Lookup(name string) (Shape, error) {
	s, ok := shapes[strings.ToLower(name)]
	if !ok {
		return Shape{}, fmt.Errorf("synth: unknown shape %q (known: %s)", name, strings.Join(Shapes(), ", "))
	}
	return s, nil
}

// ParseDims builds a llama shape from "dim,hidden,layers,heads,kvheads,vocab".
func ParseDims(s string) (Shape, error) {
	var v [6]int
	parts := strings.Split(s, ",")
	if len(parts) != len(v) {
		return Shape{}, fmt.Errorf("synth: --dims %q: want dim,hidden,layers,heads,kvheads,vocab", s)
	}
	for i, p := range parts {
		if _, err := fmt.Sscan(strings.TrimSpace(p), &v[i]); err != nil || v[i] <= 0 {
			return Shape{}, fmt.Errorf("synth: --dims %q: %q is not a positive integer", s, p)
		}
	}
	sh := Shape{Arch: "llama", Name: "synthetic", Dim: v[0], HiddenDim: v[1], Layers: v[2], Heads: v[3], KVHeads: v[4],
		VocabSize: v[5], ContextLen: 4096, RopeTheta: 10000, RMSEps: 1e-5, Tied: true}
	return sh, sh.Validate()
}

// ropeFreqs returns Llama 3's per-frequency divisors (rope_freqs.weight).
func (r *Llama3Rope) ropeFreqs(headDim int, theta float32) []float32 {
	out := make([]float32, headDim/2)
	lowWave := float64(r.OrigCtx) / r.LowFreqFactor
	highWave := float64(r.OrigCtx) / r.HighFreqFactor
	for i := range out {
		freq := 1 / math.Pow(float64(theta), float64(2*i)/float64(headDim))
		wave := 2 * math.Pi / freq
		switch {
		case wave < highWave:
			out[i] = 1
		case wave > lowWave:
			out[i] = float32(r.Factor)
		default:
			smooth := (float64(r.OrigCtx)/wave - r.LowFreqFactor) / (r.HighFreqFactor - r.LowFreqFactor)
			out[i] = float32(1 / ((1-smooth)/r.Factor + smooth))
		}
	}
	return out
}
