package synth

import (
	"fmt"
	"strings"

	"pagoda/gguf"
)

// A mix is one of llama.cpp's K-quant file types (llama_ftype): a base
// type, with more bits where llama-quantize gives them (llama-quant.cpp's
// llama_tensor_get_type, as in the llama.cpp that scripts/build-llama-cpp.sh
// builds): the output head (or the tied embeddings) Q6_K; attn_v (and a
// fused attn_qkv) and ffn_down more bits on some layers; with 8 experts
// attn_k and attn_v Q8_0; a row length the chosen type's blocks do not
// divide falls back to a 32-value type (Q2_K, Q3_K → Q4_0; Q4_K → Q5_0;
// Q5_K → Q5_1; Q6_K → Q8_0; else F16). llama.cpp's Falcon rules and its
// bump of a 70B's attn_v are left out (no such shapes here).
type mix struct {
	name     string
	fileType uint32
	base     gguf.Type
}

var mixes = []mix{
	{"Q3_K_S", 11, gguf.Q3_K}, {"Q3_K_M", 12, gguf.Q3_K}, {"Q3_K_L", 13, gguf.Q3_K},
	{"Q4_K_S", 14, gguf.Q4_K}, {"Q4_K_M", 15, gguf.Q4_K},
	{"Q5_K_S", 16, gguf.Q5_K}, {"Q5_K_M", 17, gguf.Q5_K},
}

// Mixes lists the llama.cpp mixes synth writes (Options.Mix).
func Mixes() []string {
	var n []string
	for _, m := range mixes {
		n = append(n, m.name)
	}
	return n
}

func lookupMix(name string) (mix, error) {
	for _, m := range mixes {
		if strings.EqualFold(m.name, name) {
			return m, nil
		}
	}
	return mix{}, fmt.Errorf("synth: mix %q is not one of %s", name, strings.Join(Mixes(), ", "))
}

// useMoreBits is llama.cpp's use_more_bits: the first and last eighth of
// the layers and every third layer between.
func useMoreBits(layer, layers int) bool {
	return layer < layers/8 || layer >= 7*layers/8 || (layer-layers/8)%3 == 2
}

// typeOf is the type llama-quantize gives a quantizable matrix t of shape
// s under the mix (llama_tensor_get_type_impl, then tensor_type_fallback);
// tied: the model has no output.weight.
func (m mix) typeOf(t tensor, s Shape, tied bool) gguf.Type {
	typ := m.pick(t, s, tied)
	if t.dims[0]%typ.BlockSize() == 0 {
		return typ
	}
	switch typ {
	case gguf.Q2_K, gguf.Q3_K:
		typ = gguf.Q4_0
	case gguf.Q4_K:
		typ = gguf.Q5_0
	case gguf.Q5_K:
		typ = gguf.Q5_1
	case gguf.Q6_K:
		typ = gguf.Q8_0
	}
	if t.dims[0]%typ.BlockSize() != 0 {
		typ = gguf.F16
	}
	return typ
}

// pick is llama_tensor_get_type_impl for the K-quant mixes.
func (m mix) pick(t tensor, s Shape, tied bool) gguf.Type {
	name, typ := t.name, m.base
	layer := -1
	fmt.Sscanf(name, "blk.%d.", &layer)
	n := s.Layers
	experts8 := s.Experts == 8
	switch {
	case name == "output.weight" || name == "token_embd.weight" && tied:
		if t.dims[0]%typ.BlockSize() != 0 {
			return gguf.Q8_0
		}
		return gguf.Q6_K
	case name == "token_embd.weight":
		return typ
	case strings.Contains(name, "attn_v.weight") || strings.Contains(name, "attn_qkv.weight"):
		switch {
		case m.name == "Q3_K_M" && layer < 2:
			typ = gguf.Q5_K
		case m.name == "Q3_K_M":
			typ = gguf.Q4_K
		case m.name == "Q3_K_L":
			typ = gguf.Q5_K
		case (m.name == "Q4_K_M" || m.name == "Q5_K_M") && useMoreBits(layer, n):
			typ = gguf.Q6_K
		case m.name == "Q4_K_S" && layer < 4:
			typ = gguf.Q5_K
		}
		if experts8 {
			typ = gguf.Q8_0
		}
	case strings.Contains(name, "attn_k.weight"):
		if experts8 {
			typ = gguf.Q8_0
		}
	case strings.Contains(name, "ffn_down"):
		switch {
		case m.name == "Q3_K_M" && layer < n/16:
			typ = gguf.Q5_K
		case m.name == "Q3_K_M":
			typ = gguf.Q4_K
		case m.name == "Q3_K_L":
			typ = gguf.Q5_K
		case (m.name == "Q4_K_M" || m.name == "Q5_K_M") && useMoreBits(layer, n):
			typ = gguf.Q6_K
		case m.name == "Q4_K_S" && layer < n/8:
			typ = gguf.Q5_K
		}
	case strings.Contains(name, "attn_output.weight"):
		switch {
		case experts8 && (m.name == "Q3_K_S" || m.name == "Q3_K_M" || m.name == "Q4_K_S" || m.name == "Q4_K_M"):
			typ = gguf.Q5_K
		case experts8:
		case m.name == "Q3_K_M":
			typ = gguf.Q4_K
		case m.name == "Q3_K_L":
			typ = gguf.Q5_K
		}
	}
	return typ
}
