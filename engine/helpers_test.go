package engine

import (
	"context"
	"encoding/json"
	"os"
	_ "pagoda/model/archs" // registers every architecture
	"strings"
	"sync"
	"testing"
	"time"

	"pagoda/model"
)

// heavyTests holds the names of the top-level tests marked heavy.
var heavyTests sync.Map

// heavy marks t as one of the package's long tests: it runs in parallel
// with the other heavy ones (t.Parallel, at most GOMAXPROCS at once), and
// every engine it builds with newTestEngine runs one thread, so that two of
// them share a 2-core machine without oversubscribing the kernels' pools.
// Results do not depend on the thread count (the kernels' tests check that
// bit for bit).
func heavy(t *testing.T) {
	heavyTests.Store(t.Name(), true)
	t.Parallel()
}

// newTestEngine builds an engine over path with cfg adjusted by mutate, and
// checks at cleanup that it leaked no block.
func newTestEngine(t testing.TB, path string, mutate func(*Config)) *Engine {
	t.Helper()
	cfg := DefaultConfig(path)
	cfg.MaxModelLen = 512
	cfg.KVCacheType = model.KVF32
	cfg.Threads = 2
	cfg.ExactArithmetic = true // the references are llama.cpp's
	if mutate != nil {
		mutate(&cfg)
	}
	if _, ok := heavyTests.Load(strings.SplitN(t.Name(), "/", 2)[0]); ok {
		cfg.Threads = 1
	}
	e, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if !e.started.Load() {
			checkNoLeaks(t, e)
		}
		e.Close()
	})
	return e
}

// checkNoLeaks verifies, with no request left, that every block is free and
// the block manager's invariants hold. Only the owner of the state may call it.
func checkNoLeaks(t testing.TB, e *Engine) {
	t.Helper()
	if len(e.reqs) != 0 || e.sched.HasUnfinished() {
		t.Errorf("%d requests still live", len(e.reqs))
	}
	if err := e.blocks.CheckInvariants(); err != nil {
		t.Error(err)
	}
	dev, host := e.blocks.Device(), e.blocks.Host()
	if dev.NumFree() != dev.NumBlocks() || host.NumFree() != host.NumBlocks() {
		t.Errorf("leaked blocks: device %d/%d free, host %d/%d free", dev.NumFree(), dev.NumBlocks(), host.NumFree(), host.NumBlocks())
	}
}

// runAll adds the requests and steps the engine synchronously until every
// one finishes; it returns the collected outputs in order.
func runAll(t testing.TB, e *Engine, reqs []Request) []RequestOutput {
	t.Helper()
	streams := make([]*Stream, len(reqs))
	for i, r := range reqs {
		s, err := e.AddRequest(r)
		if err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		streams[i] = s
	}
	for steps := 0; e.HasUnfinished(); steps++ {
		if steps > 100000 {
			t.Fatal("engine did not finish")
		}
		if err := e.Step(); err != nil {
			t.Fatal(err)
		}
	}
	outs := make([]RequestOutput, len(reqs))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for i, s := range streams {
		o, err := s.Collect(ctx)
		if err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		outs[i] = o
	}
	checkNoLeaks(t, e)
	return outs
}

type reference struct {
	Cases []struct {
		Prompt           string  `json:"prompt"`
		PromptTokens     []int32 `json:"prompt_tokens"`
		CompletionTokens []int32 `json:"completion_tokens"`
		Steps            []struct {
			ID      int32        `json:"id"`
			Logprob float64      `json:"logprob"`
			Top     [][2]float64 `json:"top"`
		} `json:"steps"`
	} `json:"cases"`
}

func readReference(t testing.TB, path string) reference {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var r reference
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	return r
}
