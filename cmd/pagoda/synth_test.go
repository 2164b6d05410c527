package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestModelSynthFamilies writes a tiny model of every family without a
// tokenizer and reads its metadata back with `model info`.
func TestModelSynthFamilies(t *testing.T) {
	for _, c := range []struct{ arch, key string }{
		{"qwen3", "qwen3.attention.key_length"},
		{"gemma3", "gemma3.attention.sliding_window"},
		{"phi3", "phi3.rope.scaling.attn_factor"},
		{"gpt-oss", "gpt-oss.expert_feed_forward_length"},
	} {
		t.Run(c.arch, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "s.gguf")
			code, stdout, stderr := runCLI("model", "synth", "--arch", c.arch, "--dims", "64,128,2,4,2,300",
				"--type", "q8_0", "--vocab", "none", "--context", "256", "--out", out)
			if code != 0 || !strings.Contains(stdout, "("+c.arch+", 2 layers)") {
				t.Fatalf("exit %d: %s%s", code, stdout, stderr)
			}
			code, stdout, _ = runCLI("model", "info", out)
			if code != 0 || !strings.Contains(stdout, c.key) || !hasLine(stdout, c.arch+".context_length", "256") {
				t.Fatalf("model info: exit %d:\n%s", code, stdout)
			}
		})
	}
}

// TestModelSynthMix writes a tiny Q4_K_M model drawn directly: the mix's
// types (the tied embeddings Q6_K, attn_v and ffn_down Q6_K on the last
// layer, use_more_bits' last eighth of two) and file type; a bad --draw
// is a usage error.
func TestModelSynthMix(t *testing.T) {
	out := filepath.Join(t.TempDir(), "s.gguf")
	code, stdout, stderr := runCLI("model", "synth", "--arch", "qwen3", "--dims", "256,512,2,4,2,300", "--type", "q4_k_m", "--draw", "direct",
		"--vocab", "none", "--out", out)
	if code != 0 || !strings.Contains(stdout, "Q4_K_M weights") {
		t.Fatalf("exit %d: %s%s", code, stdout, stderr)
	}
	code, stdout, _ = runCLI("model", "info", out, "--tensors")
	if code != 0 || !hasLine(stdout, "general.file_type", "15") || !strings.Contains(stdout, "Q4_K×12, Q6_K×3") {
		t.Fatalf("model info: exit %d:\n%s", code, stdout)
	}
	if code, _, stderr := runCLI("model", "synth", "--dims", "64,128,2,4,2,300", "--draw", "fast", "--vocab", "none", "--out", out); code != 2 {
		t.Fatalf("--draw fast: exit %d (%s), want 2", code, stderr)
	}
}

// TestSynthFlags: the overrides of a named shape, and the combinations
// refused.
func TestSynthFlags(t *testing.T) {
	s, err := synthFlags{shape: "qwen3-0.6b", layers: 2, context: 1024, window: -1}.resolve()
	if err != nil || s.Arch != "qwen3" || s.Layers != 2 || s.ContextLen != 1024 || s.HeadDim() != 128 {
		t.Fatalf("qwen3-0.6b with 2 layers: %+v, %v", s, err)
	}
	s, err = synthFlags{shape: "gemma-3-270m", window: 0}.resolve()
	if err != nil || s.SlidingWindow != 0 || s.Layers != 18 {
		t.Fatalf("gemma-3-270m without a window: %+v, %v", s, err)
	}
	s, err = synthFlags{arch: "gemma3", dims: "64,128,6,4,1,300", window: 4}.resolve()
	if err != nil || s.SlidingWindow != 4 || s.HeadDim() != 16 || s.Vocab == "" {
		t.Fatalf("gemma3 dims: %+v, %v", s, err)
	}
	s, err = synthFlags{arch: "llama3", dims: "64,128,2,4,2,300", window: -1}.resolve()
	if err != nil || s.Arch != "llama" || s.Llama3Rope == nil || s.Vocab != "llama-bpe" {
		t.Fatalf("llama3 dims: %+v, %v", s, err)
	}
	s, err = synthFlags{arch: "gpt-oss", dims: "64,32,2,4,2,300", window: 16, experts: 4, expertsUsed: 2}.resolve()
	if err != nil || s.SlidingWindow != 16 || s.Experts != 4 || s.ExpertsUsed != 2 || s.HiddenDim != 32 || s.Tied {
		t.Fatalf("gpt-oss dims: %+v, %v", s, err)
	}
	s, err = synthFlags{arch: "qwen2", shape: "smollm2-135m", window: -1}.resolve()
	if err != nil || s.Arch != "qwen2" {
		t.Fatalf("smollm2 as qwen2: %+v, %v", s, err)
	}
	for _, f := range []synthFlags{
		{shape: "qwen3-0.6b", window: 8},                  // no sliding window on qwen3
		{arch: "gemma3", shape: "qwen3-0.6b", window: -1}, // families do not switch
		{shape: "qwen3-0.6b", layers: -1, window: -1},
		{arch: "phi3", dims: "64,128,2,4,2,300,32", window: -1}, // heads × head size ≠ dim
		{arch: "rwkv", dims: "64,128,2,4,2,300", window: -1},
	} {
		if _, err := f.resolve(); err == nil {
			t.Fatalf("%+v accepted", f)
		}
	}
}

// hasLine reports whether text has a line of the fields key and value.
func hasLine(text, key, value string) bool {
	for line := range strings.Lines(text) {
		if f := strings.Fields(line); len(f) == 2 && f[0] == key && f[1] == value {
			return true
		}
	}
	return false
}
