package llama

import (
	"fmt"
	"math"

	"pagoda/gguf"
	"pagoda/kernels"
	"pagoda/model"
)

// archs maps the architectures this package loads to whether their RoPE
// rotates NeoX pairs (i, i+d/2), as llama.cpp's llama_model_rope_type:
// llama (and Mistral files using its layout) use adjacent pairs, qwen2 NeoX.
var archs = map[string]bool{
	"llama":   false,
	"mistral": false,
	"qwen2":   true,
}

// meta reads typed metadata of one architecture and collects the first
// error, naming the key.
type meta struct {
	f    *gguf.File
	arch string
	err  error
}

func (m *meta) key(k string) string { return m.arch + "." + k }

// uint reads a required positive integer.
func (m *meta) uint(k string) int {
	v, ok := m.f.Uint(m.key(k))
	if !ok || v == 0 || v > math.MaxInt32 {
		m.fail("%s: missing or not a positive integer", m.key(k))
		return 0
	}
	return int(v)
}

// uintOr reads an optional positive integer.
func (m *meta) uintOr(k string, def int) int {
	if _, ok := m.f.Value(m.key(k)); !ok {
		return def
	}
	return m.uint(k)
}

// floatOr reads an optional finite float.
func (m *meta) floatOr(k string, def float32) float32 {
	if _, ok := m.f.Value(m.key(k)); !ok {
		return def
	}
	v, ok := m.f.Float(m.key(k))
	if !ok || math.IsNaN(v) || math.IsInf(v, 0) {
		m.fail("%s: not a finite number", m.key(k))
		return def
	}
	return float32(v)
}

func (m *meta) fail(format string, args ...any) {
	if m.err == nil {
		m.err = fmt.Errorf("llama: "+format, args...)
	}
}

// readConfig reads the model shape from GGUF metadata. The vocabulary size
// comes from token_embd.weight. Missing optional keys take llama.cpp's
// defaults.
func readConfig(f *gguf.File) (model.Config, error) {
	arch, _ := f.String("general.architecture")
	neox, ok := archs[arch]
	if !ok {
		return model.Config{}, fmt.Errorf("llama: architecture %q is not one of llama, mistral, qwen2", arch)
	}
	m := &meta{f: f, arch: arch}
	c := model.Config{Arch: arch}
	c.Name, _ = f.String("general.name")
	c.Layers = m.uint("block_count")
	c.Dim = m.uint("embedding_length")
	c.HiddenDim = m.uint("feed_forward_length")
	c.Heads = m.uint("attention.head_count")
	c.KVHeads = m.uintOr("attention.head_count_kv", c.Heads)
	c.ContextLen = m.uint("context_length")
	c.RMSEps = m.floatOr("attention.layer_norm_rms_epsilon", 1e-5)
	if m.err != nil {
		return c, m.err
	}
	if c.Dim%c.Heads != 0 && !hasKey(f, m.key("attention.key_length")) {
		return c, fmt.Errorf("llama: embedding length %d is not a multiple of %d heads", c.Dim, c.Heads)
	}
	c.HeadDim = m.uintOr("attention.key_length", c.Dim/max(c.Heads, 1))
	if v := m.uintOr("attention.value_length", c.HeadDim); v != c.HeadDim {
		return c, fmt.Errorf("llama: %s %d differs from the key length %d", m.key("attention.value_length"), v, c.HeadDim)
	}
	if c.Heads%c.KVHeads != 0 {
		return c, fmt.Errorf("llama: %d heads is not a multiple of %d KV heads", c.Heads, c.KVHeads)
	}
	if !(c.RMSEps > 0) {
		return c, fmt.Errorf("llama: %s must be positive, got %v", m.key("attention.layer_norm_rms_epsilon"), c.RMSEps)
	}
	c.Rope = readRope(m, c, neox)
	if m.err != nil {
		return c, m.err
	}
	if c.Rope.Dim%2 != 0 || c.Rope.Dim > c.HeadDim {
		return c, fmt.Errorf("llama: %s %d must be even and at most the head dim %d", m.key("rope.dimension_count"), c.Rope.Dim, c.HeadDim)
	}
	embd, ok := f.TensorInfo("token_embd.weight")
	if !ok || len(embd.Dims) != 2 {
		return c, fmt.Errorf("llama: tensor token_embd.weight: missing or not 2-D")
	}
	c.VocabSize = embd.Dims[1]
	return c, nil
}

