package main

import (
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"pagoda/gguf"
	"pagoda/internal/testmodel"
	"pagoda/model"
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

func TestDepthList(t *testing.T) {
	cases := []struct {
		in   string
		want []int
		ok   bool
	}{
		{"0", []int{0}, true},
		{"0,4096,16384,32768", []int{0, 4096, 16384, 32768}, true},
		{" 512 , 8", []int{512, 8}, true},
		{"", nil, false},
		{"-1", nil, false},
		{"1,x", nil, false},
		{"4096,", nil, false},
		{"2000000", nil, false},
	}
	for _, c := range cases {
		t.Run(c.in, func(t *testing.T) {
			var d depthList
			err := d.Set(c.in)
			if (err == nil) != c.ok || c.ok && !slices.Equal(d, c.want) {
				t.Fatalf("Set(%q) = %v, %v; want %v ok=%v", c.in, d, err, c.want, c.ok)
			}
			if c.ok && d.String() != strings.Join(strings.Fields(strings.ReplaceAll(c.in, ",", " ")), ",") {
				t.Fatalf("String() = %q after Set(%q)", d.String(), c.in)
			}
		})
	}
}

// TestLatencyDepthFlags parses --depth and -d as llama-bench's -d: a
// comma list, 0 by default, the last occurrence winning.
func TestLatencyDepthFlags(t *testing.T) {
	cases := []struct {
		args []string
		want []int
		attn bool
	}{
		{nil, []int{0}, false},
		{[]string{"-d", "0,4096"}, []int{0, 4096}, false},
		{[]string{"--depth", "512"}, []int{512}, false},
		{[]string{"--depth=0,16384,32768", "--time-attention"}, []int{0, 16384, 32768}, true},
		{[]string{"-d", "1", "--d", "2,3"}, []int{2, 3}, false},
	}
	for _, c := range cases {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			f, err := parseLatencyFlags(c.args, io.Discard)
			if err != nil || !slices.Equal(f.depths, c.want) || f.timeAttn != c.attn || f.depths.max() != slices.Max(c.want) {
				t.Fatalf("depths %v, time-attention %v, %v; want %v, %v", f.depths, f.timeAttn, err, c.want, c.attn)
			}
		})
	}
	for _, args := range [][]string{{"-d", "x"}, {"--depth", "-4"}, {"-d"}} {
		if _, err := parseLatencyFlags(args, io.Discard); err == nil {
			t.Fatalf("%v: no error", args)
		}
	}
}

