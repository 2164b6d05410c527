package engine

import (
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"pagoda/dist"
	"pagoda/model"
	"pagoda/runner"
	"pagoda/sched"
)

// Tensor parallelism (Config.TensorParallel with Size() > 1): rank 0 runs
// the engine (scheduler, block manager, sampling); every rank holds its
// shard of the model and of the KV cache (model.LoadOptions.TensorParallel).
// The protocol over the Comm's Broadcast, all from rank 0:
//
//  1. once, after rank 0 sized the cache: the cache layout (tpHeader), so
//     every rank allocates the same block ids;
//  2. every step, before rank 0 executes it: the step's wire form
//     (sched.Step.AppendBinary, never empty); each rank executes it on its
//     shard, the all-reduces inside the forward pass keeping the ranks in
//     lock-step;
//  3. while idle, every Config.TPHeartbeat: a one-byte heartbeat, after
//     which every rank takes part in a barrier: rank 0 learns that every
//     rank still answers (a broadcast from rank 0 can complete without the
//     receivers), and the other ranks' wait for the next step does not time
//     out while rank 0 has nothing to run;
//  4. at Close: an empty message, which ends the other ranks' Follow.
//
// Every wait on the other ranks is bounded (dist): during a step by
// Config.TPStepTimeout plus TPTimeoutPerToken per token of the step (every
// rank sets it from the step it runs), between steps by the same base plus
// the heartbeat period. A rank that hangs (stopped, swapping, deadlocked) or
// dies makes rank 0's next broadcast, all-reduce or heartbeat fail: the
// engine marks itself failed (failure.go), its requests end with
// ErrEngineFailed and the process exits non-zero, ending the job.

// Defaults of the tensor-parallel timeouts.
const (
	// DefaultTPStepTimeout is Config.TPStepTimeout when unset.
	DefaultTPStepTimeout = 30 * time.Second
	// TPTimeoutPerToken is added to the step timeout per token of the step:
	// a CPU rank computes its share of a token in well under a millisecond
	// on the models pagoda runs, so an 8192-token prefill chunk waits up to
	// 30 s + 82 s.
	TPTimeoutPerToken = 10 * time.Millisecond
	// DefaultTPHeartbeat is Config.TPHeartbeat when unset.
	DefaultTPHeartbeat = 5 * time.Second
)

func (c Config) tpStepTimeout(tokens int) time.Duration {
	base := c.TPStepTimeout
	if base <= 0 {
		base = DefaultTPStepTimeout
	}
	return base + time.Duration(tokens)*TPTimeoutPerToken
}

func (c Config) tpHeartbeat() time.Duration {
	if c.TPHeartbeat <= 0 {
		return DefaultTPHeartbeat
	}
	return c.TPHeartbeat
}

// setTimeout bounds the comm's next waits, when it can be bounded.
func setTimeout(c dist.Comm, d time.Duration) {
	if ts, ok := c.(dist.TimeoutSetter); ok {
		ts.SetTimeout(d)
	}
}

// pingRanks sends the heartbeat and waits for every rank at the barrier. A
// failure (a rank that does not answer within the step timeout) fails the
// engine.
func (e *Engine) pingRanks() {
	c := e.cfg.TensorParallel
	setTimeout(c, e.cfg.tpStepTimeout(0))
	_, err := c.Broadcast([]byte{0})
	if err == nil {
		err = c.Barrier()
	}
	if err != nil {
		e.Fail(fmt.Errorf("tensor parallel: a rank did not answer the heartbeat: %w", err))
	}
}

// tpHeaderLen is the size of the cache layout message.
const tpHeaderLen = 4 * 4

// tpHeader encodes the cache layout every rank allocates.
func tpHeader(numBlocks, numHost, blockSize int, t model.KVType) []byte {
	b := make([]byte, 0, tpHeaderLen)
	for _, v := range []int{numBlocks, numHost, blockSize, int(t)} {
		b = binary.LittleEndian.AppendUint32(b, uint32(v))
	}
	return b
}

// tpRanks returns the tensor-parallel size of cfg (1 without a Comm).
func (c Config) tpRanks() int {
	if c.TensorParallel == nil {
		return 1
	}
	return c.TensorParallel.Size()
}

