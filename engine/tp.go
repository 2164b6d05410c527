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
//  3. while idle, every tpKeepalive: a one-byte keepalive, so that the
//     other ranks' wait for the next step does not time out (dist bounds
//     every wait) while rank 0 has nothing to run;
//  4. at Close: an empty message, which ends the other ranks' Follow.
//
// A rank that dies makes rank 0's next broadcast or all-reduce fail (dist
// times out instead of hanging): the step fails its requests with the error.

// tpKeepalive is how often an idle rank 0 tells the other ranks it is
// alive; well under dist.DefaultTimeout.
const tpKeepalive = 10 * time.Second

// pingRanks sends the keepalive. A failure breaks the Comm: the next step's
// broadcast reports it to the requests.
func (e *Engine) pingRanks() {
	e.cfg.TensorParallel.Broadcast([]byte{0})
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
		if msg, err = comm.Broadcast(msg); err != nil {
			return fmt.Errorf("tensor parallel rank %d: receiving a step: %w", comm.Rank(), err)
		}
		switch len(msg) {
		case 0:
			return nil
		case 1:
			continue // keepalive
		}
		if err := s.UnmarshalBinary(msg); err != nil {
			return fmt.Errorf("tensor parallel rank %d: %w", comm.Rank(), err)
		}
		if _, err := r.Execute(&s); err != nil {
			return fmt.Errorf("tensor parallel rank %d: %w", comm.Rank(), err)
		}
	}
}
