// Package synth writes GGUF models with random weights at the shapes of
// real models, for benchmarks that need a model of a given size without
// its weights: the architecture metadata of the real model, a real
// vocabulary copied from another GGUF file, and every matrix quantized by
// pagoda's own quantizers (gguf.Quantize) or, on large shapes, drawn
// directly as random quantized blocks of the same statistics (direct.go),
// in one type or in one of llama-quantize's K-quant mixes (mix.go). Each
// family's keys and tensors are the ones llama.cpp's converter
// (convert_hf_to_gguf.py) writes for it.
package synth

import (
	"fmt"
	"sort"
	"strings"
)

// Shape is the architecture of a model: what its GGUF metadata and tensor
// dimensions say.
type Shape struct {
	// Arch is general.architecture: "llama", "qwen2" (biased Q, K, V),
	// "qwen3" (per-head Q and K norms), "qwen3moe" (qwen3's attention, a
	// mixture of experts for feed-forward), "gemma3" (Q/K norms, norms
	// after attention and feed-forward, sliding-window layers) or "phi3"
	// (fused QKV and gate-up, partial LongRoPE) or "bert" (an encoder:
	// position and token-type embeddings, post-LayerNorm blocks with
	// biases, no head; embeddings only).
	Arch      string
	Name      string
	Dim       int // embedding length
	HiddenDim int // feed-forward length
	Layers    int
	Heads     int
	KVHeads   int
	// HeadSize is the config's head_dim, written as attention.key_length
	// and value_length as the converter does; 0 when the config states
	// none (the head size is then Dim/Heads).
	HeadSize int
	// RopeDim is the number of rotated dimensions of a head when not all of
	// them are (phi3's partial rotary, rope.dimension_count); 0 for all.
	RopeDim    int
	VocabSize  int // rows of the embeddings; the vocabulary file may raise it
	ContextLen int
	RopeTheta  float32
	// RopeThetaSWA is the RoPE base of the sliding-window layers
	// (rope.freq_base_swa); 0 writes none (llama.cpp then uses 10000).
	RopeThetaSWA float32
	// RopeLinear is a linear RoPE scaling factor (rope.scaling.type
	// "linear"; on gemma3 llama.cpp applies it to the global layers only).
	RopeLinear float32
	// SlidingWindow is attention.sliding_window: gemma3's local window (0
	// writes none: every layer global); phi3 always writes its config's,
	// which llama.cpp ignores.
	SlidingWindow int
	RMSEps        float32
	Tied          bool // the output head reuses the token embeddings
	// Llama3Rope, if set, is Llama 3's frequency scaling, written as the
	// rope_freqs.weight tensor as llama.cpp's converter does.
	Llama3Rope *Llama3Rope
	// LongRope, if set (phi3 only), is Phi-3's LongRoPE scaling.
	LongRope *LongRope
	// Experts, ExpertsUsed and ExpertHiddenDim shape a qwen3moe's mixture
	// of experts (expert_count, expert_used_count,
	// expert_feed_forward_length); HiddenDim is then only the
	// feed_forward_length key (the dense intermediate size the converter
	// writes). Zero for the dense families.
	Experts, ExpertsUsed, ExpertHiddenDim int
	// Vocab names the vocabulary file Load looks for by default: "default"
	// for the default model, a file name ending in .gguf for a model at
	// the top of the model cache, else a llama.cpp ggml-vocab-NAME.gguf.
	Vocab string
}

// HeadDim is the per-head dimension.
func (s Shape) HeadDim() int {
	if s.HeadSize > 0 {
		return s.HeadSize
	}
	return s.Dim / s.Heads
}

// RotaryDim is the number of rotated dimensions of a head.
func (s Shape) RotaryDim() int {
	if s.RopeDim > 0 {
		return s.RopeDim
	}
	return s.HeadDim()
}

// Archs lists the architectures synth writes.
func Archs() []string {
	return []string{"llama", "qwen2", "qwen3", "qwen3moe", "gemma3", "phi3", "bert", "gpt-oss"}
}

// MoE reports whether the shape's feed-forward is a mixture of experts.
func (s Shape) MoE() bool { return s.Arch == "qwen3moe" || s.Arch == "gpt-oss" }

