package kernels

// gpt-oss's expert activation (OpenAI's gpt-oss reference, torch/model.py
// swiglu; llama.cpp's ggml_swiglu_oai with alpha 1.702 and limit 7, which
// build_moe_ffn's LLM_FFN_SWIGLU_OAI_MOE uses).
const (
	swigluOAIAlpha = float32(1.702)
	swigluOAILimit = float32(7)
)

// swigluOAIGeneric: dst = x·σ(α·x)·(y + 1) with x = min(gate, 7) and y =
// clamp(up, −7, 7), for one row; dst may alias gate or up.
//
// bit-exact contract (ggml_compute_forward_swiglu_oai_f32): in float32
// operations, x/(1 + expf(α·(−x))) with glibc's expf (expf here), times
// (y + 1); the clamps as std::min and std::clamp (a NaN gate or up stays
// NaN).
func swigluOAIGeneric(dst, gate, up []float32) {
	gate, up = gate[:len(dst)], up[:len(dst)]
	for i, g := range gate {
		x := g
		if swigluOAILimit < x {
			x = swigluOAILimit
		}
		y := up[i]
		if y < -swigluOAILimit {
			y = -swigluOAILimit
		} else if swigluOAILimit < y {
			y = swigluOAILimit
		}
		out := x / (1 + expf(swigluOAIAlpha*(-x)))
		dst[i] = out * (y + 1)
	}
}

// SwiGLUOAI computes dst = swiglu_oai(gate, up) elementwise (see
// swigluOAIGeneric). dst may alias gate or up.
func SwiGLUOAI(dst, gate, up []float32) {
	checkLen("SwiGLUOAI", len(dst), len(gate), len(up))
	def.swigluOAI(dst, gate, up)
}
