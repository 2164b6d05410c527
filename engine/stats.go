package engine

import (
	"slices"
	"time"

	"pagoda/kvcache"
	"pagoda/runner"
	"pagoda/sched"
)

// StepInfo describes one executed step.
type StepInfo struct {
	Seqs     int           // sequences scheduled
	Tokens   int           // tokens computed (prompt chunks and decode tokens)
	Duration time.Duration // schedule + execute + process
	// Forward is the part of Duration spent in the model's forward pass;
	// Duration − Forward is the engine's and runner's own per-step work
	// (scheduling, batch building, plan lookup, sampling, bookkeeping).
	Forward time.Duration
	// Compute, Comm and Wait split the step's tensor-parallel work (see
	// runner.Stats): Compute is Forward outside communication calls; Comm
	// the time inside nonblocking communication calls (broadcasting the
	// step, starting all-reduces, driving them between kernels); Wait the
	// time blocked on an all-reduce (a slower peer, or data still on the
	// link: the communication computation did not hide). One process:
	// Compute = Forward, Comm = Wait = 0.
	Compute, Comm, Wait time.Duration
	// AllReduces counts the all-reduces of the forward pass.
	AllReduces int
	// MicroBatches is 2 when the step ran as two micro-batches (dual-batch
	// overlap, Step.Split), else 1.
	MicroBatches int
	// PlanTokens are the query tokens of the bucket whose plan ran the step
	// (0: eager, or no bucket fit); PlanTokens − Tokens is its padding,
	// which is never computed.
	PlanTokens int
	// Tiles are the step's real attention query tiles and PlanTiles those
	// the attention was laid out for (the plan's worst case; Tiles when
	// eager): PlanTiles − Tiles tasks per head and layer returned at once.
	Tiles, PlanTiles int
	// Masks is the number of grammar token masks computed for the step's
	// constrained draws (structured outputs), MaskTime their total time and
	// MaskMax the slowest one.
	Masks             int
	MaskTime, MaskMax time.Duration
}

// OnStep sets a function the engine calls after every step, from the
// goroutine that runs the step. It must be fast and must not call back into
// the engine. Set it before Start.
func (e *Engine) OnStep(f func(StepInfo)) { e.onStep = f }

// publish makes the step's statistics visible: the stats snapshot, then
// the OnStep hook.
// bcast is the time rank 0 spent broadcasting the step.
func (e *Engine) publish(out *sched.Output, st runner.Stats, bcast time.Duration, start time.Time) {
	e.publishStats()
	if e.onStep == nil || len(out.Seqs) == 0 {
		return
	}
	e.onStep(StepInfo{Seqs: len(out.Seqs), Tokens: out.NumBatchedTokens, Duration: time.Since(start),
		Forward: st.Forward, Compute: st.Compute, Comm: st.Comm + bcast, Wait: st.Wait, AllReduces: st.AllReduces,
		MicroBatches: st.MicroBatches, PlanTokens: st.PlanTokens, Tiles: st.Tiles, PlanTiles: st.PlanTiles,
		Masks: e.masks.n, MaskTime: e.masks.total, MaskMax: e.masks.max})
}

// Stats are the engine's gauges and counters, published after every step.
type Stats struct {
	Running, Waiting, Swapped int
	KVUsage                   float64 // fraction of device blocks in use
	NumBlocks, NumHostBlocks  int
	Prefix                    kvcache.Stats
	Preemptions, SwapOuts     int64
	PromptTokens              int64 // prompt tokens of the requests that produced a first token (cached ones included)
	GenerationTokens          int64
	Steps                     int64
	LastStep                  time.Time
	Spec                      SpecStats
}

// SpecStats count speculative decoding's work (vLLM's spec_decode
// metrics): drafts verified, tokens proposed, tokens accepted, and the
// accepted ones by their position in the draft.
type SpecStats struct {
	Drafts, DraftTokens, Accepted int64
	AcceptedPerPos                []int64
}

// Stats returns the latest published statistics (safe from any goroutine).
func (e *Engine) Stats() Stats { return *e.snap.Load() }

func (e *Engine) publishStats() {
	s := e.stats
	s.Running, s.Waiting, s.Swapped = e.sched.NumRunning(), e.sched.NumWaiting()+len(e.fsmWait), e.sched.NumSwapped()
	s.KVUsage = e.blocks.Usage()
	s.NumBlocks, s.NumHostBlocks = e.NumBlocks()
	s.Prefix = e.blocks.Stats()
	s.Preemptions, s.SwapOuts = e.sched.NumPreemptions, e.sched.NumSwapOuts
	s.LastStep = time.Now()
	s.Spec.AcceptedPerPos = slices.Clone(e.stats.Spec.AcceptedPerPos)
	e.snap.Store(&s)
}

// maskTimes accumulates the time spent computing grammar masks in a step.
type maskTimes struct {
	n          int
	total, max time.Duration
}

func (m *maskTimes) add(d time.Duration) {
	m.n++
	m.total += d
	m.max = max(m.max, d)
}
