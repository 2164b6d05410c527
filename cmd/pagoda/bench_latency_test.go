package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"pagoda/internal/testmodel"
)

func TestParseThreads(t *testing.T) {
	cases := []struct {
		in   string
		want []int
		ok   bool
	}{
		{"1,2", []int{1, 2}, true},
		{" 4 ", []int{4}, true},
		{"0", nil, false},
		{"1,x", nil, false},
		{"2000", nil, false},
	}
	for _, c := range cases {
		t.Run(c.in, func(t *testing.T) {
			got, err := parseThreads(c.in)
			if (err == nil) != c.ok || c.ok && !slices.Equal(got, c.want) {
				t.Fatalf("parseThreads(%q) = %v, %v; want %v ok=%v", c.in, got, err, c.want, c.ok)
			}
		})
	}
	if d, err := parseThreads(""); err != nil || d[0] != 1 {
		t.Fatalf("default thread counts %v, %v: want 1 first", d, err)
	}
}

func TestMeanSD(t *testing.T) {
	m, sd := meanSD([]float64{1, 2, 3})
	if m != 2 || sd != 1 {
		t.Fatalf("meanSD = %v, %v; want 2, 1", m, sd)
	}
	if m, sd := meanSD([]float64{5}); m != 5 || sd != 0 {
		t.Fatalf("one sample: %v, %v", m, sd)
	}
}

// TestBenchLatencyStories runs every test of `bench latency` on the tiny
// stories model, with the JSON output.
func TestBenchLatencyStories(t *testing.T) {
	out := filepath.Join(t.TempDir(), "lat.json")
	code, stdout, stderr := runCLI("bench", "latency", "--model", testmodel.Stories(t),
		"--threads", "1", "--reps", "2", "--pp", "16", "--tg", "4", "--batch", "1,3", "--batch-ctx", "8", "--batch-steps", "2",
		"--output-json", out)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, want := range []string{"ceilings", "| 1 | pp16 |", "| 1 | tg4 |", "decode 3 seqs, ctx 8", "of int8 dot peak", "of read bandwidth"} {
		if !strings.Contains(stdout, want) {
			t.Fatalf("output lacks %q:\n%s", want, stdout)
		}
	}
	var res struct {
		Results []latencyResult `json:"results"`
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &res); err != nil || len(res.Results) != 4 {
		t.Fatalf("JSON %s: %v", b, err)
	}
	for _, r := range res.Results {
		if !(r.Tokens > 0) || !(r.Fraction > 0) {
			t.Fatalf("result %+v: want positive tokens/s and fraction", r)
		}
	}
}

func TestBenchLatencyUsage(t *testing.T) {
	for _, args := range [][]string{{"--reps", "0"}, {"--batch", "x"}, {"--threads", "0"}, {"--kv", "f8"}} {
		code, _, stderr := runCLI(append([]string{"bench", "latency"}, args...)...)
		if code != 2 {
			t.Fatalf("%v: exit %d (%s), want 2", args, code, stderr)
		}
	}
}

// TestModelSynth writes a tiny model without a tokenizer and reads it
// back with `model info`.
func TestModelSynth(t *testing.T) {
	out := filepath.Join(t.TempDir(), "s.gguf")
	code, stdout, stderr := runCLI("model", "synth", "--dims", "64,128,2,4,2,300", "--type", "q8_0", "--vocab", "none", "--out", out)
	if code != 0 || !strings.Contains(stdout, "Q8_0 weights") {
		t.Fatalf("exit %d: %s%s", code, stdout, stderr)
	}
	code, stdout, _ = runCLI("model", "info", out)
	if code != 0 || !strings.Contains(stdout, "llama.block_count") || !strings.Contains(stdout, "Q8_0×") {
		t.Fatalf("model info: exit %d:\n%s", code, stdout)
	}
	for _, args := range [][]string{
		{"--shape", "smollm2-135m", "--dims", "64,128,2,4,2,300", "--out", out},
		{"--dims", "64,128,2,4,2,300", "--type", "Q9_9", "--vocab", "none", "--out", out},
		{"--dims", "64,128,2,4,2,300", "--vocab", "none"},
		{"--dims", "64,128,2,4,2,300", "--out", out},
	} {
		if code, _, stderr := runCLI(append([]string{"model", "synth"}, args...)...); code != 2 {
			t.Fatalf("%v: exit %d (%s), want 2", args, code, stderr)
		}
	}
}

// TestBenchCeilings runs the probes on one and two threads.
func TestBenchCeilings(t *testing.T) {
	out := filepath.Join(t.TempDir(), "c.json")
	code, stdout, stderr := runCLI("bench", "ceilings", "--threads", "1,2", "--read-mib", "8", "--output-json", out)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var c ceilings
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &c); err != nil || len(c.ReadGBs) != 2 || len(c.DotGOps) != 2 {
		t.Fatalf("JSON %s: %v", b, err)
	}
	for i := range c.Threads {
		if !(c.ReadGBs[i] > 0 && c.CacheGBs[i] > 0 && c.FMAGFlops[i] > 0 && c.DotGOps[i] > 0) {
			t.Fatalf("ceilings %+v: want positive figures", c)
		}
	}
	if !strings.Contains(stdout, "| 2 |") {
		t.Fatalf("no 2-thread row:\n%s", stdout)
	}
	if code, _, _ := runCLI("bench", "ceilings", "--read-mib", "0"); code != 2 {
		t.Fatalf("--read-mib 0: exit %d, want 2", code)
	}
}
