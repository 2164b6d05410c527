package engine

import (
	"testing"

	"pagoda/internal/testmodel"
)

// TestSmolLM2Reference: the default model's greedy ids equal llama.cpp's
// for every reference prompt (testdata/reference, made by
// scripts/make_reference.py: token by token, F16 cache, flash attention
// off), with all prompts running together in one engine at the default
// settings, and every chosen logprob within 1e-4.
func TestSmolLM2Reference(t *testing.T) {
	heavy(t)
	checkGreedy(t, testmodel.Default(t), readReference(t, testmodel.SmolReference(t)))
}
