package main

import (
	"fmt"
	"math"
	"os"
	"strings"
	"testing"

	"pagoda/internal/testmodel"
	"pagoda/model"
)

// TestCompareLogits: identical logits have no divergence and agree; the
// divergence of two known distributions is their KL divergence.
func TestCompareLogits(t *testing.T) {
	a := []float32{1, 2, 3, 0.5}
	if kl, same, _ := compareLogits(a, a); kl > 1e-12 || !same {
		t.Fatalf("identical logits: KL %g, same %v", kl, same)
	}
	p := []float32{0, float32(math.Log(3))} // probabilities 1/4, 3/4
	q := []float32{float32(math.Log(3)), 0} // 3/4, 1/4
	want := 0.25*math.Log(1.0/3) + 0.75*math.Log(3)
	kl, same, margin := compareLogits(p, q)
	if math.Abs(kl-want) > 1e-6 || same || math.Abs(margin-math.Log(3)) > 1e-6 {
		t.Fatalf("KL %g (want %g), same %v, margin %g", kl, want, same, margin)
	}
}

// TestBenchKLDFlags: bad flags are usage errors, a text too short for the
// positions asked a clear error.
func TestBenchKLDFlags(t *testing.T) {
	if code, _, stderr := runCLI("bench", "kld", "--model", testmodel.Stories(t)); code != 2 || !strings.Contains(stderr, "--text is required") {
		t.Errorf("no --text: exit %d, stderr %q", code, stderr)
	}
	short := t.TempDir() + "/short.txt"
	if err := os.WriteFile(short, []byte("Once upon a time"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, stderr := runCLI("bench", "kld", "--model", testmodel.Stories(t), "--text", short, "--tokens", "100", "--no-floor")
	if code != 1 || !strings.Contains(stderr, "needed for 100 positions") {
		t.Errorf("short text: exit %d, stderr %q", code, stderr)
	}
}

// TestBenchKLDDefaultModel: on 254 positions of the README, the default
// model's fast arithmetic stays as close to the exact one as the exact
// arithmetic with flash attention (a mere change of rounding) does: a
// broken fast kernel would be orders of magnitude further.
func TestBenchKLDDefaultModel(t *testing.T) {
	text, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	f := kldFlags{model: testmodel.Default(t), tokens: 254, ctx: 128, threads: 2}
	sts, err := benchKLD(f, string(text), []kldVariant{{"fast", loadOpts(false, 2), model.KVF16}, {"floor", loadOpts(true, 2), model.KVF16}})
	if err != nil {
		t.Fatal(err)
	}
	fast, floor := sts[0], sts[1]
	t.Logf("fast: mean KL %.3g, %d of %d differ; floor: mean KL %.3g, %d differ", fast.mean, fast.differ, fast.n, floor.mean, floor.differ)
	if fast.n != 254 || fast.mean > 3*floor.mean+1e-3 || fast.differ > 3*floor.differ+5 {
		t.Errorf("fast arithmetic: %d positions, mean KL %.3g, %d differ; floor %.3g, %d differ", fast.n, fast.mean, fast.differ, floor.mean, floor.differ)
	}
}

// TestBenchKLDDense: against the dense float64 reference, each of
// stories260K's arithmetics (F32 weights: only float32 rounding differs
// from the reference) has a mean KL divergence under 1e-4 (2–3e-6
// measured; a reference or a variant computing anything else is orders of
// magnitude further); an unknown reference is a usage error.
func TestBenchKLDDense(t *testing.T) {
	if code, _, stderr := runCLI("bench", "kld", "--model", testmodel.Stories(t), "--text", "../../README.md", "--reference", "fp64"); code != 2 || !strings.Contains(stderr, "want exact, dense or fast") {
		t.Errorf("--reference fp64: exit %d, stderr %q", code, stderr)
	}
	code, stdout, stderr := runCLI("bench", "kld", "--model", testmodel.Stories(t), "--text", "../../README.md",
		"--reference", "dense", "--tokens", "93", "--ctx", "32", "--threads", "2")
	if code != 0 {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	t.Log(stdout)
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	if len(lines) != 4 || !strings.Contains(lines[0], "against the dense float64 reference") {
		t.Fatalf("want a header and three variants (fast, exact, floor), got %q", stdout)
	}
	for _, l := range lines[1:] {
		var kl float64
		i := strings.Index(l, "mean KL ")
		if i < 0 {
			t.Fatalf("no mean KL in %q", l)
		}
		if _, err := fmt.Sscanf(l[i:], "mean KL %g", &kl); err != nil || kl > 1e-4 {
			t.Errorf("%q: mean KL %g (%v), want ≤ 1e-4", l, kl, err)
		}
	}
}

// TestBenchKLDKVCache: --reference fast scores KV cache types alone: an
// f16 cache against the f16 reference gives identical logits (the same
// arithmetic), a q8_0 cache a small divergence that is not zero.
func TestBenchKLDKVCache(t *testing.T) {
	if code, _, stderr := runCLI("bench", "kld", "--model", testmodel.Stories(t), "--text", "../../README.md", "--kv-cache-dtype", "q4"); code != 2 || !strings.Contains(stderr, "--kv-cache-dtype") {
		t.Errorf("--kv-cache-dtype q4: exit %d, stderr %q", code, stderr)
	}
	code, stdout, stderr := runCLI("bench", "kld", "--model", testmodel.Default(t), "--text", "../../README.md",
		"--reference", "fast", "--kv-cache-dtype", "f16,q8_0", "--tokens", "127", "--ctx", "128", "--threads", "2")
	if code != 0 {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	t.Log(stdout)
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	if len(lines) != 3 || !strings.Contains(lines[0], "the fast arithmetic on an f16 KV cache") ||
		!strings.Contains(lines[1], "f16 cache") || !strings.Contains(lines[2], "q8_0 cache") {
		t.Fatalf("want a header, the f16 and the q8_0 cache, got %q", stdout)
	}
	kl := func(l string) float64 {
		var v float64
		if _, err := fmt.Sscanf(l[strings.Index(l, "mean KL "):], "mean KL %g", &v); err != nil {
			t.Fatalf("%q: %v", l, err)
		}
		return v
	}
	if f16 := kl(lines[1]); f16 != 0 || !strings.Contains(lines[1], "agreement 100.00%") {
		t.Errorf("f16 against itself: %q", lines[1])
	}
	if q8 := kl(lines[2]); q8 <= 0 || q8 > 0.02 {
		t.Errorf("q8_0: mean KL %g, want in (0, 0.02]", q8)
	}
}