// TestBenchLatencyDepth runs pp and tg at two depths on the tiny stories
// model with the attention timed: the tests at depth are named as
// llama-bench names them, and each step's attention time is reported.
func TestBenchLatencyDepth(t *testing.T) {
	out := filepath.Join(t.TempDir(), "lat.json")
	code, stdout, stderr := runCLI("bench", "latency", "--model", testmodel.Stories(t),
		"--threads", "1", "--reps", "2", "--pp", "16", "--tg", "4", "-d", "0,600", "--batch", "2", "--batch-ctx", "8",
		"--batch-steps", "2", "--block-size", "16", "--time-attention", "--output-json", out)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, want := range []string{"| 1 | pp16 |", "| 1 | tg4 |", "| 1 | pp16 @ d600 |", "| 1 | tg4 @ d600 |",
		"weights + KV cache", "attention share"} {
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
	if err := json.Unmarshal(b, &res); err != nil || len(res.Results) != 5 {
		t.Fatalf("JSON %s: %v", b, err)
	}
	depths := []int{0, 0, 600, 600, 0}
	steps := []int{2, 8, 2, 8, 4} // per test, over its 2 reps
	for i, r := range res.Results {
		if r.Depth != depths[i] || r.Steps != steps[i] || !(r.Tokens > 0) || !(r.AttentionMs > 0) || !(r.OtherMs > 0) {
			t.Fatalf("result %d %+v: want depth %d, %d steps, positive tokens/s and attention and other times", i, r, depths[i], steps[i])
		}
	}
	// Too deep for the model's 2048 positions: a usage error before any test.
	if code, _, stderr := runCLI("bench", "latency", "--model", testmodel.Stories(t), "--threads", "1",
		"--pp", "16", "--tg", "4", "-d", "2040"); code != 2 || !strings.Contains(stderr, "context length 2048") {
		t.Fatalf("-d 2040: exit %d (%s), want 2 naming the context length", code, stderr)
	}
}

// TestAttentionTimerIdentical checks that timing the attention (which
// runs it unfused from the output projection) changes no logit, and that
// the runner reports the time only while the timer is on.
func TestAttentionTimerIdentical(t *testing.T) {
	m, _, err := model.Load(testmodel.Stories(t), model.LoadOptions{Threads: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	at, ok := m.(model.AttentionTimer)
	if !ok {
		t.Fatal("the stories model does not implement model.AttentionTimer")
	}
	var logits [2][]float32
	for i, on := range []bool{false, true} {
		at.TimeAttention(on)
		r, err := newSeqRunner(m, []int{64}, 64, 16, model.KVF16, 7)
		if err != nil {
			t.Fatal(err)
		}
		for _, step := range [][2]int{{0, 40}, {40, 1}, {41, 1}} { // a prompt, then two decode steps
			r.build([]int{0}, []int{step[0]}, []int{step[1]})
			res, err := r.exec.Execute(&r.step)
			if err != nil {
				t.Fatal(err)
			}
			if (res.Stats.Attention > 0) != on {
				t.Fatalf("timer %v: Stats.Attention %v", on, res.Stats.Attention)
			}
			logits[i] = append(logits[i], res.Logits...)
		}
	}
	at.TimeAttention(false)
	if !slices.Equal(logits[0], logits[1]) {
		t.Fatal("logits differ with the attention timer on")
	}
}

// TestSeqContexts checks the cache each test sequence gets: sequence 0 the
// deepest depth plus the longer of pp and tg, the batched sequences their
// context plus steps, and the step reservation the largest single step.
func TestSeqContexts(t *testing.T) {
	f := latencyFlags{pp: 512, tg: 128, depths: depthList{0, 4096}, batchCtx: 128, batchSteps: 16}
	ctxs, reserve := seqContexts(f, []int{1, 4})
	if !slices.Equal(ctxs, []int{4608, 144, 144, 144}) || reserve != 512 {
		t.Fatalf("contexts %v, reserve %d", ctxs, reserve)
	}
	f = latencyFlags{pp: 16, tg: 4, depths: depthList{100}, batchCtx: 8, batchSteps: 2}
	if ctxs, reserve := seqContexts(f, []int{2}); !slices.Equal(ctxs, []int{116, 10}) || reserve != 100 {
		t.Fatalf("contexts %v, reserve %d", ctxs, reserve)
	}
}

// TestReadCostMoE: a mixture of experts' decode bytes count the experts a
// token runs (expert_used_count of expert_count of every 3-D expert
// tensor) beside the dense matrices and norms; a step of many sequences
// tends to every expert; a dense model's steps read its weights once.
func TestReadCostMoE(t *testing.T) {
	dir := t.TempDir()
	moe, dense := filepath.Join(dir, "moe.gguf"), filepath.Join(dir, "dense.gguf")
	if code, stdout, stderr := runCLI("model", "synth", "--arch", "qwen3moe", "--dims", "64,32,2,4,2,300",
		"--experts", "8", "--experts-used", "2", "--type", "q8_0", "--vocab", "none", "--out", moe); code != 0 {
		t.Fatalf("synth: exit %d: %s%s", code, stdout, stderr)
	}
	if code, stdout, stderr := runCLI("model", "synth", "--dims", "64,128,2,4,2,300", "--type", "q8_0",
		"--vocab", "none", "--out", dense); code != 0 {
		t.Fatalf("synth: exit %d: %s%s", code, stdout, stderr)
	}
	c, err := readCost(moe)
	if err != nil {
		t.Fatal(err)
	}
	if c.experts != 8 || c.expertsUsed != 2 || c.expertBytes == 0 {
		t.Fatalf("experts %d, used %d, expert bytes %d; want 8, 2, > 0", c.experts, c.expertsUsed, c.expertBytes)
	}
	var dense2, expert, norms int64
	f, err := gguf.Open(moe)
	if err != nil {
		t.Fatal(err)
	}
	for _, tn := range f.Tensors {
		switch {
		case len(tn.Dims) == 3:
			expert += tn.Size
		case len(tn.Dims) == 1:
			norms += tn.Size
		case tn.Name != "token_embd.weight":
			dense2 += tn.Size
		}
	}
	f.Close()
	if want := dense2 + norms + expert/4; c.weightBytes != want || c.expertBytes != expert {
		t.Errorf("weight bytes %d, expert bytes %d; want %d, %d", c.weightBytes, c.expertBytes, want, expert)
	}
	if got := c.stepBytes(1); got != float64(c.weightBytes) {
		t.Errorf("a step of 1 reads %.0f bytes, want %d", got, c.weightBytes)
	}
	if got, all := c.stepBytes(1000), float64(dense2+norms+expert); got < all*0.999 || got > all {
		t.Errorf("a step of 1000 reads %.0f bytes, want about %.0f", got, all)
	}
	d, err := readCost(dense)
	if err != nil {
		t.Fatal(err)
	}
	if d.experts != 0 || d.expertBytes != 0 || d.stepBytes(32) != float64(d.weightBytes) || d.headMACs == 0 {
		t.Errorf("dense: experts %d, expert bytes %d, step of 32 %.0f of %d, head %d", d.experts, d.expertBytes, d.stepBytes(32), d.weightBytes, d.headMACs)
	}
}
