package bench

import (
	"context"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"strings"
	"sync"
	"time"
)

// Config is how a benchmark sends its requests.
type Config struct {
	Client *Client
	// RequestRate is the mean arrival rate in requests/s: arrivals form a
	// Poisson process (exponential gaps). 0 or +Inf sends every request at
	// once.
	RequestRate float64
	// MaxConcurrency bounds the requests in flight; 0 means no bound.
	MaxConcurrency int
	// Seed fixes the arrival times.
	Seed uint64
	// Progress, when set, receives a progress bar (TTY) or lines.
	Progress    io.Writer
	ProgressTTY bool
}

// Run sends every prompt and returns the results in prompt order and the
// benchmark's duration (first send to last response). It stops early only
// when ctx ends; failed requests are results, not errors.
func Run(ctx context.Context, cfg Config, prompts []Prompt) ([]Result, time.Duration) {
	results := make([]Result, len(prompts))
	var sem chan struct{}
	if cfg.MaxConcurrency > 0 {
		sem = make(chan struct{}, cfg.MaxConcurrency)
	}
	bar := newProgress(cfg.Progress, cfg.ProgressTTY, len(prompts))
	gaps := ArrivalGaps(len(prompts), cfg.RequestRate, cfg.Seed)
	var wg sync.WaitGroup
	start := time.Now()
	for i, p := range prompts {
		if !sleep(ctx, gaps[i]) {
			for j := i; j < len(prompts); j++ {
				results[j].Error = "not sent: " + ctx.Err().Error()
			}
			break
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if sem != nil {
				select {
				case sem <- struct{}{}:
					defer func() { <-sem }()
				case <-ctx.Done():
					results[i] = Result{Error: ctx.Err().Error(), Start: time.Now()}
					bar.add(false)
					return
				}
			}
			results[i] = cfg.Client.Send(ctx, p)
			bar.add(results[i].Success)
		}()
	}
	wg.Wait()
	d := time.Since(start)
	bar.finish()
	return results, d
}

// ArrivalGaps returns the wait before each of n requests: none before the
// first, then exponential gaps of mean 1/rate (a Poisson process), or none
// at all for rate 0 or +Inf. The seed fixes them.
func ArrivalGaps(n int, rate float64, seed uint64) []time.Duration {
	gaps := make([]time.Duration, n)
	if rate <= 0 || math.IsInf(rate, 1) {
		return gaps
	}
	r := rand.New(rand.NewPCG(seed, 0x72617465)) // "rate"
	for i := 1; i < n; i++ {
		gaps[i] = time.Duration(r.ExpFloat64() / rate * float64(time.Second))
	}
	return gaps
}

// sleep waits d; false when ctx ended first.
func sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// progress shows completed requests: a bar redrawn in place on a terminal,
// otherwise a line at every 10%.
type progress struct {
	mu          sync.Mutex
	w           io.Writer
	tty         bool
	total, done int
	failed      int
	start       time.Time
}

func newProgress(w io.Writer, tty bool, total int) *progress {
	return &progress{w: w, tty: tty, total: total, start: time.Now()}
}

func (p *progress) add(ok bool) {
	if p.w == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.done++
	if !ok {
		p.failed++
	}
	switch {
	case p.tty:
		const width = 40
		n := width * p.done / p.total
		fmt.Fprintf(p.w, "\r[%-*s] %d/%d  %.1fs  failed %d", width, strings.Repeat("#", n), p.done, p.total,
			time.Since(p.start).Seconds(), p.failed)
	case p.done*10/p.total != (p.done-1)*10/p.total || p.done == p.total:
		fmt.Fprintf(p.w, "%d/%d requests done (%d failed), %.1fs\n", p.done, p.total, p.failed, time.Since(p.start).Seconds())
	}
}

func (p *progress) finish() {
	if p.w != nil && p.tty {
		fmt.Fprintln(p.w)
	}
}
