//go:build mpi

package engine

import (
	"fmt"
	"math"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"pagoda/dist"
	"pagoda/gguf"
	"pagoda/internal/mpitest"
	"pagoda/internal/testmodel"
	"pagoda/model/synth"
)

// epLogprobBound bounds |logprob(EP, TP=N) − logprob(TP=1)| of the chosen
// tokens: a token's experts' outputs are summed per rank, then over the
// ranks, another grouping of the sum than one rank's (model/llama's
// epBound, measured up to 0.006 over whole vocabularies).
const epLogprobBound = 0.01

// TestTensorParallelExperts: expert parallelism (--enable-expert-parallel)
// under mpirun: a synthetic qwen3moe at TP = 2 (16 experts, 8 per rank)
// and a synthetic gpt-oss at TP = 4 (8 MXFP4 experts with biases, 2 per
// rank; its experts of 64 hidden units cannot be split Megatron-style
// over 4 ranks), each generating greedily with DBO off and on (bit for
// bit equal), and the same tokens as TP = 1 in rank 0's process.
func TestTensorParallelExperts(t *testing.T) {
	for _, c := range []struct {
		name     string
		np       int
		scenario string
	}{{"TP=2/qwen3moe", 2, "experts-qwen3moe"}, {"TP=4/gpt-oss", 4, "experts-gpt-oss"}} {
		t.Run(c.name, func(t *testing.T) {
			out, err := mpitest.Run(t, c.np, "TestTensorParallelHelperProcess", tpHelperEnv, c.scenario, 4*time.Minute)
			follows := strings.Count(out, "FOLLOW OK")
			if err != nil || !strings.Contains(out, "rank 0: EP OK") || follows != 2*(c.np-1) {
				t.Fatalf("mpirun: %v (%d follower runs ended well)\n%s", err, follows, out)
			}
			t.Log(lines(out, "rank 0"))
		})
	}
}

// synthMoE writes scenario's model (stories260K's tokenizer, 4 heads and
// 4 KV heads, Q8_0; gpt-oss's experts MXFP4) into dir; every rank writes
// its own copy, the same bytes.
func synthMoE(t *testing.T, dir, family string) string {
	v, err := gguf.Open(testmodel.StoriesGGUF)
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	dims, window := "128,256,2,4,4,512", 0
	if family == "gpt-oss" {
		dims, window = "128,64,2,4,4,512", 8
	}
	shape, err := synth.ParseArchDims(family, dims)
	if err != nil {
		t.Fatal(err)
	}
	shape.ContextLen, shape.SlidingWindow = 256, window
	path := filepath.Join(dir, family+".gguf")
	if err := synth.Write(path, synth.Options{Shape: shape, Type: gguf.Q8_0, Vocab: v, Seed: 15, Workers: 1}); err != nil {
		t.Fatal(err)
	}
	return path
}

// epScenario is one rank of TestTensorParallelExperts.
func epScenario(t *testing.T, c dist.Comm, scenario string) {
	cfg := tpConfigModel(c, synthMoE(t, t.TempDir(), strings.TrimPrefix(scenario, "experts-")))
	cfg.ExpertParallel = true
	off, steps, follower := dboOffOn(t, c, cfg)
	if follower {
		return
	}
	one, _, err := generateDBO(tpConfigModel(nil, cfg.Model), false)
	if err != nil {
		t.Fatalf("rank 0: TP=1: %v", err)
	}
	worst := 0.0
	eachTokenPair(t, one, off, "TP=1", "EP", func(_, _ int, a, b Logprob) {
		worst = math.Max(worst, math.Abs(float64(a.Logprob-b.Logprob)))
	})
	if worst > epLogprobBound {
		t.Fatalf("rank 0: EP and TP=1 logprobs differ by up to %.3g, bound %g", worst, epLogprobBound)
	}
	fmt.Printf("rank 0: EP OK: TP=%d with expert parallelism, %d prompts: the same tokens as TP=1 (largest |logprob difference| %.3g), "+
		"bit-identical with DBO on (%d of %d steps split) and off\n", c.Size(), len(off), worst, steps.split, steps.n)
}
