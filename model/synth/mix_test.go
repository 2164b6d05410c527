package synth

import (
	"testing"

	"pagoda/gguf"
	"pagoda/internal/testmodel"
)

// TestMixMatchesLlamaCpp: Gemma 3 270M's Q4_K_M file, as llama-quantize
// wrote it, has the tensor types the Q4_K_M mix gives the gemma-3-270m
// shape, every fallback of its 640-value rows included (Q4_K → Q5_0,
// Q6_K → Q8_0, the tied embeddings Q8_0).
func TestMixMatchesLlamaCpp(t *testing.T) {
	f, err := gguf.Open(testmodel.Gemma3(t))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	s, _ := Lookup("gemma-3-270m")
	_, ts, err := plan(Options{Shape: s, Mix: "Q4_K_M"})
	if err != nil {
		t.Fatal(err)
	}
	if len(ts) != len(f.Tensors) {
		t.Fatalf("%d tensors, the file %d", len(ts), len(f.Tensors))
	}
	for _, p := range ts {
		info, ok := f.TensorInfo(p.name)
		if !ok || info.Type != p.typ {
			t.Errorf("%s: %v, the file's %v (present %v)", p.name, p.typ, info.Type, ok)
		}
	}
}

// TestMixTypes: Q4_K_M and Q5_K_M on Llama 3.2 1B (the counts of
// llama.cpp's files: 96 Q4_K and 17 Q6_K), on Qwen3-30B-A3B (the router
// in F32, ffn_down_exps and attn_v Q6_K on the layers use_more_bits
// picks, the untied head Q6_K and the embeddings the base type), and the
// 8-expert rules.
func TestMixTypes(t *testing.T) {
	count := func(s Shape, mix string) map[gguf.Type]int {
		_, ts, err := plan(Options{Shape: s, Mix: mix})
		if err != nil {
			t.Fatal(err)
		}
		n := map[gguf.Type]int{}
		for _, p := range ts {
			n[p.typ]++
		}
		return n
	}
	l1b, _ := Lookup("llama-3.2-1b")
	if n := count(l1b, "Q4_K_M"); n[gguf.Q4_K] != 96 || n[gguf.Q6_K] != 17 || n[gguf.F32] != 34 {
		t.Errorf("llama-3.2-1b Q4_K_M: %v", n)
	}
	if n := count(l1b, "Q5_K_M"); n[gguf.Q5_K] != 96 || n[gguf.Q6_K] != 17 {
		t.Errorf("llama-3.2-1b Q5_K_M: %v", n)
	}
	moe, _ := Lookup("qwen3-30b-a3b")
	_, ts, err := plan(Options{Shape: moe, Mix: "Q4_K_M"})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]gguf.Type{"token_embd.weight": gguf.Q4_K, "output.weight": gguf.Q6_K,
		"blk.0.ffn_gate_inp.weight": gguf.F32, "blk.0.ffn_down_exps.weight": gguf.Q6_K, "blk.0.attn_v.weight": gguf.Q6_K,
		"blk.6.ffn_down_exps.weight": gguf.Q4_K, "blk.8.ffn_down_exps.weight": gguf.Q6_K, "blk.8.attn_v.weight": gguf.Q6_K,
		"blk.8.attn_k.weight": gguf.Q4_K, "blk.8.ffn_up_exps.weight": gguf.Q4_K, "blk.47.ffn_down_exps.weight": gguf.Q6_K}
	for _, p := range ts {
		if w, ok := want[p.name]; ok && p.typ != w {
			t.Errorf("qwen3-30b-a3b Q4_K_M: %s %v, want %v", p.name, p.typ, w)
		}
	}
	moe.Experts, moe.Layers = 8, 2
	_, ts, _ = plan(Options{Shape: moe, Mix: "Q4_K_M"})
	want = map[string]gguf.Type{"blk.1.attn_v.weight": gguf.Q8_0, "blk.1.attn_k.weight": gguf.Q8_0, "blk.1.attn_output.weight": gguf.Q5_K}
	for _, p := range ts {
		if w, ok := want[p.name]; ok && p.typ != w {
			t.Errorf("8 experts: %s %v, want %v", p.name, p.typ, w)
		}
	}
	if _, _, err := plan(Options{Shape: moe, Mix: "Q4_K_X"}); err == nil {
		t.Error("unknown mix accepted")
	}
}
