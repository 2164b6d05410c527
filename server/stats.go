package server

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"pagoda/engine"
)

// Poll periods of the stats loop: fast while the engine works, so that
// almost every step is seen on its own; slow when idle.
const (
	busyPoll = 2 * time.Millisecond
	idlePoll = 50 * time.Millisecond
)

// statsLoop samples engine.Stats, which the engine publishes after every
// step. It observes vllm:iteration_tokens_total (prompt + generated tokens
// per step) and logs vLLM's periodic line. When several steps passed
// between two samples, each is observed with their mean token count: the
// engine exposes no per-step hook, only cumulative counters.
type statsLoop struct {
	e        *engine.Engine
	iter     prometheus.Observer
	log      *log.Logger
	interval time.Duration
}

func (l *statsLoop) run(ctx context.Context) {
	prev := l.e.Stats()
	logged, lastLog := prev, time.Now()
	t := time.NewTimer(idlePoll)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		cur := l.e.Stats()
		observeSteps(l.iter, prev, cur)
		prev = cur
		if now := time.Now(); now.Sub(lastLog) >= l.interval {
			if active(logged, cur) {
				l.log.Print(statsLine(logged, cur, now.Sub(lastLog)))
			}
			logged, lastLog = cur, now
		}
		if cur.Running+cur.Waiting+cur.Swapped > 0 {
			t.Reset(busyPoll)
		} else {
			t.Reset(idlePoll)
		}
	}
}

// observeSteps records the steps between two snapshots.
func observeSteps(h prometheus.Observer, prev, cur engine.Stats) {
	steps := cur.Steps - prev.Steps
	if steps <= 0 {
		return
	}
	tokens := (cur.PromptTokens - prev.PromptTokens) + (cur.GenerationTokens - prev.GenerationTokens)
	mean := float64(tokens) / float64(steps)
	for range steps {
		h.Observe(mean)
	}
}

// active reports whether the interval had work worth a log line.
func active(prev, cur engine.Stats) bool {
	return cur.Steps != prev.Steps || cur.Running+cur.Waiting+cur.Swapped > 0
}

// statsLine is vLLM's periodic engine log line over the interval d.
func statsLine(prev, cur engine.Stats, d time.Duration) string {
	sec := d.Seconds()
	hitRate := cur.Prefix.HitRate()
	if q := cur.Prefix.QueryTokens - prev.Prefix.QueryTokens; q > 0 {
		hitRate = float64(cur.Prefix.HitTokens-prev.Prefix.HitTokens) / float64(q)
	}
	return fmt.Sprintf("INFO Avg prompt throughput: %.1f tokens/s, Avg generation throughput: %.1f tokens/s, "+
		"Running: %d reqs, Waiting: %d reqs, Swapped: %d reqs, KV cache usage: %.1f%%, Prefix cache hit rate: %.1f%%",
		float64(cur.PromptTokens-prev.PromptTokens)/sec, float64(cur.GenerationTokens-prev.GenerationTokens)/sec,
		cur.Running, cur.Waiting, cur.Swapped, 100*cur.KVUsage, 100*hitRate)
}