// Validate checks that the dimensions are positive and consistent, and
// what llama.cpp requires of the family.
func (s Shape) Validate() error {
	switch {
	case !isArch(s.Arch):
		return fmt.Errorf("synth: architecture %q (want one of %s)", s.Arch, strings.Join(Archs(), ", "))
	case s.Dim <= 0 || s.HiddenDim <= 0 || s.Layers <= 0 || s.Heads <= 0 || s.KVHeads <= 0 || s.VocabSize <= 0 || s.HeadSize < 0 || s.RopeDim < 0:
		return fmt.Errorf("synth: dims must be positive: %+v", s)
	case s.HeadSize == 0 && s.Dim%s.Heads != 0, s.Heads%s.KVHeads != 0, s.HeadDim()%2 != 0:
		return fmt.Errorf("synth: %d dims over %d heads (%d KV heads, head size %d) do not give an even head size shared by whole groups", s.Dim, s.Heads, s.KVHeads, s.HeadDim())
	case s.RotaryDim()%2 != 0 || s.RotaryDim() > s.HeadDim():
		return fmt.Errorf("synth: %d rotated dimensions: want an even number up to the head size %d", s.RotaryDim(), s.HeadDim())
	case s.ContextLen <= 0 || !(s.RopeTheta > 0) || !(s.RMSEps > 0) || s.RopeThetaSWA < 0 || s.RopeLinear < 0 || s.SlidingWindow < 0:
		return fmt.Errorf("synth: context length, rope theta and RMS epsilon must be positive, the rest not negative")
	case s.Arch == "llama" && s.RotaryDim() != s.HeadDim():
		return fmt.Errorf("synth: llama rotates whole heads (llama.cpp rejects rope.dimension_count %d ≠ head size %d)", s.RotaryDim(), s.HeadDim())
	case s.Arch == "bert" && (s.KVHeads != s.Heads || s.HeadDim()*s.Heads != s.Dim):
		return fmt.Errorf("synth: bert needs KV heads = heads and heads × head size = dim")
	case s.Arch == "phi3" && s.Heads*s.HeadDim() != s.Dim:
		return fmt.Errorf("synth: phi3 needs heads × head size = dim (llama.cpp's attn_output is dim × dim): %d × %d ≠ %d", s.Heads, s.HeadDim(), s.Dim)
	case s.MoE() && (s.Experts <= 0 || s.ExpertsUsed <= 0 || s.ExpertsUsed > s.Experts || s.ExpertHiddenDim <= 0):
		return fmt.Errorf("synth: %s needs experts, experts used (at most the experts) and an expert length: %d, %d, %d",
			s.Arch, s.Experts, s.ExpertsUsed, s.ExpertHiddenDim)
	case !s.MoE() && (s.Experts != 0 || s.ExpertsUsed != 0 || s.ExpertHiddenDim != 0):
		return fmt.Errorf("synth: %s has no experts", s.Arch)
	case s.Arch == "gpt-oss" && (s.Dim%32 != 0 || s.ExpertHiddenDim%32 != 0):
		return fmt.Errorf("synth: gpt-oss's MXFP4 experts need dim and expert length multiples of 32: %d, %d", s.Dim, s.ExpertHiddenDim)
	case s.LongRope != nil && s.Arch != "phi3":
		return fmt.Errorf("synth: LongRoPE factors are written for phi3 only, not %s", s.Arch)
	case s.LongRope != nil && (len(s.LongRope.Short) != s.RotaryDim()/2 || len(s.LongRope.Long) != s.RotaryDim()/2 || s.LongRope.OrigCtx <= 0):
		return fmt.Errorf("synth: LongRoPE needs %d short and long factors and an original context, got %d, %d, %d",
			s.RotaryDim()/2, len(s.LongRope.Short), len(s.LongRope.Long), s.LongRope.OrigCtx)
	}
	return nil
}

func isArch(a string) bool {
	for _, b := range Archs() {
		if a == b {
			return true
		}
	}
	return false
}

// Vocabulary files of the families whose vocabulary is not a ggml-vocab
// file: Gemma 3 270M's (`pagoda pull gemma3` installs it).
const gemma3Vocab = "gemma-3-270m-q4_k_m.gguf"

