//go:build mpi

package engine

import (
	"context"
	"errors"
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

// Dual-batch overlap under mpirun: the same generation with DBO off and on
// (thresholds low enough that the prefill and the decode steps split) must
// give the same tokens and log-probabilities bit for bit, with every rank
// running the split it receives in the step. TP=2 on stories260K; TP=4 on
// a synthetic model whose 4 query and 4 KV heads divide over 4 ranks, also
// checked against TP=1 in rank 0's process.
func TestTensorParallelDBO(t *testing.T) {
	for _, c := range []struct {
		name     string
		np       int
		scenario string
	}{{"TP=2/stories260K", 2, "dbo"}, {"TP=4/synthetic", 4, "dbo4"}} {
		t.Run(c.name, func(t *testing.T) {
			out, err := mpitest.Run(t, c.np, "TestTensorParallelHelperProcess", tpHelperEnv, c.scenario, 4*time.Minute)
			follows := strings.Count(out, "FOLLOW OK")
			if err != nil || !strings.Contains(out, "rank 0: DBO OK") || follows != 2*(c.np-1) {
				t.Fatalf("mpirun: %v (%d follower runs ended well)\n%s", err, follows, out)
			}
			t.Log(lines(out, "rank 0"))
		})
	}
}

// dboPrompts: four sequences, so decode steps of 4 tokens split 2 | 2.
var dboPrompts = [][]int32{{1, 403, 407, 261}, {1}, {1, 320, 281, 300, 262, 409, 312}, {1, 262, 415, 271, 422, 426}}

// synthTP4 writes the TP=4 test model (stories260K's tokenizer, 4 heads
// and 4 KV heads, Q8_0 with 32-column row-parallel shards) into dir; every
// rank writes its own copy, the same bytes.
func synthTP4(t *testing.T, dir string) string {
	v, err := gguf.Open(testmodel.StoriesGGUF)
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	path := filepath.Join(dir, "tp4.gguf")
	shape := synth.Shape{Arch: "llama", Name: "tp4", Dim: 128, HiddenDim: 256, Layers: 2, Heads: 4, KVHeads: 4,
		ContextLen: 256, RopeTheta: 10000, RMSEps: 1e-5}
	if err := synth.Write(path, synth.Options{Shape: shape, Type: gguf.Q8_0, Vocab: v, Seed: 14, Workers: 1}); err != nil {
		t.Fatal(err)
	}
	return path
}

// dboScenario is one rank of TestTensorParallelDBO.
func dboScenario(t *testing.T, c dist.Comm, scenario string) {
	cfg := tpConfig(c)
	if scenario == "dbo4" {
		cfg.Model = synthTP4(t, t.TempDir())
	}
	off, steps, follower := dboOffOn(t, c, cfg)
	if follower {
		return
	}
	if steps.split == 0 {
		t.Fatalf("rank 0: no step ran as two micro-batches")
	}
	note := ""
	if scenario == "dbo4" {
		one, _, err := generateDBO(tpConfigModel(nil, cfg.Model), false)
		if err != nil {
			t.Fatalf("rank 0: TP=1: %v", err)
		}
		worst := compareOutputs(t, one, off)
		note = fmt.Sprintf("; TP=4 vs TP=1: same tokens, largest |logprob difference| %.3g", worst)
	}
	fmt.Printf("rank 0: DBO OK: TP=%d, %d prompts bit-identical with DBO on and off; %d of %d steps split; "+
		"with DBO: compute %v, communication %v, waiting %v over %d all-reduces%s\n",
		c.Size(), len(off), steps.split, steps.n, steps.compute.Round(time.Microsecond),
		steps.comm.Round(time.Microsecond), steps.wait.Round(time.Microsecond), steps.allReduces, note)
}

// tpConfigModel is tpConfig with another model file.
func tpConfigModel(c dist.Comm, path string) Config {
	cfg := tpConfig(c)
	cfg.Model = path
	return cfg
}

// stepTotals sums the step statistics of a run.
type stepTotals struct {
	n, split, allReduces int
	compute, comm, wait  time.Duration
}

// generateDBO runs dboPrompts greedily (16 tokens, logprobs), DBO on with
// dboOffOn runs cfg twice over c, DBO off then on: ranks above 0 follow
// (follower true, nothing else returned); rank 0 generates and fails t
// unless every log-probability is bit-identical with DBO on and off, and
// returns the outputs with DBO off and the steps with it on.
func dboOffOn(t *testing.T, c dist.Comm, cfg Config) (off []RequestOutput, steps stepTotals, follower bool) {
	if c.Rank() > 0 {
		for range 2 { // DBO off, then on
			if err := Follow(cfg, c); err != nil {
				t.Fatalf("rank %d: %v", c.Rank(), err)
			}
			fmt.Printf("rank %d: FOLLOW OK\n", c.Rank())
		}
		return nil, steps, true
	}
	off, _, err := generateDBO(cfg, false)
	if err != nil {
		t.Fatalf("rank 0: DBO off: %v", err)
	}
	on, steps, err := generateDBO(cfg, true)
	if err != nil {
		t.Fatalf("rank 0: DBO on: %v", err)
	}
	eachTokenPair(t, off, on, "off", "DBO on", func(i, j int, a, b Logprob) {
		if math.Float32bits(a.Logprob) != math.Float32bits(b.Logprob) {
			t.Fatalf("rank 0: prompt %d token %d: logprob %v with DBO, %v without", i, j, b.Logprob, a.Logprob)
		}
	})
	return off, steps, false
}

// thresholds of 4 tokens (decode) and 8 (prefill), or off.
func generateDBO(cfg Config, on bool) ([]RequestOutput, stepTotals, error) {
	cfg.DBO.Enable, cfg.DBO.DecodeTokenThreshold, cfg.DBO.PrefillTokenThreshold = on, 4, 8
	var st stepTotals
	e, err := New(cfg)
	if err != nil {
		return nil, st, err
	}
	e.OnStep(func(s StepInfo) {
		st.n++
		if s.MicroBatches == 2 {
			st.split++
		}
		st.allReduces += s.AllReduces
		st.compute, st.comm, st.wait = st.compute+s.Compute, st.comm+s.Comm, st.wait+s.Wait
	})
	ctx, cancel := context.WithCancel(context.Background())
	p := GreedyParams(16)
	p.ReturnLogprobs, p.Logprobs, p.IgnoreEOS = true, 1, true
	outs, err := e.Generate(ctx, dboPrompts, p)
	cancel()
	return outs, st, errors.Join(err, e.Close())
}

// compareOutputs checks equal tokens and returns the largest logprob
// difference of the chosen tokens.
func compareOutputs(t *testing.T, want, got []RequestOutput) float64 {
	worst := 0.0
	eachTokenPair(t, want, got, "want", "tokens", func(_, _ int, a, b Logprob) {
		worst = math.Max(worst, math.Abs(float64(a.Logprob-b.Logprob)))
	})
	if worst > tpLogprobBound {
		t.Fatalf("rank 0: logprobs differ by up to %.3g, bound %g", worst, tpLogprobBound)
	}
	return worst
}
