package kernels

import (
	"math"
	"sync"
)

// GLU names the gated activation of a feed-forward block: act(gate)·up.
type GLU int

const (
	// GLUSiLU is SwiGLU, silu(gate)·up (Llama, Qwen, Phi-3).
	GLUSiLU GLU = iota
	// GLUGELUTanh is GeGLU with the tanh approximation of GELU,
	// gelu_tanh(gate)·up (Gemma: Hugging Face's gelu_pytorch_tanh).
	GLUGELUTanh
	// GLUSwiGLUOAI is gpt-oss's clamped SwiGLU with a bias of 1 on up
	// (swigluOAIGeneric).
	GLUSwiGLUOAI
)

func (g GLU) String() string {
	switch g {
	case GLUSiLU:
		return "silu"
	case GLUGELUTanh:
		return "gelu_tanh"
	case GLUSwiGLUOAI:
		return "swiglu_oai"
	}
	return "glu(?)"
}

// geluTable holds ggml's GELU of every half-precision value, rounded to
// half precision (ggml_table_gelu_f16, built once).
var geluTable = sync.OnceValue(func() *[1 << 16]uint16 {
	var t [1 << 16]uint16
	for i := range t {
		t[i] = F32ToF16(geluF32(f16Table[i]))
	}
	return &t
})

// geluF32 is ggml_gelu_f32: 0.5·x·(1 + tanh(√(2/π)·x·(1 + 0.044715·x²))),
// in float32 operations (tanh rounded from float64).
func geluF32(x float32) float32 {
	const a, s = float32(0.044715), float32(0.79788456080286535587989211986876)
	return 0.5 * x * (1 + float32(math.Tanh(float64(s*x*(1+a*x*x)))))
}

// geGLUGeneric: dst = gelu(gate)·up for one row, dst may alias gate.
//
// bit-exact contract (ggml_vec_geglu_f32 with GGML_GELU_FP16): gate ≤ −10
// gives 0, gate ≥ 10 gives gate·up, otherwise gate is rounded to half
// precision and looked up in ggml's half-precision GELU table, the result
// widened and multiplied by up (one rounding).
func geGLUGeneric(dst, gate, up []float32) {
	t := geluTable()
	gate, up = gate[:len(dst)], up[:len(dst)]
	for i, x := range gate {
		switch {
		case x <= -10:
			dst[i] = 0
		case x >= 10:
			dst[i] = x * up[i]
		default:
			dst[i] = f16Table[t[F32ToF16(x)]] * up[i]
		}
	}
}

// GeGLU computes dst = gelu_tanh(gate)·up elementwise (see geGLUGeneric).
// dst may alias gate or up.
func GeGLU(dst, gate, up []float32) {
	checkLen("GeGLU", len(dst), len(gate), len(up))
	geGLUGeneric(dst, gate, up)
}

// glu applies g to one row: dst = act(gate)·up.
func (k *impl) glu(g GLU, dst, gate, up []float32) {
	switch g {
	case GLUGELUTanh:
		geGLUGeneric(dst, gate, up)
	case GLUSwiGLUOAI:
		k.swigluOAI(dst, gate, up)
	default:
		k.swiGLU(dst, gate, up)
	}
}