// sendLayout broadcasts the cache layout to the other ranks (rank 0).
func (e *Engine) sendLayout(numBlocks, numHost int) error {
	if e.cfg.tpRanks() == 1 {
		return nil
	}
	_, err := e.cfg.TensorParallel.Broadcast(tpHeader(numBlocks, numHost, e.cfg.BlockSize, e.cfg.KVCacheType))
	if err != nil {
		return fmt.Errorf("tensor parallel: sending the cache layout: %w", err)
	}
	return nil
}

// broadcastStep sends the step to the other ranks before rank 0 runs it
// and returns the time the broadcast took (0 with one rank).
func (e *Engine) broadcastStep(s *sched.Step) (time.Duration, error) {
	if e.cfg.tpRanks() == 1 {
		return 0, nil
	}
	start := time.Now()
	var err error
	if e.wire, err = s.AppendBinary(e.wire[:0]); err != nil {
		return 0, err
	}
	setTimeout(e.cfg.TensorParallel, e.cfg.tpStepTimeout(s.NumTokens()))
	if _, err := e.cfg.TensorParallel.Broadcast(e.wire); err != nil {
		return 0, fmt.Errorf("tensor parallel: broadcasting the step: %w", err)
	}
	return time.Since(start), nil
}

// stopRanks tells the other ranks to return from Follow.
func (e *Engine) stopRanks() error {
	if e.cfg.tpRanks() == 1 {
		return nil
	}
	if _, err := e.cfg.TensorParallel.Broadcast(nil); err != nil {
		return fmt.Errorf("tensor parallel: stopping the other ranks: %w", err)
	}
	return nil
}

// Follow is the body of a rank other than 0: it loads its shard of
// cfg.Model, receives the cache layout, then executes every step rank 0
// broadcasts until the shutdown message (nil error) or a failure (the
// error). cfg must be rank 0's configuration (the same flags).
func Follow(cfg Config, comm dist.Comm) error {
	if comm == nil || comm.Rank() == 0 {
		return errors.New("engine: Follow runs on ranks other than 0")
	}
	cfg.TensorParallel = comm
	m, _, err := model.Load(cfg.Model, cfg.loadOptions())
	if err != nil {
		return err
	}
	defer m.Close()
	msg, err := comm.Broadcast(make([]byte, tpHeaderLen))
	if err != nil {
		return fmt.Errorf("tensor parallel rank %d: receiving the cache layout: %w", comm.Rank(), err)
	}
	if len(msg) == 0 {
		return fmt.Errorf("tensor parallel rank %d: rank 0 failed to start the engine (its error says why)", comm.Rank())
	}
	if len(msg) != tpHeaderLen {
		return fmt.Errorf("tensor parallel rank %d: cache layout of %d bytes, want %d", comm.Rank(), len(msg), tpHeaderLen)
	}
	var h [4]int
	for i := range h {
		h[i] = int(binary.LittleEndian.Uint32(msg[4*i:]))
	}
	ce, err := runner.NewCacheEngine(m, h[0], h[1], h[2], model.KVType(h[3]))
	if err != nil {
		return err
	}
	r := runner.New(m, ce, runner.Options{})
	var s sched.Step
	for {
		setTimeout(comm, cfg.tpStepTimeout(0)+cfg.tpHeartbeat()) // rank 0 sends a step or a heartbeat by then
		if msg, err = comm.Broadcast(msg); err != nil {
			return fmt.Errorf("tensor parallel rank %d: receiving a step: %w", comm.Rank(), err)
		}
		switch len(msg) {
		case 0:
			return nil
		case 1: // heartbeat
			if err := comm.Barrier(); err != nil {
				return fmt.Errorf("tensor parallel rank %d: answering the heartbeat: %w", comm.Rank(), err)
			}
			continue
		}
		if err := s.UnmarshalBinary(msg); err != nil {
			return fmt.Errorf("tensor parallel rank %d: %w", comm.Rank(), err)
		}
		setTimeout(comm, cfg.tpStepTimeout(s.NumTokens()))
		if _, err := r.Execute(&s); err != nil {
			return fmt.Errorf("tensor parallel rank %d: %w", comm.Rank(), err)
		}
	}
}
