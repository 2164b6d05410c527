//go:build mpi

package engine

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"strings"
	"testing"
	"time"

	"pagoda/dist"
	"pagoda/internal/mpitest"
	"pagoda/internal/testmodel"
	"pagoda/model"
)

// The tensor-parallel tests run the engine on two processes started by
// mpirun: TestTensorParallelMPI launches this test binary under
// `mpirun -np 2` with PAGODA_TP_HELPER naming a scenario, and
// TestTensorParallelHelperProcess is each rank's body (it returns at once
// without PAGODA_TP_HELPER).

const tpHelperEnv = "PAGODA_TP_HELPER"

// tpLogprobBound is the largest |logprob(TP=2) − logprob(TP=1)| accepted
// over the generated tokens and their top-5 alternatives (measured: about
// 1e-5 on stories260K, where wo's and down's products become sums of two
// partial sums).
const tpLogprobBound = 1e-4

func mpirunTP(t *testing.T, scenario string, extra ...string) (string, error) {
	t.Helper()
	return mpitest.Run(t, 2, "TestTensorParallelHelperProcess", tpHelperEnv, scenario, 4*time.Minute, extra...)
}

func TestTensorParallelMPI(t *testing.T) {
	t.Run("stories260K", func(t *testing.T) {
		out, err := mpirunTP(t, "generate")
		if err != nil || !strings.Contains(out, "rank 0: TP OK") || !strings.Contains(out, "rank 1: FOLLOW OK") {
			t.Fatalf("mpirun: %v\n%s", err, out)
		}
		t.Log(lines(out, "rank "))
	})
	// Rank 1 exits after a few steps and the runtime does not end the job:
	// rank 0's request must fail with dist's timeout, not hang.
	t.Run("rank-dies", func(t *testing.T) {
		out, err := mpirunTP(t, "rank-dies", "--mca", "orte_abort_on_non_zero_status", "0")
		t.Logf("mpirun: %v\n%s", err, lines(out, "rank "))
		if !strings.Contains(out, "rank 0: failed as expected") || !strings.Contains(out, dist.ErrTimeout.Error()) {
			t.Fatalf("rank 0 did not fail with the lost rank's timeout:\n%s", out)
		}
	})
}

func lines(s, sub string) string {
	var keep []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			keep = append(keep, l)
		}
	}
	return strings.Join(keep, "\n")
}

func tpConfig(c dist.Comm) Config {
	cfg := DefaultConfig(testmodel.StoriesGGUF)
	cfg.MaxModelLen, cfg.KVCacheType, cfg.Threads, cfg.EnforceEager = 256, model.KVF32, 1, true
	cfg.NumBlocksOverride = 64
	cfg.TensorParallel = c
	return cfg
}

func TestTensorParallelHelperProcess(t *testing.T) {
	scenario := os.Getenv(tpHelperEnv)
	if scenario == "" {
		return // started by TestTensorParallelMPI under mpirun only
	}
	root, err := testmodel.Root()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chdir(root); err != nil {
		t.Fatal(err)
	}
	timeout := time.Minute
	if scenario == "rank-dies" {
		timeout = 5 * time.Second
	}
	c, err := dist.Init(dist.Options{Timeout: timeout})
	if err != nil {
		t.Fatalf("dist.Init: %v", err)
	}
	switch {
	case strings.HasPrefix(scenario, "dbo"):
		dboScenario(t, c, scenario)
	case strings.HasPrefix(scenario, "experts"):
		epScenario(t, c, scenario)
	case c.Rank() > 0 && scenario == "rank-dies":
		dieAfterFirstStep(t, c)
	case c.Rank() > 0:
		if err := Follow(tpConfig(c), c); err != nil {
			t.Fatalf("rank %d: %v", c.Rank(), err)
		}
		fmt.Printf("rank %d: FOLLOW OK\n", c.Rank())
	case scenario == "rank-dies":
		cfg := tpConfig(c)
		cfg.TPStepTimeout = timeout
		_, err := generateTP(cfg)
		if err == nil {
			t.Fatal("rank 0: generation succeeded without rank 1")
		}
		fmt.Printf("rank 0: failed as expected: %v\n", err)
		os.Exit(0) // the communicator is broken: no Finalize
	default:
		compareTP(t, c)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
}

var tpPrompts = [][]int32{{1}, {1, 403, 407, 261}, {1, 320, 281, 300, 262, 409, 312}}

// generateTP runs the prompts greedily (32 tokens, top-5 logprobs).
func generateTP(cfg Config) ([]RequestOutput, error) {
	e, err := New(cfg)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	p := GreedyParams(32)
	p.ReturnLogprobs, p.Logprobs = true, 5
	p.IgnoreEOS = true
	outs, err := e.Generate(ctx, tpPrompts, p)
	cancel()
	return outs, errors.Join(err, e.Close())
}

// compareTP is rank 0: TP=2 (with rank 1 following) against TP=1 in this
// process, same tokens, logprobs within tpLogprobBound.
func compareTP(t *testing.T, c dist.Comm) {
	two, err := generateTP(tpConfig(c))
	if err != nil {
		t.Fatalf("rank 0: TP=2: %v", err)
	}
	one, err := generateTP(tpConfig(nil))
	if err != nil {
		t.Fatalf("rank 0: TP=1: %v", err)
	}
	worst, n := 0.0, 0
	eachTokenPair(t, one, two, "TP=1", "TP=2 tokens", func(_, _ int, a, b Logprob) {
		worst = math.Max(worst, math.Abs(float64(a.Logprob-b.Logprob)))
		for k, top := range a.Top {
			if other := b.Top[k]; other.ID == top.ID {
				worst = math.Max(worst, math.Abs(float64(top.Logprob-other.Logprob)))
			}
		}
		n++
	})
	if worst > tpLogprobBound {
		t.Fatalf("rank 0: logprobs differ by up to %.3g, bound %g", worst, tpLogprobBound)
	}
	fmt.Printf("rank 0: TP OK: %d prompts, %d greedy tokens equal to TP=1; largest |logprob difference| %.3g\n", len(one), n, worst)
}

// eachTokenPair fails unless every output of got has the tokens of want's
// (the failure names them gotName and wantName) and calls f with each
// generated token's logprobs, prompt i's token j, in want and in got.
func eachTokenPair(t *testing.T, want, got []RequestOutput, wantName, gotName string, f func(i, j int, a, b Logprob)) {
	t.Helper()
	for i := range want {
		a, b := want[i].Outputs[0], got[i].Outputs[0]
		if fmt.Sprint(a.TokenIDs) != fmt.Sprint(b.TokenIDs) {
			t.Fatalf("rank 0: prompt %d: %s %v, %s %v", i, gotName, b.TokenIDs, wantName, a.TokenIDs)
		}
		for j := range a.Logprobs {
			f(i, j, a.Logprobs[j], b.Logprobs[j])
		}
	}
}

// dieAfterFirstStep is a rank that receives the cache layout and the first
// step, then exits without a word (as a crashed rank would) instead of
// running it: rank 0 is left waiting in the step's first all-reduce.
func dieAfterFirstStep(t *testing.T, c dist.Comm) {
	var msg []byte
	for range 2 {
		var err error
		if msg, err = c.Broadcast(msg); err != nil {
			t.Fatalf("rank %d: %v", c.Rank(), err)
		}
	}
	fmt.Printf("rank %d: exiting without a word\n", c.Rank())
	os.Exit(3)
}
