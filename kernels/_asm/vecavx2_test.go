package main

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// TestAVX2IsVEX: the AVX2 kernels (vector, quantizer and GEMM) must run
// on CPUs without AVX-512: registers 0..15 of 128/256 bits only, no masks,
// no broadcasts, no EVEX-only instructions. avo allocates the lowest
// registers first, so this fails if a kernel ever needs more than 16.
func TestAVX2IsVEX(t *testing.T) {
	for _, f := range []string{"../vecavx2_amd64.s", "../quantavx2_amd64.s", "../gemm32avx2_amd64.s", "../gemmr_amd64.s", "../attnavx2_amd64.s"} {
		checkVEX(t, f)
	}
}

func checkVEX(t *testing.T, file string) {
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	evex := regexp.MustCompile(`\b([XY](1[6-9]|2[0-9]|3[01])|Z[0-9]+|K[0-7])\b|\.BCST|VPXORD|VPANDD|VMOVDQU32|VMOVDQU64`)
	for i, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "//") {
			continue
		}
		if m := evex.FindString(line); m != "" {
			t.Fatalf("%s line %d uses %s (AVX-512): %s", file, i+1, m, line)
		}
	}
}
