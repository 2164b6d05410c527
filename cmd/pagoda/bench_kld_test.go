package main

import (
	"fmt"
	"math"
	"os"
	"strings"
	"testing"

	"pagoda/internal/testmodel"
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
	sts, err := benchKLD(f, string(text), []kldVariant{{"fast", loadOpts(false, 2)}, {"floor", loadOpts(true, 2)}})
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
	if code, _, stderr := runCLI("bench", "kld", "--model", testmodel.Stories(t), "--text", "../../README.md", "--reference", "fp64"); code != 2 || !strings.Contains(stderr, "want exact or dense") {
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
