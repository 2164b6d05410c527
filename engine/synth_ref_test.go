package engine

import (
	"path/filepath"
	"testing"

	"pagoda/gguf"
	"pagoda/internal/testmodel"
	"pagoda/model/synth"
)

// synthFamilies are tiny synthetic models of each family with its real
// vocabulary (model/synth, seed 1, Q8_0 weights), the very files llama.cpp
// made testdata/reference/synth-FAMILY-q8_0*.json from (their sha256 is
// checked, so a change in synth cannot pass unnoticed):
//
//	pagoda model synth --arch FAMILY --dims DIMS [--window W] --type Q8_0 --out F
//	scripts/make-references.sh F testdata/reference/synth-FAMILY-q8_0 [--long]
var synthFamilies = []struct {
	family, dims string
	window       int
	vocab        string // ggml-vocab name, or "" for Gemma 3 270M's
	sha256       string
	long         bool
}{
	{"qwen3", "128,256,2,4,2,1000", -1, "qwen2", "305d19cb24d1f99db2e235b9c9c9688b67337044d43125e35c3ec209498aa699", false},
	// 16 experts of 64 hidden units, 4 per token (synth's qwen3moe defaults)
	{"qwen3moe", "128,64,2,4,2,1000", -1, "qwen2", "aaa11ea0e022078dc2415e820741ca3154aefe57f9425d9d6b80b3f276ac4928", false},
	{"phi3", "128,256,2,4,2,1000", -1, "phi-3", "f67cbd768719607ac9b2596b0f04dbd2ffb581f61a78a314a382a792becb3269", false},
	{"llama3", "128,256,2,4,2,1000", -1, "llama-bpe", "938870bb8fdd11c4a5466bc1ab1b888cec3b6c4295314b9ce5ec9d56c53d6b8b", false},
	{"gemma3", "128,256,6,4,1,1000,64", 32, "", "de9d2fe4eefe5187a2bf5ac805d5bc1f68560e4bedad53d999eb815189d4ef72", true},
	// 8 MXFP4 experts of 64 hidden units, 4 per token (synth's gpt-oss
	// defaults); layers 0 local (window 32), 1 global; attention sinks.
	// Also .flash.json (make_reference.py --flash-attn) and .repack.json
	// (--repack: llama.cpp's default, its experts repacked).
	{"gpt-oss", "128,64,2,4,2,1000", 32, "llama-bpe", "d69ce9fcc18c69c1a47519fcf3eeec6c9192bcd585ef6bbf1e4e6b168afa2b4e", true},
}

// writeSynthFamily synthesizes a family's test model as the command above.
func writeSynthFamily(t *testing.T, family, dims string, window int, vocab string) string {
	t.Helper()
	vpath := testmodel.Gemma3(t)
	if vocab != "" {
		vpath = testmodel.Vocab(t, vocab)
	}
	v, err := gguf.Open(vpath)
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	path := filepath.Join(t.TempDir(), family+".gguf")
	if err := synth.WriteReference(path, family, dims, window, v); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestSynthFamilies compares each family's tiny model with llama.cpp: greedy
// with the exact arithmetic against its token-by-token path (the same ids,
// log-probabilities within 1e-4), and its default path's continuations
// teacher-forced with both arithmetics; for Gemma 3 and gpt-oss also a
// 700-token prompt across their 32-position window.
func TestSynthFamilies(t *testing.T) {
	heavy(t)
	for _, f := range synthFamilies {
		t.Run(f.family, func(t *testing.T) {
			path := writeSynthFamily(t, f.family, f.dims, f.window, f.vocab)
			if got := testmodel.SHA256(t, path); got != f.sha256 {
				t.Fatalf("synthesized file's sha256 %s, want %s (the reference's model)", got, f.sha256)
			}
			ref := "testdata/reference/synth-" + f.family + "-q8_0"
			t.Run("greedy", func(t *testing.T) {
				checkGreedyWith(t, path, readReference(t, testmodel.RepoFile(t, ref+".json")), noRepack)
			})
			teacher := readReference(t, testmodel.RepoFile(t, ref+".teacher.json"))
			if testing.Short() {
				teacher.Cases = teacher.Cases[:3]
			}
			checkTeacherForced(t, path, teacher, 1024, synthArithmetics)
			if f.long {
				long := readReference(t, testmodel.RepoFile(t, ref+".long.json"))
				checkTeacherForced(t, path, long, 1024, synthArithmetics)
			}
			if f.family == "gpt-oss" {
				t.Run("flash", func(t *testing.T) { // its sinks in flash attention's recurrence
					flash := func(c *Config) { c.NoRepack, c.FlashAttention = true, true }
					checkGreedyWith(t, path, readReference(t, testmodel.RepoFile(t, ref+".flash.json")), flash)
				})
				t.Run("repack", func(t *testing.T) { // llama.cpp's default: its MXFP4 experts repacked
					checkGreedyWith(t, path, readReference(t, testmodel.RepoFile(t, ref+".repack.json")), nil)
				})
			}
		})
	}
}

// noRepack is the arithmetic of the references (made with llama.cpp's
// weight repacking off): the exact one with plain vec_dot products, which
// differs from the default exact arithmetic on Q4_0 and MXFP4 weights only
// (gpt-oss's experts).
func noRepack(c *Config) { c.ExactArithmetic, c.NoRepack = true, true }

// synthArithmetics are the bounds of the synthetic families' teacher-forced
// comparisons, set from the measurement (2026-11-27): exact 100% on every
// family (largest |Δ logprob| 0.000); fast 100% on qwen3, phi3, llama3 and
// Gemma's long case, 496/512 (96.9%) on Gemma's short ones, 632/640
// (98.75%) on qwen3moe, every disagreement within 0.01 nats (random
// weights: flat distributions, many near-ties), largest |Δ logprob| 0.015;
// gpt-oss (2026-11-27): exact 100% (largest |Δ logprob| 0.000, greedy
// 4.8e-7), fast 504/512 (98.4%) on the short cases, 100% on the long one
// across its 32-position window, every disagreement within 0.004 nats.
var synthArithmetics = []teacherArithmetic{
	{"exact", noRepack, 0.99, 0.05, 0.05},
	{"fast", func(c *Config) { c.ExactArithmetic = false }, 0.95, 0.05, 0.05},
}