// llama32Rope is Llama 3.2's rope_scaling.
var llama32Rope = &Llama3Rope{Factor: 32, LowFreqFactor: 1, HighFreqFactor: 4, OrigCtx: 8192}

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
	"llama-3.2-1b": {Arch: "llama", Name: "Llama-3.2-1B", Dim: 2048, HiddenDim: 8192, Layers: 16, Heads: 32, KVHeads: 8, HeadSize: 64,
		VocabSize: 128256, ContextLen: 131072, RopeTheta: 500000, RMSEps: 1e-5, Tied: true, Vocab: "llama-bpe", Llama3Rope: llama32Rope},
	"llama-3.2-3b": {Arch: "llama", Name: "Llama-3.2-3B", Dim: 3072, HiddenDim: 8192, Layers: 28, Heads: 24, KVHeads: 8, HeadSize: 128,
		VocabSize: 128256, ContextLen: 131072, RopeTheta: 500000, RMSEps: 1e-5, Tied: true, Vocab: "llama-bpe", Llama3Rope: llama32Rope},
	"qwen3-0.6b": {Arch: "qwen3", Name: "Qwen3-0.6B", Dim: 1024, HiddenDim: 3072, Layers: 28, Heads: 16, KVHeads: 8, HeadSize: 128,
		VocabSize: 151936, ContextLen: 40960, RopeTheta: 1e6, RMSEps: 1e-6, Tied: true, Vocab: "qwen2"},
	"qwen3-1.7b": {Arch: "qwen3", Name: "Qwen3-1.7B", Dim: 2048, HiddenDim: 6144, Layers: 28, Heads: 16, KVHeads: 8, HeadSize: 128,
		VocabSize: 151936, ContextLen: 40960, RopeTheta: 1e6, RMSEps: 1e-6, Tied: true, Vocab: "qwen2"},
	"qwen3-4b": {Arch: "qwen3", Name: "Qwen3-4B", Dim: 2560, HiddenDim: 9728, Layers: 36, Heads: 32, KVHeads: 8, HeadSize: 128,
		VocabSize: 151936, ContextLen: 40960, RopeTheta: 1e6, RMSEps: 1e-6, Tied: true, Vocab: "qwen2"},
	"qwen3-30b-a3b": {Arch: "qwen3moe", Name: "Qwen3-30B-A3B", Dim: 2048, HiddenDim: 6144, Layers: 48, Heads: 32, KVHeads: 4, HeadSize: 128,
		Experts: 128, ExpertsUsed: 8, ExpertHiddenDim: 768, VocabSize: 151936, ContextLen: 40960, RopeTheta: 1e6, RMSEps: 1e-6, Vocab: "qwen2"},
	"gemma-3-270m": {Arch: "gemma3", Name: "Gemma-3-270M", Dim: 640, HiddenDim: 2048, Layers: 18, Heads: 4, KVHeads: 1, HeadSize: 256,
		VocabSize: 262144, ContextLen: 32768, RopeTheta: 1e6, RopeThetaSWA: 10000, SlidingWindow: 512, RMSEps: 1e-6, Tied: true, Vocab: gemma3Vocab},
	"gemma-3-1b": {Arch: "gemma3", Name: "Gemma-3-1B", Dim: 1152, HiddenDim: 6912, Layers: 26, Heads: 4, KVHeads: 1, HeadSize: 256,
		VocabSize: 262144, ContextLen: 32768, RopeTheta: 1e6, RopeThetaSWA: 10000, SlidingWindow: 512, RMSEps: 1e-6, Tied: true, Vocab: gemma3Vocab},
	"gemma-3-4b": {Arch: "gemma3", Name: "Gemma-3-4B", Dim: 2560, HiddenDim: 10240, Layers: 34, Heads: 8, KVHeads: 4, HeadSize: 256,
		VocabSize: 262144, ContextLen: 131072, RopeTheta: 1e6, RopeThetaSWA: 10000, RopeLinear: 8, SlidingWindow: 1024, RMSEps: 1e-6,
		Tied: true, Vocab: gemma3Vocab},
	// gpt-oss-20b, its vocabulary stood in for by Llama 3's BPE (o200k_harmony
	// is not a ggml-vocab file).
	"gpt-oss-20b": {Arch: "gpt-oss", Name: "gpt-oss-20b", Dim: 2880, HiddenDim: 2880, Layers: 24, Heads: 64, KVHeads: 8, HeadSize: 64,
		Experts: 32, ExpertsUsed: 4, ExpertHiddenDim: 2880, VocabSize: 201088, ContextLen: 131072, RopeTheta: 150000,
		SlidingWindow: 128, RMSEps: 1e-5, Vocab: "llama-bpe"},
	"phi-4-mini": {Arch: "phi3", Name: "Phi-4-mini", Dim: 3072, HiddenDim: 8192, Layers: 32, Heads: 24, KVHeads: 8, RopeDim: 96,
		VocabSize: 200064, ContextLen: 131072, RopeTheta: 10000, RMSEps: 1e-5, SlidingWindow: 262144, Tied: true,
		LongRope: longRopeFor(96, 4096), Vocab: "phi-3"},
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

// Families lists the families ParseArchDims knows: the architectures, and
// llama3 (a llama with Llama 3.2's RoPE scaling and vocabulary).
func Families() []string { return append(Archs(), "llama3") }

