package main

import (
	"io"
	"slices"
	"strconv"
	"testing"

	"pagoda/bench"
)

// Without --seed every run draws a new seed, so it sends new random prompts
// (none of them in the server's prefix cache from an earlier run); --seed
// repeats a run's prompts exactly, and another seed changes them.
func TestBenchServeSeed(t *testing.T) {
	prompts := func(args ...string) ([]bench.Prompt, uint64) {
		t.Helper()
		f, err := parseBenchServe(append([]string{"--num-prompts", "4", "--random-input-len", "16"}, args...), io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		p, err := f.prompts()
		if err != nil {
			t.Fatal(err)
		}
		if again, _ := f.prompts(); !slices.Equal(again, p) {
			t.Fatal("one run's seed changed between its uses")
		}
		return p, f.resolveSeed()
	}
	a, seedA := prompts()
	b, seedB := prompts()
	if seedA == seedB || slices.Equal(a, b) {
		t.Fatalf("two runs without --seed sent the same prompts (seeds %d, %d)", seedA, seedB)
	}
	c, seedC := prompts("--seed", "7")
	d, _ := prompts("--seed", "7")
	e, _ := prompts("--seed", "8")
	if seedC != 7 || !slices.Equal(c, d) || slices.Equal(c, e) {
		t.Fatalf("--seed 7: seed %d, same prompts again %v, other prompts for --seed 8 %v",
			seedC, slices.Equal(c, d), !slices.Equal(c, e))
	}
	// A run without --seed is repeated by giving the seed it drew.
	if r, _ := prompts("--seed", strconv.FormatUint(seedA, 10)); !slices.Equal(r, a) {
		t.Fatal("--seed with a run's drawn seed did not repeat its prompts")
	}
}