func hasKey(f *gguf.File, k string) bool { _, ok := f.Value(k); return ok }

// readRope reads the rotary embedding settings (rope.*). A scaling factor
// without a scaling type means linear scaling, as in llama.cpp.
func readRope(m *meta, c model.Config, neox bool) model.Rope {
	r := model.Rope{
		Dim:      m.uintOr("rope.dimension_count", c.HeadDim),
		FreqBase: m.floatOr("rope.freq_base", 10000),
		NeoX:     neox,
		Scaling:  model.RopeScalingNone,
	}
	typ, hasType := m.f.String(m.key("rope.scaling.type"))
	factor := m.floatOr("rope.scaling.factor", 0)
	if factor == 0 {
		factor = m.floatOr("rope.scale_linear", 0)
	}
	switch {
	case !hasType && factor != 0:
		typ = string(model.RopeScalingLinear)
	case !hasType:
		typ = string(model.RopeScalingNone)
	}
	switch model.RopeScaling(typ) {
	case model.RopeScalingNone, model.RopeScalingLinear, model.RopeScalingYaRN, model.RopeScalingLlama3:
		r.Scaling = model.RopeScaling(typ)
	default:
		m.fail("%s: unsupported rope scaling %q (allowed: none, linear, yarn, llama3)", m.key("rope.scaling.type"), typ)
	}
	if factor < 0 || r.FreqBase <= 0 {
		m.fail("%s: rope base %v and scaling factor %v must be positive", m.arch, r.FreqBase, factor)
	}
	r.Factor = factor
	r.OrigCtx = m.uintOr("rope.scaling.original_context_length", c.ContextLen)
	r.BetaFast = m.floatOr("rope.scaling.yarn_beta_fast", 32)
	r.BetaSlow = m.floatOr("rope.scaling.yarn_beta_slow", 1)
	r.AttnFactor = m.floatOr("rope.scaling.attn_factor", 1)
	r.LowFreqFactor = m.floatOr("rope.scaling.low_freq_factor", 1)
	r.HighFreqFactor = m.floatOr("rope.scaling.high_freq_factor", 4)
	return r
}

// ropeConfig turns the model's Rope into the kernel's configuration.
// freqFactors comes from rope_freqs.weight (nil if absent); for llama3
// scaling without that tensor it is computed from the scaling parameters.
func ropeConfig(r model.Rope, freqFactors []float32) kernels.RopeConfig {
	c := kernels.RopeConfig{
		Dims: r.Dim, NeoX: r.NeoX, Base: r.FreqBase, FreqScale: 1, AttnFactor: r.AttnFactor,
		BetaFast: r.BetaFast, BetaSlow: r.BetaSlow, OrigCtx: r.OrigCtx, FreqFactors: freqFactors,
	}
	switch r.Scaling {
	case model.RopeScalingLinear:
		if r.Factor > 0 {
			c.FreqScale = 1 / r.Factor
		}
	case model.RopeScalingYaRN:
		if r.Factor > 0 {
			c.FreqScale = 1 / r.Factor
		}
		c.ExtFactor = 1
	case model.RopeScalingLlama3:
		if freqFactors == nil {
			c.FreqFactors = llama3Factors(r)
		}
	}
	return c
}

// llama3Factors computes Llama 3.1's per-frequency divisors: 1 for short
// wavelengths, Factor for long ones, and a smooth blend in between.
func llama3Factors(r model.Rope) []float32 {
	factor := float64(r.Factor)
	if factor <= 0 {
		factor = 1
	}
	lo, hi := float64(r.LowFreqFactor), float64(r.HighFreqFactor)
	orig := float64(r.OrigCtx)
	ff := make([]float32, r.Dim/2)
	for i := range ff {
		freq := math.Pow(float64(r.FreqBase), -2*float64(i)/float64(r.Dim))
		wavelen := 2 * math.Pi / freq
		switch {
		case wavelen < orig/hi:
			ff[i] = 1
		case wavelen > orig/lo:
			ff[i] = float32(factor)
		case hi <= lo:
			ff[i] = float32(factor)
		default:
			smooth := (orig/wavelen - lo) / (hi - lo)
			ff[i] = float32(1 / ((1-smooth)/factor + smooth))
		}
	}
	return ff
}