// family returns the hyperparameters a shape of dimensions given by hand
// takes in each family: llama and qwen2 as before (no vocabulary by
// default), the others those of their smallest real model, with its
// vocabulary.
func family(name string) (Shape, error) {
	s := Shape{Arch: name, Name: "synthetic " + name, ContextLen: 4096, RopeTheta: 10000, RMSEps: 1e-5, Tied: true}
	switch name {
	case "llama3":
		s.Arch, s.ContextLen, s.RopeTheta, s.Llama3Rope, s.Vocab = "llama", 131072, 500000, llama32Rope, "llama-bpe"
	case "llama", "qwen2":
	case "qwen3":
		s.ContextLen, s.RopeTheta, s.RMSEps, s.Vocab = 40960, 1e6, 1e-6, "qwen2"
	case "qwen3moe":
		s.ContextLen, s.RopeTheta, s.RMSEps, s.Vocab, s.Tied = 40960, 1e6, 1e-6, "qwen2", false
		s.Experts, s.ExpertsUsed = 16, 4
	case "gemma3":
		s.ContextLen, s.RopeTheta, s.RopeThetaSWA, s.SlidingWindow, s.RMSEps, s.Vocab = 32768, 1e6, 10000, 512, 1e-6, gemma3Vocab
	case "phi3":
		s.ContextLen, s.SlidingWindow, s.Vocab = 131072, 262144, "phi-3"
	case "bert": // BGE's: 512 positions, LayerNorm ε 1e-12, CLS pooling
		s.ContextLen, s.RMSEps, s.Vocab, s.Tied = 512, 1e-12, "bert-bge", false
	case "gpt-oss": // gpt-oss-20b's, 8 experts of which 4 per token (its 32, 4)
		s.ContextLen, s.RopeTheta, s.SlidingWindow, s.Vocab, s.Tied = 131072, 150000, 128, "llama-bpe", false
		s.Experts, s.ExpertsUsed = 8, 4
	default:
		return s, fmt.Errorf("synth: family %q (want one of %s)", name, strings.Join(Families(), ", "))
	}
	return s, nil
}

// ParseDims builds a llama shape from "dim,hidden,layers,heads,kvheads,vocab".
func ParseDims(s string) (Shape, error) { return ParseArchDims("llama", s) }

// ParseArchDims builds a shape of the family fam (see Families) from
// "dim,hidden,layers,heads,kvheads,vocab[,headdim]" and the family's other
// hyperparameters. The head size defaults to dim/heads; llama3, qwen3,
// qwen3moe and gemma3 write it (key_length) as their converters do; phi3
// rotates 3/4 of each head with LongRoPE factors (Phi-4-mini's
// partial_rotary_factor). For qwen3moe hidden is each expert's length
// (16 experts, 4 per token: SetExperts changes them), and the
// feed_forward_length key hidden × experts used.
func ParseArchDims(fam, s string) (Shape, error) {
	sh, err := family(fam)
	if err != nil {
		return sh, err
	}
	parts := strings.Split(s, ",")
	if len(parts) != 6 && len(parts) != 7 {
		return Shape{}, fmt.Errorf("synth: --dims %q: want dim,hidden,layers,heads,kvheads,vocab[,headdim]", s)
	}
	v := make([]int, len(parts))
	for i, p := range parts {
		if _, err := fmt.Sscan(strings.TrimSpace(p), &v[i]); err != nil || v[i] <= 0 {
			return Shape{}, fmt.Errorf("synth: --dims %q: %q is not a positive integer", s, p)
		}
	}
	sh.Dim, sh.HiddenDim, sh.Layers, sh.Heads, sh.KVHeads, sh.VocabSize = v[0], v[1], v[2], v[3], v[4], v[5]
	if len(v) == 7 {
		sh.HeadSize = v[6]
	} else if (fam == "llama3" || fam == "qwen3" || fam == "qwen3moe" || fam == "gemma3" || fam == "gpt-oss") && sh.Dim%sh.Heads == 0 {
		sh.HeadSize = sh.Dim / sh.Heads
	}
	if sh.MoE() {
		sh.ExpertHiddenDim = sh.HiddenDim
		sh.SetExperts(sh.Experts, sh.ExpertsUsed)
	}
	if fam == "phi3" {
		sh.RopeDim = 3 * sh.Dim / 4 / sh.Heads // the converter's int(0.75·dim) // heads
		if sh.RopeDim%2 == 0 && sh.RopeDim > 0 {
			sh.LongRope = longRopeFor(sh.RopeDim, 4096)
		}
	}
	return sh, sh.Validate()
}

// SetExperts sets a mixture of experts' expert count and experts per
// token, and the feed_forward_length it writes to ExpertHiddenDim ×
// used (the relation llama.cpp assumes when expert_feed_forward_length is
// absent).
func (s *Shape) SetExperts(experts, used int) {
	s.Experts, s.ExpertsUsed = experts, used
	s.HiddenDim = s.ExpertHiddenDim * used
	if s.Arch == "gpt-oss" { // its converter writes intermediate_size for both
		s.HiddenDim = s.ExpertHiddenDim
	}
}
