package engine

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"pagoda/dist"
	"pagoda/internal/testmodel"
	"pagoda/model"
)

// faultComm is rank 0 of a two-rank group whose other rank is simulated:
// the collectives succeed (all-reduces leave x as it is) until the
// broadcast numbered failBroadcast (1-based; 0: never) or any barrier after
// failBarrier barriers (-1: never), which fail as dist does when a rank
// stops answering.
type faultComm struct {
	mu            sync.Mutex
	broadcasts    int
	barriers      int
	failBroadcast int
	failBarrier   int
	timeouts      []time.Duration
	broken        error
}

func (c *faultComm) Rank() int { return 0 }
func (c *faultComm) Size() int { return 2 }

func (c *faultComm) Broadcast(msg []byte) ([]byte, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.broadcasts++
	if c.broken == nil && c.broadcasts == c.failBroadcast {
		c.broken = errors.New("dist: timed out waiting for the other ranks: MPI_Ibcast after 30s")
	}
	return msg, c.broken
}

func (c *faultComm) Barrier() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.barriers++
	if c.broken == nil && c.failBarrier >= 0 && c.barriers > c.failBarrier {
		c.broken = errors.New("dist: timed out waiting for the other ranks: MPI_Ibarrier after 30s")
	}
	return c.broken
}

func (c *faultComm) AllReduce([]float32) error { return c.err() }
func (c *faultComm) IAllReduce([]float32) (dist.Request, error) {
	return doneReq{}, c.err()
}
func (c *faultComm) Progress() error { return c.err() }
func (c *faultComm) Close() error    { return nil }
func (c *faultComm) err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.broken
}
func (c *faultComm) SetTimeout(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.timeouts = append(c.timeouts, d)
}

type doneReq struct{}

func (doneReq) Wait() error         { return nil }
func (doneReq) Test() (bool, error) { return true, nil }

func faultEngine(t *testing.T, c *faultComm, heartbeat time.Duration) *Engine {
	t.Helper()
	cfg := DefaultConfig(testmodel.Stories(t))
	cfg.MaxModelLen, cfg.KVCacheType, cfg.Threads, cfg.EnforceEager = 256, model.KVF32, 1, true
	cfg.NumBlocksOverride, cfg.TensorParallel, cfg.TPHeartbeat = 64, c, heartbeat
	e, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	e.Start(ctx)
	t.Cleanup(func() { cancel(); e.Close() })
	return e
}

// A tensor-parallel step whose broadcast times out fails the engine: the
// request in flight ends with ErrEngineFailed (and the cause), Dead closes,
// new requests are refused with the failure; the step's timeout was scaled
// with its size.
func TestTPStepTimeoutFailsEngine(t *testing.T) {
	c := &faultComm{failBroadcast: 3, failBarrier: -1} // 1: the cache layout, 2: the first step
	e := faultEngine(t, c, time.Hour)
	prompt := []int32{1, 403, 407, 261, 300}
	s, err := e.AddRequest(Request{ID: "a", PromptTokens: prompt, Params: GreedyParams(8)})
	if err != nil {
		t.Fatal(err)
	}
	out, err := s.Collect(context.Background())
	if err == nil {
		err = out.Err
	}
	if !errors.Is(err, ErrEngineFailed) || !strings.Contains(err.Error(), "timed out") {
		t.Fatalf("request: %v; want ErrEngineFailed with the timeout", err)
	}
	select {
	case <-e.Dead():
	case <-time.After(10 * time.Second):
		t.Fatal("Dead not closed")
	}
	if err := e.Failed(); !errors.Is(err, ErrEngineFailed) {
		t.Fatalf("Failed() = %v", err)
	}
	if _, err := e.AddRequest(Request{ID: "b", PromptTokens: prompt, Params: GreedyParams(8)}); !errors.Is(err, ErrEngineFailed) {
		t.Fatalf("a request after the failure: %v", err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.timeouts) < 2 || c.timeouts[0] != DefaultTPStepTimeout+time.Duration(len(prompt))*TPTimeoutPerToken ||
		c.timeouts[1] != DefaultTPStepTimeout+TPTimeoutPerToken {
		t.Fatalf("step timeouts %v: want %v + %v per token of the step (prefill %d, then decode 1)", c.timeouts,
			DefaultTPStepTimeout, TPTimeoutPerToken, len(prompt))
	}
}

// An idle engine whose other rank stops answering the heartbeat fails too.
func TestTPHeartbeatFailsIdleEngine(t *testing.T) {
	c := &faultComm{failBarrier: 1}
	e := faultEngine(t, c, 20*time.Millisecond)
	select {
	case <-e.Dead():
	case <-time.After(20 * time.Second):
		t.Fatal("Dead not closed while the heartbeat fails")
	}
	if err := e.Failed(); !errors.Is(err, ErrEngineFailed) || !strings.Contains(err.Error(), "heartbeat") {
		t.Fatalf("Failed() = %v", err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.barriers != 2 || c.broadcasts != 3 { // the layout, then two heartbeats
		t.Fatalf("%d broadcasts, %d barriers", c.broadcasts, c.barriers)
	}
}
