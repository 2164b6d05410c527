package server

import (
	"context"
	"fmt"
	"log"
	"time"

	"pagoda/engine"
)

// statsLoop logs vLLM's periodic engine line from engine.Stats, which the
// engine publishes after every step (vllm:iteration_tokens_total is observed
// by the engine's step hook, not here).
type statsLoop struct {
	e        *engine.Engine
	log      *log.Logger
	interval time.Duration
}

func (l *statsLoop) run(ctx context.Context) {
	logged, lastLog := l.e.Stats(), time.Now()
	t := time.NewTicker(l.interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			cur := l.e.Stats()
			if active(logged, cur) {
				l.log.Print(statsLine(logged, cur, now.Sub(lastLog)))
			}
			logged, lastLog = cur, now
		}
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
