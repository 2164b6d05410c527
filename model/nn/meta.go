package nn

import (
	"fmt"
	"math"

	"pagoda/gguf"
	"pagoda/model"
)

// Meta reads an architecture's typed GGUF metadata (keys "ARCH.name") and
// keeps the first error, naming the key.
type Meta struct {
	F    *gguf.File
	Arch string
	Err  error
}

// NewMeta reads the metadata of f under its general.architecture.
func NewMeta(f *gguf.File) *Meta {
	arch, _ := f.String("general.architecture")
	return &Meta{F: f, Arch: arch}
}

// Key is the full name of the architecture's key k.
func (m *Meta) Key(k string) string { return m.Arch + "." + k }

// Has reports whether the architecture's key k is present.
func (m *Meta) Has(k string) bool { _, ok := m.F.Value(m.Key(k)); return ok }

// Uint reads a required positive integer.
func (m *Meta) Uint(k string) int {
	v, ok := m.F.Uint(m.Key(k))
	if !ok || v == 0 || v > math.MaxInt32 {
		m.Fail("%s: missing or not a positive integer", m.Key(k))
		return 0
	}
	return int(v)
}

// UintOr reads an optional positive integer.
func (m *Meta) UintOr(k string, def int) int {
	if !m.Has(k) {
		return def
	}
	return m.Uint(k)
}

// FloatOr reads an optional finite float.
func (m *Meta) FloatOr(k string, def float32) float32 {
	if !m.Has(k) {
		return def
	}
	v, ok := m.F.Float(m.Key(k))
	if !ok || math.IsNaN(v) || math.IsInf(v, 0) {
		m.Fail("%s: not a finite number", m.Key(k))
		return def
	}
	return float32(v)
}

// Fail records an error (the first one wins).
func (m *Meta) Fail(format string, args ...any) {
	if m.Err == nil {
		m.Err = fmt.Errorf("%s: "+format, append([]any{m.Arch}, args...)...)
	}
}

// Config reads the shape every architecture shares (block count, widths,
// heads, head size from key_length, context, RMS epsilon, RoPE with its
// scaling; rotation pairs NeoX or not, as llama.cpp's
// llama_model_rope_type for the architecture). The vocabulary size comes
// from token_embd.weight. Missing optional keys take llama.cpp's defaults.
func (m *Meta) Config(neox bool) (model.Config, error) {
	c := model.Config{Arch: m.Arch}
	c.Name, _ = m.F.String("general.name")
	c.Layers = m.Uint("block_count")
	c.Dim = m.Uint("embedding_length")
	c.HiddenDim = m.Uint("feed_forward_length")
	c.Heads = m.Uint("attention.head_count")
	c.KVHeads = m.UintOr("attention.head_count_kv", c.Heads)
	c.ContextLen = m.Uint("context_length")
	c.RMSEps = m.FloatOr("attention.layer_norm_rms_epsilon", 1e-5)
	if m.Err != nil {
		return c, m.Err
	}
	if c.Dim%c.Heads != 0 && !m.Has("attention.key_length") {
		return c, fmt.Errorf("%s: embedding length %d is not a multiple of %d heads", m.Arch, c.Dim, c.Heads)
	}
	c.HeadDim = m.UintOr("attention.key_length", c.Dim/max(c.Heads, 1))
	if v := m.UintOr("attention.value_length", c.HeadDim); v != c.HeadDim {
		return c, fmt.Errorf("%s: %s %d differs from the key length %d", m.Arch, m.Key("attention.value_length"), v, c.HeadDim)
	}
	if c.Heads%c.KVHeads != 0 {
		return c, fmt.Errorf("%s: %d heads is not a multiple of %d KV heads", m.Arch, c.Heads, c.KVHeads)
	}
	if !(c.RMSEps > 0) {
		return c, fmt.Errorf("%s: %s must be positive, got %v", m.Arch, m.Key("attention.layer_norm_rms_epsilon"), c.RMSEps)
	}
	c.Rope = m.rope(c, neox)
	if m.Err != nil {
		return c, m.Err
	}
	if c.Rope.Dim%2 != 0 || c.Rope.Dim > c.HeadDim {
		return c, fmt.Errorf("%s: %s %d must be even and at most the head dim %d", m.Arch, m.Key("rope.dimension_count"), c.Rope.Dim, c.HeadDim)
	}
	embd, ok := m.F.TensorInfo("token_embd.weight")
	if !ok || len(embd.Dims) != 2 {
		return c, fmt.Errorf("%s: tensor token_embd.weight: missing or not 2-D", m.Arch)
	}
	c.VocabSize = embd.Dims[1]
	return c, nil
}

// rope reads the rotary embedding settings (rope.*). A scaling factor
// without a scaling type means linear scaling, as in llama.cpp.
func (m *Meta) rope(c model.Config, neox bool) model.Rope {
	r := model.Rope{
		Dim:      m.UintOr("rope.dimension_count", c.HeadDim),
		FreqBase: m.FloatOr("rope.freq_base", 10000),
		NeoX:     neox,
		Scaling:  model.RopeScalingNone,
	}
	typ, hasType := m.F.String(m.Key("rope.scaling.type"))
	factor := m.FloatOr("rope.scaling.factor", 0)
	if factor == 0 {
		factor = m.FloatOr("rope.scale_linear", 0)
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
		m.Fail("%s: unsupported rope scaling %q (allowed: none, linear, yarn, llama3)", m.Key("rope.scaling.type"), typ)
	}
	if factor < 0 || r.FreqBase <= 0 {
		m.Fail("rope base %v and scaling factor %v must be positive", r.FreqBase, factor)
	}
	r.Factor = factor
	r.OrigCtx = m.UintOr("rope.scaling.original_context_length", c.ContextLen)
	r.BetaFast = m.FloatOr("rope.scaling.yarn_beta_fast", 32)
	r.BetaSlow = m.FloatOr("rope.scaling.yarn_beta_slow", 1)
	r.AttnFactor = m.FloatOr("rope.scaling.attn_factor", 1)
	r.LowFreqFactor = m.FloatOr("rope.scaling.low_freq_factor", 1)
	r.HighFreqFactor = m.FloatOr("rope.scaling.high_freq_factor", 4)
	return r
}
